// Attention of a whole pass in one launch, its two products on the tensor cores (`--precision
// tf32|bf16`): the same table, segments, chunks and masks as tree_attention.cu (its header says
// how they are laid out), q·k and p·v as TF32 mma.sync m16n8k8 with f32 sums, the online softmax
// in f32. Compiled by NVRTC for compute_80 (mma.sync's TF32 form needs it) apart from the f32
// kernel, so that a GPU without it keeps that one.
//
// A block is 4 warps and takes 64 query vectors of one segment and kv head (token-major, a GQA
// group's heads side by side); a warp owns 16 of them, one m16 tile. For each chunk of 32 keys
// (staged in shared memory once, as TF32, for the whole block): the warp's scores S [16 × 32] =
// Q [16 × hd] · Kᵀ (4 n-tiles of 8 keys, hd / 8 k-steps), the mask added, the running maximum
// and sum updated (each row's 8 scores of a lane, then the 4 lanes of its group by shuffles),
// the probabilities written to shared memory as TF32 and read back as the A operand of
// O [16 × hd] += P [16 × 32] · V [32 × hd] (hd / 8 n-tiles, 4 k-steps). A lane holds, of every
// 16 × 8 tile, rows gi and gi + 8 (gi = lane / 4), columns 2·ti and 2·ti + 1 (ti = lane % 4).

