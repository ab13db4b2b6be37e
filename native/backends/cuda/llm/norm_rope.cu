// RMS normalisation and the Q/K/V finishing step (bias, RoPE, KV-cache write) of the LLM engine.
#include "llm_kernels.h"

namespace platform::cuda {
namespace {

constexpr int kNormThreads = 256;
constexpr int kRopeThreads = 256;

// One block per output row: sum of squares in f32 (per-thread partials, then a warp-shuffle and
// shared-memory tree), the scale in double as on the CPU, then out = x * scale * w.
//   out: [n][dim], x: [.][dim] (row rows[i] or i), w: [dim]
__global__ void __launch_bounds__(kNormThreads)
    rmsnorm_kernel(float* out, const float* x, const int32_t* __restrict__ rows, const float* __restrict__ w,
                   int64_t dim, float eps) {
  __shared__ float warp_sums[kNormThreads / 32];
  const int64_t i = blockIdx.x;
  const int64_t row = rows ? rows[i] : i;
  const float* xr = x + row * dim;
  float* o = out + i * dim;

  float ss = 0.0f;
  for (int64_t k = threadIdx.x; k < dim; k += kNormThreads) ss += xr[k] * xr[k];
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int wi = 0; wi < kNormThreads / 32; ++wi) total += warp_sums[wi];  // same order in every thread
  const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(total) / static_cast<double>(dim) + eps));
  // Each thread rewrites only the elements it read, so out == x (in place) is safe.
  for (int64_t k = threadIdx.x; k < dim; k += kNormThreads) o[k] = __fmul_rn(__fmul_rn(xr[k], scale), w[k]);
}

// Rotates one pair (a, b) by the angle whose cos / sin are c / s, exactly as the CPU's
// a' = a c - b s, b' = a s + b c (explicit roundings: no FMA contraction).
__device__ __forceinline__ void rotate_pair(float& a, float& b, float c, float s) {
  const float a0 = a, b0 = b;
  a = __fsub_rn(__fmul_rn(a0, c), __fmul_rn(b0, s));
  b = __fadd_rn(__fmul_rn(a0, s), __fmul_rn(b0, c));
}

// Pair i of a head: neox (qwen2) pairs dims (i, i + half), llama GGUF pairs (2i, 2i + 1).
__device__ __forceinline__ void pair_dims(int64_t i, int64_t half, bool neox, int64_t& ia, int64_t& ib) {
  ia = neox ? i : 2 * i;
  ib = neox ? i + half : 2 * i + 1;
}

