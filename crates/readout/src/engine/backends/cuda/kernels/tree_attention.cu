// Attention of a whole pass in one launch (Readout, src/engine/attention.rs): every segment's
// queries against its own cached prefix, read in place, and the pass's own keys under the
// segment's additive mask (the tree mask, or the sliding window's), online softmax, grouped-query
// heads. Compiled at run time by NVRTC (no headers).
//
// Tiled: one block per (tile of query vectors of one segment, kv head). A segment's query vectors
// for kv head j are its (token, query head of j's group) pairs, token-major: the group's heads of
// a token sit side by side in a tile and share every key. The block stages its tile's queries in
// shared memory once, then walks the segment's keys (past, then its own) in chunks of 32: the
// chunk's keys and values are copied to shared memory once and used by all the tile's queries.
// Each warp owns QPW query vectors: scores with one key per lane, the online softmax (running
// maximum and sum) by warp shuffles, then the values weighted into per-lane sums (dims lane,
// lane + 32, ...). A chunk that the mask hides from every query of the tile is skipped whole.
//
// table (u64): for each segment g, 6 entries at g*6: offset of its first token in the pass, its
// token count n, its prefix length P, the index of its first past chunk, its number of past
// chunks, and a device pointer to its mask [n, P + n] (f32, contiguous). Then one entry per tile
// (gridDim.x of them): segment << 32 | first query vector of the tile. Then the past chunks, 6
// entries each: pointers to the chunk's keys and values [kvh, len, hd] (rows of hd contiguous
// floats, heads kstride / vstride floats apart), the chunk's first position in the past, its
// length, kstride, vstride. A segment's past is its chunks in order, read where the cache holds
// them (no joined copy).
//
// q [h, S, hd] (already scaled), k and v [kvh, S, hd] (the pass's own), out [S, h, hd].
// blockDim.x = 32 * warps; dynamic shared memory: attention.rs's `shared_bytes`.

#define QPW 8  // query vectors per warp
#define BC 32  // keys per chunk: one per lane
#ifndef MINB
#define MINB 3
#endif
#ifndef UNROLL_PV
#define UNROLL_PV 1
#endif
#ifndef UNROLL_QK
#define UNROLL_QK 1
#endif
constexpr int kUnrollPV = UNROLL_PV, kUnrollQK = UNROLL_QK;
#define NEG_INF __int_as_float(0xff800000)

