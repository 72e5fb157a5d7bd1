// A layer's element-wise steps, each in one launch (Readout, src/engine/fused_cuda.rs), where
// candle's ops take two to six: the residual add with the next RMSNorm, q/k's norms with RoPE
// and the query scale (and the heads-first copy they read), the gated MLP's activation.
// Compiled at run time by NVRTC (no headers). Every tensor is f32 and contiguous.

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// out[0] = x + y and out[1] = rms_norm(x + y) * w, rows of D values (out is [2, rows, D]).
// One block a row; blockDim.x a multiple of 32, at most 1024.
extern "C" __global__ void add_rms_norm_f32(
    const float* __restrict__ x, const float* __restrict__ y, const float* __restrict__ w,
    float* __restrict__ out, int rows, int D, float eps)
{
    __shared__ float part[32];
    const long long r = blockIdx.x;
    const float* xr = x + r * D;
    const float* yr = y + r * D;
    float* sum = out + r * D;
    float* normed = out + ((long long)rows + r) * D;
    float sq = 0.f;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        const float v = xr[d] + yr[d];
        sum[d] = v;
        sq += v * v;
    }
    sq = warp_sum(sq);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = sq;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.f;
        t = warp_sum(t);
        if (threadIdx.x == 0) part[0] = t;
    }
    __syncthreads();
    const float inv = rsqrtf(part[0] / (float)D + eps);
    // Each thread reads back the sums it wrote itself.
    for (int d = threadIdx.x; d < D; d += blockDim.x) normed[d] = sum[d] * inv * w[d];
}

// The joint q, k, v product [S, (h + 2 kvh) * hd] (token-major) to heads first,
// out [h + 2 kvh, S, hd]: q rows RMS-normed by qn (when not null), rotated, scaled by q_scale;
// k rows normed by kn (when not null) and rotated; v rows copied. RoPE pairs (2i, 2i + 1) when
// `interleaved`, else (i, i + hd/2); cos and sin are [S, hd/2], a row per token.
// One warp an output row (a head of a token), staged in shared memory: blockDim.x = 32 * warps,
// dynamic shared memory warps * hd floats.
extern "C" __global__ void qkv_heads_f32(
    const float* __restrict__ qkv, const float* __restrict__ cosv, const float* __restrict__ sinv,
    const float* __restrict__ qn, const float* __restrict__ kn, float* __restrict__ out,
    int S, int h, int kvh, int hd, int interleaved, float q_scale, float eps)
{
    extern __shared__ float stage[];
    const int warps = blockDim.x >> 5, wi = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int all = h + 2 * kvh;
    const long long row = (long long)blockIdx.x * warps + wi;  // head * S + token
    if (row >= (long long)all * S) return;  // a whole warp leaves together
    const int head = (int)(row / S), t = (int)(row - (long long)head * S);
    const float* src = qkv + ((long long)t * all + head) * hd;
    float* dst = out + row * hd;
    if (head >= h + kvh) {
        for (int d = lane; d < hd; d += 32) dst[d] = src[d];
        return;
    }
    const bool is_q = head < h;
    const float* nw = is_q ? qn : kn;
    float* xs = stage + wi * hd;
    float sq = 0.f;
    for (int d = lane; d < hd; d += 32) {
        const float v = src[d];
        xs[d] = v;
        sq += v * v;
    }
    if (nw != nullptr) {
        const float inv = rsqrtf(warp_sum(sq) / (float)hd + eps);
        for (int d = lane; d < hd; d += 32) xs[d] = xs[d] * inv * nw[d];
    }
    __syncwarp();
    const int half = hd >> 1;
    const float* c = cosv + (long long)t * half;
    const float* s = sinv + (long long)t * half;
    const float scale = is_q ? q_scale : 1.f;
    for (int d = lane; d < hd; d += 32) {
        float o;
        if (interleaved) {
            const int i = d >> 1;
            const float a = xs[d & ~1], b = xs[d | 1];
            o = (d & 1) ? a * s[i] + b * c[i] : a * c[i] - b * s[i];
        } else {
            const int i = d < half ? d : d - half;
            const float a = xs[i], b = xs[i + half];
            o = d < half ? a * c[i] - b * s[i] : a * s[i] + b * c[i];
        }
        dst[d] = is_q ? o * scale : o;
    }
}

// The gated MLP's activation from the joint gate-and-up product gu [rows, 2 ff] (gate the first
// half of each row, up the second) to out [rows, ff]: silu(gate) * up, or with `gelu` GELU's
// tanh approximation (as candle's `gelu`) in place of silu. One thread an output value.
extern "C" __global__ void gated_f32(
    const float* __restrict__ gu, float* __restrict__ out, int rows, int ff, int gelu)
{
    const long long n = (long long)rows * ff;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const long long r = i / ff, col = i - r * ff;
        const float g = gu[r * 2 * ff + col], u = gu[r * 2 * ff + ff + col];
        float a;
        if (gelu) {
            const float inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
            a = 0.5f * g * (1.f + tanhf(inner));
        } else {
            a = g / (1.f + expf(-g));
        }
        out[i] = a * u;
    }
}

// y = x rounded to bf16 (to nearest, ties to even: what candle's cast and __float2bfloat16 give),
// as its 16-bit pattern: the input of a bf16 product. A NaN stays a NaN.
extern "C" __global__ void f32_to_bf16(const float* __restrict__ x, unsigned short* __restrict__ y, long long n)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned int u = __float_as_uint(x[i]);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            y[i] = (unsigned short)((u >> 16) | 0x40u);
        } else {
            u += 0x7fffu + ((u >> 16) & 1u);
            y[i] = (unsigned short)(u >> 16);
        }
    }
}