// One block per token t. cos / sin of pos[t] * inv_freq[i] computed once (double) into shared
// memory, then every head's pairs of q (in place) and k rotate; k and v go to the cache as f16.
//   q: [n][n_heads * hd], k, v: [n][n_kv_heads * hd], bq: [n_heads * hd], bk, bv: [n_kv_heads * hd]
// Work items per head: `half` rotating pairs, then the head_dim - rope_dim dims that don't rotate.
__global__ void __launch_bounds__(kRopeThreads)
    qkv_finish_kernel(float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                      const float* __restrict__ bq, const float* __restrict__ bk, const float* __restrict__ bv,
                      const float* __restrict__ inv_freq, int64_t n_heads, int64_t n_kv_heads, int64_t hd,
                      int64_t rope_dim, bool neox, const int32_t* __restrict__ pos,
                      const int32_t* __restrict__ seq_of, const int32_t* __restrict__ blocks, int64_t max_blocks,
                      __half* __restrict__ cache, int64_t n_blocks, int64_t block_size, int64_t kv_dim,
                      int64_t layer) {
  extern __shared__ float rope_cs[];  // [2][half]: cos then sin
  const int64_t t = blockIdx.x;
  const int64_t half = rope_dim / 2;
  float* cs = rope_cs;
  float* sn = rope_cs + half;
  const int32_t p = pos[t];
  for (int64_t i = threadIdx.x; i < half; i += kRopeThreads) {
    // Positions reach 1e5+: the angle and its sin / cos in double, as on the CPU.
    const double a = static_cast<double>(p) * static_cast<double>(inv_freq[i]);
    double s, c;
    sincos(a, &s, &c);
    cs[i] = static_cast<float>(c);
    sn[i] = static_cast<float>(s);
  }
  __syncthreads();

  const int64_t per_head = hd - half;  // half pairs + (hd - rope_dim) unrotated dims

  // q, in place: bias then rotation.
  float* qt = q + t * n_heads * hd;
  for (int64_t it = threadIdx.x; it < n_heads * per_head; it += kRopeThreads) {
    const int64_t h = it / per_head, j = it % per_head;
    float* qh = qt + h * hd;
    const float* bh = bq ? bq + h * hd : nullptr;
    if (j < half) {
      int64_t ia, ib;
      pair_dims(j, half, neox, ia, ib);
      float a = qh[ia], b = qh[ib];
      if (bh) { a = __fadd_rn(a, bh[ia]); b = __fadd_rn(b, bh[ib]); }
      rotate_pair(a, b, cs[j], sn[j]);
      qh[ia] = a;
      qh[ib] = b;
    } else if (bh) {
      const int64_t d = rope_dim + (j - half);
      qh[d] = __fadd_rn(qh[d], bh[d]);
    }
  }

  // The cache rows of (seq_of[t], pos[t]): K row, and the V row block_size * kv_dim after it.
  const int64_t blk = blocks[static_cast<int64_t>(seq_of[t]) * max_blocks + p / block_size];
  const int64_t slot = p % block_size;
  __half* kc = cache + (((layer * n_blocks + blk) * 2 + 0) * block_size + slot) * kv_dim;
  __half* vc = kc + block_size * kv_dim;

  const float* kt = k + t * n_kv_heads * hd;
  for (int64_t it = threadIdx.x; it < n_kv_heads * per_head; it += kRopeThreads) {
    const int64_t h = it / per_head, j = it % per_head;
    const float* kh = kt + h * hd;
    const float* bh = bk ? bk + h * hd : nullptr;
    __half* ko = kc + h * hd;
    if (j < half) {
      int64_t ia, ib;
      pair_dims(j, half, neox, ia, ib);
      float a = kh[ia], b = kh[ib];
      if (bh) { a = __fadd_rn(a, bh[ia]); b = __fadd_rn(b, bh[ib]); }
      rotate_pair(a, b, cs[j], sn[j]);
      ko[ia] = __float2half_rn(a);
      ko[ib] = __float2half_rn(b);
    } else {
      const int64_t d = rope_dim + (j - half);
      ko[d] = __float2half_rn(bh ? __fadd_rn(kh[d], bh[d]) : kh[d]);
    }
  }

  const float* vt = v + t * n_kv_heads * hd;
  for (int64_t i = threadIdx.x; i < n_kv_heads * hd; i += kRopeThreads) {
    vc[i] = __float2half_rn(bv ? __fadd_rn(vt[i], bv[i]) : vt[i]);
  }
}

}  // namespace

void launch_rmsnorm(float* out, const float* x, const int32_t* rows, const float* w, int64_t n,
                    int64_t dim, float eps, cudaStream_t stream) {
  if (n <= 0 || dim <= 0) return;
  rmsnorm_kernel<<<static_cast<unsigned>(n), kNormThreads, 0, stream>>>(out, x, rows, w, dim, eps);
}

void launch_qkv_finish(float* q, const float* k, const float* v, const float* bq, const float* bk,
                       const float* bv, const RopeParams& rope, const StepTables& step, KvLayout kv,
                       int64_t layer, cudaStream_t stream) {
  if (step.n <= 0) return;
  const int64_t half = rope.rope_dim / 2;
  const size_t smem = static_cast<size_t>(2 * half) * sizeof(float);
  qkv_finish_kernel<<<static_cast<unsigned>(step.n), kRopeThreads, smem, stream>>>(
      q, k, v, bq, bk, bv, rope.inv_freq, rope.n_heads, rope.n_kv_heads, rope.head_dim, rope.rope_dim, rope.neox,
      step.pos, step.seq_of, step.blocks, step.max_blocks, kv.base, kv.n_blocks, kv.block_size, kv.kv_dim, layer);
}

}  // namespace platform::cuda