#define TC_WARPS 4
#define TC_ROWS 16  // query vectors per warp: one m16 tile
#define BC 32       // keys per chunk
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ unsigned tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// d += a · b for one 16 × 8 × 8 tile (a: rows gi, gi + 8 × columns ti, ti + 4; b: rows ti, ti + 4
// × column gi).
__device__ __forceinline__ void mma_tf32(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1)
{
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint4 tf32x4(float4 v)
{
    return make_uint4(tf32(v.x), tf32(v.y), tf32(v.z), tf32(v.w));
}

// Copy a chunk's BC rows of HD floats (row r read from rows[r], zeros where it is null) into
// shared memory as TF32, rows ld apart: each of the block's threads loads its share into registers
// first, then converts and stores it.
template <int HD>
__device__ __forceinline__ void stage_rows(const float* const* rows, unsigned* dst, int ld)
{
    constexpr int HD4 = HD / 4;
    constexpr int STAGE = BC * HD4 / (TC_WARPS * 32);
    float4 val[STAGE];
#pragma unroll
    for (int it = 0; it < STAGE; it++) {
        const int idx = threadIdx.x + it * TC_WARPS * 32;
        const int r = idx / HD4, d4 = idx - r * HD4;
        const float* src = rows[r];
        val[it] = src != nullptr ? ((const float4*)src)[d4] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int it = 0; it < STAGE; it++) {
        const int idx = threadIdx.x + it * TC_WARPS * 32;
        const int r = idx / HD4, d4 = idx - r * HD4;
        *(uint4*)(dst + r * ld + d4 * 4) = tf32x4(val[it]);
    }
}

template <int HD>
__device__ __forceinline__ void tree_attention_tc(
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    float* __restrict__ out, const unsigned long long* __restrict__ table,
    int n_segs, int S, int h, int kvh)
{
    constexpr int NT = HD / 8;     // 8-wide tiles of a head's dims
    constexpr int HD4 = HD / 4;
    constexpr int LDQ = HD + 4;    // padded rows: a fragment's 32 reads hit 32 banks
    constexpr int LDV = HD + 8;
    constexpr int LDP = BC + 4;
    constexpr int M = TC_WARPS * TC_ROWS;
    const int wi = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int gi = lane >> 2, ti = lane & 3;
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

    extern __shared__ uint4 smem_tc[];
    unsigned* Qs = (unsigned*)smem_tc;       // [M][LDQ]
    unsigned* Ks = Qs + M * LDQ;             // [BC][LDQ]
    unsigned* Vs = Ks + BC * LDQ;            // [BC][LDV]
    unsigned* Ps = Vs + BC * LDV + wi * TC_ROWS * LDP;  // this warp's [16][LDP]
    // Where each key row of the chunk is read from (its past chunk's or the pass's own), found
    // once a row by the chunk's first 32 threads instead of once a value.
    __shared__ const float* krow[BC];
    __shared__ const float* vrow[BC];

    for (int idx = threadIdx.x; idx < M * HD4; idx += blockDim.x) {
        const int qi = idx / HD4, d4 = idx - qi * HD4;
        const int gq = q0 + qi;
        float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
        if (gq < nq) {
            const int row = gq / group, w = gq - row * group;
            val = ((const float4*)(q + ((long long)(j * group + w) * S + off + row) * HD))[d4];
        }
        *(uint4*)(Qs + qi * LDQ + d4 * 4) = tf32x4(val);
    }

    // This lane's two rows of the warp's tile (rh = 0: gi, rh = 1: gi + 8).
    bool valid[2];
    int mrow[2];
    float m[2], l[2];
#pragma unroll
    for (int rh = 0; rh < 2; rh++) {
        const int gq = q0 + wi * TC_ROWS + gi + 8 * rh;
        valid[rh] = gq < nq;
        mrow[rh] = valid[rh] ? gq / group : 0;
        m[rh] = NEG_INF;
        l[rh] = 0.f;
    }
    float acc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
    // The warp's queries as the A operand of every k-step, kept in registers for all chunks.
    unsigned qf[HD / 8][4];
    __syncthreads();
    {
        const unsigned* qa = Qs + (wi * TC_ROWS + gi) * LDQ + ti;
#pragma unroll
        for (int kk = 0; kk < HD / 8; kk++) {
            qf[kk][0] = qa[kk * 8];
            qf[kk][1] = qa[8 * LDQ + kk * 8];
            qf[kk][2] = qa[kk * 8 + 4];
            qf[kk][3] = qa[8 * LDQ + kk * 8 + 4];
        }
    }

    for (int base = 0; base < T; base += BC) {
        // The mask of this lane's scores: [nt][2 · rh + e] is row rh's key base + 8 nt + 2 ti + e.
        float mk[4][4];
        int any = 0;
#pragma unroll
        for (int nt = 0; nt < 4; nt++) {
#pragma unroll
            for (int rh = 0; rh < 2; rh++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int c = base + nt * 8 + 2 * ti + e;
                    const float x = (valid[rh] && c < T) ? mask[(long long)mrow[rh] * T + c] : NEG_INF;
                    any |= x != NEG_INF;
                    mk[nt][2 * rh + e] = x;
                }
            }
        }
        // Also the barrier before this chunk's keys overwrite the last one's (and, the first
        // time, after the queries were staged).
        if (!__syncthreads_or(any)) continue;
        if (threadIdx.x < BC) {
            const int cc = base + threadIdx.x;
            const float *kr = nullptr, *vr = nullptr;
            if (cc < P) {
                int ci = 0;
                while (ci + 1 < n_chunks && cc >= (int)chunks[(ci + 1) * 6 + 2]) ci++;
                const unsigned long long* ch = chunks + ci * 6;
                const long long rr = cc - (long long)ch[2];
                kr = (const float*)ch[0] + (long long)j * (long long)ch[4] + rr * HD;
                vr = (const float*)ch[1] + (long long)j * (long long)ch[5] + rr * HD;
            } else if (cc < T) {
                const long long at = ((long long)j * S + off + (cc - P)) * HD;
                kr = k + at;
                vr = v + at;
            }
            krow[threadIdx.x] = kr;
            vrow[threadIdx.x] = vr;
        }
        __syncthreads();
        // Every load of the chunk issued before any store (a loop of load-then-store waits for
        // each load in turn: the compiler cannot move a global load above a shared store), keys
        // then values, STAGE values a thread each.
        stage_rows<HD>(krow, Ks, LDQ);
        stage_rows<HD>(vrow, Vs, LDV);
        __syncthreads();

        // S = Q · Kᵀ: 4 tiles of 8 keys.
        float s[4][4];
#pragma unroll
        for (int nt = 0; nt < 4; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < HD / 8; kk++) {
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const unsigned* kb = Ks + (nt * 8 + gi) * LDQ + kk * 8 + ti;
                mma_tf32(s[nt], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], kb[0], kb[4]);
            }
        }
        // Online softmax, row by row: the lane's 8 scores of the row, then its group's 4 lanes.
        float alpha[2];