// ND: head_dim / 32 rounded up (each lane's share of an output row), so 2, 4 or 8.
template <int ND>
__device__ __forceinline__ void tree_attention_tiled(
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    float* __restrict__ out, const unsigned long long* __restrict__ table,
    int n_segs, int S, int h, int kvh, int hd)
{
    const int warps = blockDim.x >> 5;
    const int M = warps * QPW;
    const int wi = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int j = blockIdx.y;
    const int group = h / kvh;
    const unsigned long long tile = table[n_segs * 6 + blockIdx.x];
    const int g = (int)(tile >> 32), q0 = (int)(tile & 0xffffffffull);
    const unsigned long long* seg = table + g * 6;
    const int off = (int)seg[0], n = (int)seg[1], P = (int)seg[2];
    const unsigned long long* chunks = table + n_segs * 6 + gridDim.x + seg[3] * 6;
    const int n_chunks = (int)seg[4];
    const float* mask = (const float*)seg[5];
    const int T = P + n;
    const int nq = n * group;
    const int ldq = hd + 4;  // padded rows: a quarter-warp's 16-byte reads of 8 rows hit distinct banks
    const int hd4 = hd >> 2;

    extern __shared__ float4 smem4[];
    float* Qs = (float*)smem4;     // [M][ldq]
    float* Ks = Qs + M * ldq;      // [BC][ldq]
    float* Vs = Ks + BC * ldq;     // [BC][hd]
    float* Ps = Vs + BC * hd;      // [M][BC]: this chunk's probabilities

    for (int idx = threadIdx.x; idx < M * hd4; idx += blockDim.x) {
        const int qi = idx / hd4, d4 = idx - qi * hd4;
        const int gq = q0 + qi;
        float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
        if (gq < nq) {
            const int row = gq / group, w = gq - row * group;
            val = ((const float4*)(q + ((long long)(j * group + w) * S + off + row) * hd))[d4];
        }
        *(float4*)(Qs + qi * ldq + d4 * 4) = val;
    }

    int mrow[QPW];
    bool valid[QPW];
    float m[QPW], l[QPW];
    float acc[QPW][ND];
#pragma unroll
    for (int i = 0; i < QPW; i++) {
        const int gq = q0 + wi * QPW + i;
        valid[i] = gq < nq;
        mrow[i] = valid[i] ? gq / group : 0;
        m[i] = NEG_INF;
        l[i] = 0.f;
#pragma unroll
        for (int e = 0; e < ND; e++) acc[i][e] = 0.f;
    }
    const float* qw = Qs + wi * QPW * ldq;
    float* pw = Ps + wi * QPW * BC;

    for (int base = 0; base < T; base += BC) {
        const int c = base + lane;
        // The mask of this lane's key for the warp's query vectors, kept in pw until the scores.
        int any = 0;
        __syncwarp();  // the last chunk's pw is read
#pragma unroll
        for (int i = 0; i < QPW; i++) {
            const float mk = (valid[i] && c < T) ? mask[(long long)mrow[i] * T + c] : NEG_INF;
            any |= mk != NEG_INF;
            pw[i * BC + lane] = mk;
        }
        // Also the barrier before this chunk's keys overwrite the last one's (and, the first
        // time, after the queries were staged).
        if (!__syncthreads_or(any)) continue;
        for (int idx = threadIdx.x; idx < BC * hd4; idx += blockDim.x) {
            const int r = idx / hd4, d4 = idx - r * hd4;
            const int cc = base + r;
            float4 kk = make_float4(0.f, 0.f, 0.f, 0.f), vv = kk;
            if (cc < P) {
                // The chunk holding past position cc (chains are a few chunks deep).
                int ci = 0;
                while (ci + 1 < n_chunks && cc >= (int)chunks[(ci + 1) * 6 + 2]) ci++;
                const unsigned long long* ch = chunks + ci * 6;
                const long long r = cc - (long long)ch[2];
                kk = ((const float4*)((const float*)ch[0] + (long long)j * (long long)ch[4] + r * hd))[d4];
                vv = ((const float4*)((const float*)ch[1] + (long long)j * (long long)ch[5] + r * hd))[d4];
            } else if (cc < T) {
                const long long at = ((long long)j * S + off + (cc - P)) * hd;
                kk = ((const float4*)(k + at))[d4];
                vv = ((const float4*)(v + at))[d4];
            }
            *(float4*)(Ks + r * ldq + d4 * 4) = kk;
            *(float4*)(Vs + r * hd + d4 * 4) = vv;
        }
        __syncthreads();

        // Scores of this lane's key against the warp's query vectors.
        float s[QPW];
#pragma unroll
        for (int i = 0; i < QPW; i++) s[i] = 0.f;
        const float* kr = Ks + lane * ldq;
#pragma unroll kUnrollQK
        for (int d = 0; d < hd; d += 4) {
            const float4 k4 = *(const float4*)(kr + d);
#pragma unroll
            for (int i = 0; i < QPW; i++) {
                const float4 q4 = *(const float4*)(qw + i * ldq + d);
                s[i] = fmaf(q4.x, k4.x, s[i]);
                s[i] = fmaf(q4.y, k4.y, s[i]);
                s[i] = fmaf(q4.z, k4.z, s[i]);
                s[i] = fmaf(q4.w, k4.w, s[i]);
            }
        }
        // Online softmax, one query vector at a time over the warp's 32 keys.
        float alpha[QPW];
#pragma unroll
        for (int i = 0; i < QPW; i++) {
            const float mk = pw[i * BC + lane];
            const float si = mk == NEG_INF ? NEG_INF : s[i] + mk;
            float cmax = si;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) cmax = fmaxf(cmax, __shfl_xor_sync(0xffffffffu, cmax, o));
            const float mnew = fmaxf(m[i], cmax);
            float p = 0.f;
            alpha[i] = 1.f;
            if (mnew != NEG_INF) {  // uniform over the warp
                p = si == NEG_INF ? 0.f : expf(si - mnew);
                alpha[i] = m[i] == NEG_INF ? 0.f : expf(m[i] - mnew);
                float psum = p;
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, o);
                l[i] = l[i] * alpha[i] + psum;
                m[i] = mnew;
            }
            pw[i * BC + lane] = p;
        }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < QPW; i++) {
#pragma unroll
            for (int e = 0; e < ND; e++) acc[i][e] *= alpha[i];
        }
        // The values weighted by the probabilities (keys past T were staged as zeros, p = 0).
#pragma unroll kUnrollPV
        for (int cc = 0; cc < BC; cc++) {
            const float* vr = Vs + cc * hd;
            float vv[ND];
#pragma unroll
            for (int e = 0; e < ND; e++) vv[e] = lane + 32 * e < hd ? vr[lane + 32 * e] : 0.f;
#pragma unroll
            for (int i = 0; i < QPW; i++) {
                const float pt = pw[i * BC + cc];
#pragma unroll
                for (int e = 0; e < ND; e++) acc[i][e] = fmaf(pt, vv[e], acc[i][e]);
            }
        }
    }

#pragma unroll
    for (int i = 0; i < QPW; i++) {
        if (!valid[i]) continue;
        const int gq = q0 + wi * QPW + i;
        const int row = gq / group, w = gq - row * group;
        const float inv = 1.f / l[i];
        float* o = out + ((long long)(off + row) * h + j * group + w) * hd;
#pragma unroll
        for (int e = 0; e < ND; e++) {
            const int d = lane + 32 * e;
            if (d < hd) o[d] = acc[i][e] * inv;
        }
    }
}

#define ARGS                                                                                        \
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,          \
        float* __restrict__ out, const unsigned long long* __restrict__ table, int n_segs, int S,  \
        int h, int kvh, int hd
extern "C" __global__ void __launch_bounds__(128, MINB) tree_attention_f32_d64(ARGS) { tree_attention_tiled<2>(q, k, v, out, table, n_segs, S, h, kvh, hd); }
extern "C" __global__ void __launch_bounds__(128, MINB) tree_attention_f32_d128(ARGS) { tree_attention_tiled<4>(q, k, v, out, table, n_segs, S, h, kvh, hd); }
extern "C" __global__ void __launch_bounds__(128, MINB) tree_attention_f32_d256(ARGS) { tree_attention_tiled<8>(q, k, v, out, table, n_segs, S, h, kvh, hd); }
