// Attention of a whole pass in one launch (Readout, src/engine/attention.rs): every segment's
// queries against its own cached prefix, read in place, and the pass's own keys under the
// segment's additive mask (the tree mask, or the sliding window's), online softmax, grouped-query
// heads. One block per (query token, kv head); one warp per query head of that kv head's group.
// Compiled at run time by NVRTC (no headers).
//
// table (u64): for each segment g, 6 entries at g*6: offset of its first token in the pass, its
// token count n, its prefix length P, then device pointers to its past keys [kvh, P, hd], past
// values [kvh, P, hd] and mask [n, P + n] (f32, contiguous; the pointers are 0 when P is 0).
// Then S entries: the segment of each token of the pass.
//
// q [h, S, hd] (already scaled), k and v [kvh, S, hd] (the pass's own), out [S, h, hd].

#define MAX_PER_LANE 8 // head_dim up to 256
#define NEG_INF __int_as_float(0xff800000)

extern "C" __global__ void tree_attention_f32(
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    float* __restrict__ out, const unsigned long long* __restrict__ table,
    int n_segs, int S, int h, int kvh, int hd)
{
    const int r = blockIdx.x;            // query token in the pass
    const int j = blockIdx.y;            // kv head
    const int group = h / kvh;
    const int w = threadIdx.x >> 5;      // query head within the group
    const int lane = threadIdx.x & 31;
    if (w >= group) return;
    const int head = j * group + w;
    const int g = (int)table[n_segs * 6 + r];
    const unsigned long long* seg = table + g * 6;
    const int off = (int)seg[0], n = (int)seg[1], P = (int)seg[2];
    const float* pk = (const float*)seg[3];
    const float* pv = (const float*)seg[4];
    const float* mask = (const float*)seg[5];
    const int row = r - off;             // the token's row within its segment
    const int T = P + n;
    const float* mrow = mask + (long long)row * T;

    extern __shared__ float qs[];        // [group][hd]
    float* qh = qs + w * hd;
    for (int d = lane; d < hd; d += 32) qh[d] = q[((long long)head * S + r) * hd + d];
    __syncwarp();

    float acc[MAX_PER_LANE];
#pragma unroll
    for (int i = 0; i < MAX_PER_LANE; i++) acc[i] = 0.f;
    float m = NEG_INF, l = 0.f;

    for (int base = 0; base < T; base += 32) {
        const int c = base + lane;
        float s = NEG_INF;
        if (c < T) {
            const float mk = mrow[c];
            if (mk != NEG_INF) {
                const float* kr = c < P ? pk + ((long long)j * P + c) * hd
                                        : k + ((long long)j * S + off + (c - P)) * hd;
                float dot = 0.f;
                for (int d = 0; d < hd; d += 4) {
                    const float4 kv4 = *(const float4*)(kr + d);
                    dot += qh[d] * kv4.x + qh[d + 1] * kv4.y + qh[d + 2] * kv4.z + qh[d + 3] * kv4.w;
                }
                s = dot + mk;
            }
        }
        float cmax = s;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) cmax = fmaxf(cmax, __shfl_xor_sync(0xffffffffu, cmax, o));
        if (cmax == NEG_INF) continue;  // every key of this stretch is masked (uniform over the warp)
        const float mnew = fmaxf(m, cmax);
        const float alpha = m == NEG_INF ? 0.f : expf(m - mnew);
        const float p = s == NEG_INF ? 0.f : expf(s - mnew);
        float psum = p;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, o);
        l = l * alpha + psum;
#pragma unroll
        for (int i = 0; i < MAX_PER_LANE; i++) acc[i] *= alpha;
        m = mnew;
        const int last = min(32, T - base);
        for (int t = 0; t < last; t++) {
            const float pt = __shfl_sync(0xffffffffu, p, t);
            if (pt == 0.f) continue;      // uniform over the warp
            const int ct = base + t;
            const float* vr = ct < P ? pv + ((long long)j * P + ct) * hd
                                     : v + ((long long)j * S + off + (ct - P)) * hd;
#pragma unroll
            for (int i = 0; i < MAX_PER_LANE; i++) {
                const int d = lane + 32 * i;
                if (d < hd) acc[i] += pt * vr[d];
            }
        }
    }
    const float inv = 1.f / l;
    float* o = out + ((long long)r * h + head) * hd;
#pragma unroll
    for (int i = 0; i < MAX_PER_LANE; i++) {
        const int d = lane + 32 * i;
        if (d < hd) o[d] = acc[i] * inv;
    }
}