#pragma unroll
        for (int rh = 0; rh < 2; rh++) {
            float cmax = NEG_INF;
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float x = mk[nt][2 * rh + e];
                    s[nt][2 * rh + e] = x == NEG_INF ? NEG_INF : s[nt][2 * rh + e] + x;
                    cmax = fmaxf(cmax, s[nt][2 * rh + e]);
                }
            }
            cmax = fmaxf(cmax, __shfl_xor_sync(0xffffffffu, cmax, 1));
            cmax = fmaxf(cmax, __shfl_xor_sync(0xffffffffu, cmax, 2));
            const float mnew = fmaxf(m[rh], cmax);
            alpha[rh] = 1.f;
            float psum = 0.f;
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float x = s[nt][2 * rh + e];
                    const float p = (mnew == NEG_INF || x == NEG_INF) ? 0.f : expf(x - mnew);
                    psum += p;
                    s[nt][2 * rh + e] = p;
                }
            }
            psum += __shfl_xor_sync(0xffffffffu, psum, 1);
            psum += __shfl_xor_sync(0xffffffffu, psum, 2);
            if (mnew != NEG_INF) {  // the same for the group's 4 lanes
                alpha[rh] = m[rh] == NEG_INF ? 0.f : expf(m[rh] - mnew);
                l[rh] = l[rh] * alpha[rh] + psum;
                m[rh] = mnew;
            }
        }
        __syncwarp();  // the last chunk's probabilities are read
#pragma unroll
        for (int nt = 0; nt < 4; nt++) {
#pragma unroll
            for (int rh = 0; rh < 2; rh++) {
                unsigned* pr = Ps + (gi + 8 * rh) * LDP + nt * 8 + 2 * ti;
                pr[0] = tf32(s[nt][2 * rh]);
                pr[1] = tf32(s[nt][2 * rh + 1]);
            }
        }
        __syncwarp();
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            acc[nt][0] *= alpha[0];
            acc[nt][1] *= alpha[0];
            acc[nt][2] *= alpha[1];
            acc[nt][3] *= alpha[1];
        }
        // O += P · V: 4 k-steps of 8 keys (keys past T were staged as zeros, their p is 0).
#pragma unroll
        for (int kk = 0; kk < BC / 8; kk++) {
            const unsigned* pa = Ps + gi * LDP + kk * 8 + ti;
            const unsigned a0 = pa[0], a1 = pa[8 * LDP], a2 = pa[4], a3 = pa[8 * LDP + 4];
            const unsigned* vb = Vs + (kk * 8 + ti) * LDV + gi;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) mma_tf32(acc[nt], a0, a1, a2, a3, vb[nt * 8], vb[4 * LDV + nt * 8]);
        }
    }

#pragma unroll
    for (int rh = 0; rh < 2; rh++) {
        if (!valid[rh]) continue;
        const int gq = q0 + wi * TC_ROWS + gi + 8 * rh;
        const int row = gq / group, w = gq - row * group;
        const float inv = 1.f / l[rh];
        float* o = out + ((long long)(off + row) * h + j * group + w) * HD;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            *(float2*)(o + nt * 8 + 2 * ti) = make_float2(acc[nt][2 * rh] * inv, acc[nt][2 * rh + 1] * inv);
        }
    }
}

#define TC_ARGS                                                                                     \
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,          \
        float* __restrict__ out, const unsigned long long* __restrict__ table, int n_segs, int S,  \
        int h, int kvh, int hd
extern "C" __global__ void __launch_bounds__(128, 2) tree_attention_tf32_d64(TC_ARGS) { tree_attention_tc<64>(q, k, v, out, table, n_segs, S, h, kvh); }
extern "C" __global__ void __launch_bounds__(128, 2) tree_attention_tf32_d128(TC_ARGS) { tree_attention_tc<128>(q, k, v, out, table, n_segs, S, h, kvh); }
