// Small-n matmul (decode): a memory-bound GEMV that reads W once for up to kVecMaxTokens tokens.
//
// One CTA of 128 threads (4 warps) owns kVecWeightRows = 4 weight rows (gate-up: 2 gate rows and
// the same 2 up rows). Its threads walk the rows' 8-element groups together: thread i takes groups
// i, i + 128, ... so that consecutive lanes read consecutive bytes of each row (coalesced), with
// the 4 rows' loads (x2 by unrolling) in flight at once. x is read with float4 loads through L1
// and each x value serves 4 rows (x traffic = n/4 floats per weight). The per-thread sums are
// reduced over the warp with shuffles and over the 4 warps through shared memory.
//
// Arithmetic is f32 on exactly dequantised weights: per group of 8, s = sum q*x (8 FMA) and
// acc += d * s (+ o * sum x for Q4_K). Why n <= 4: per weight this costs ~2 ops to decode plus n
// FMAs; at n = 4 that is ~65% of the SM's FP32 issue rate at H200 bandwidth (16.5 weights per
// SM-clock), so larger n would be compute-bound here and go to the tensor-core tiles instead.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "llm_kernels.h"
#include "matmul_kernels.cuh"
#include "quant.cuh"

namespace platform::cuda::detail {
namespace {

using quant::Codec;
using quant::W8;

constexpr int kVecThreads = 128;
constexpr int kVecWarps = kVecThreads / 32;
constexpr int kVecWeightRows = 4;

struct VecArgs {
  const uint8_t* w0;  // [rows][row_bytes]: the matrix, or gate
  const uint8_t* w1;  // up (gate-up only)
  uint64_t up_delta;  // gate-up: address of up minus address of gate (mod 2^64)
  int64_t rows, cols, row_bytes;
  const float* x;  // [n][cols]
  float* y;        // [n][ldy]
  int64_t ldy;
  bool accumulate;
};

__device__ __forceinline__ float silu(float a) { return a / (1.0f + expf(-a)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Output row i (< kOut) of this CTA reads weight rows i (and i + kOut of `up` for gate-up).
template <bool kGateUp>
__device__ __forceinline__ const uint8_t* weight_row(const VecArgs& a, int64_t r0, int i, int k_out) {
  const int64_t r = min(r0 + (kGateUp ? i % k_out : i), a.rows - 1);  // clamp: tail rows unused
  // Up rows via a byte offset from w0 (a select between two pointer parameters makes nvcc
  // spill them to the stack).
  const uint64_t up = (kGateUp && i >= k_out) ? a.up_delta : 0;
  return reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(a.w0) + up) + r * a.row_bytes;
}

// Requires cols % 8 == 0, x 16-byte aligned, and for F32/F16/BF16 16-byte aligned rows.
template <int T, int N, bool kGateUp>
__global__ void __launch_bounds__(kVecThreads) matmul_vec_kernel(VecArgs a) {
  constexpr int R = kVecWeightRows;
  constexpr int kOut = kGateUp ? R / 2 : R;  // output rows per CTA
  using C = Codec<T>;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kOut;

  const uint8_t* rowp[R];
#pragma unroll
  for (int i = 0; i < R; ++i) rowp[i] = weight_row<kGateUp>(a, r0, i, kOut);

  float acc[R][N];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int t = 0; t < N; ++t) acc[i][t] = 0.0f;

  const int64_t groups = a.cols >> 3;
#pragma unroll 2
  for (int64_t g = threadIdx.x; g < groups; g += kVecThreads) {
    const int64_t k = g << 3;
    typename C::Raw raw[R];  // all weight loads first: R (x2 unrolled) requests in flight
#pragma unroll
    for (int i = 0; i < R; ++i) raw[i] = C::load_raw(rowp[i], k);

    float xv[N][8], xs[N];  // x[t][k .. k+7] and its sum (for Q4_K's min term)
#pragma unroll
    for (int t = 0; t < N; ++t) {
      const float4* xp = reinterpret_cast<const float4*>(a.x + t * a.cols + k);
      const float4 lo = __ldg(xp), hi = __ldg(xp + 1);
      xv[t][0] = lo.x; xv[t][1] = lo.y; xv[t][2] = lo.z; xv[t][3] = lo.w;
      xv[t][4] = hi.x; xv[t][5] = hi.y; xv[t][6] = hi.z; xv[t][7] = hi.w;
      xs[t] = 0.0f;
      if constexpr (C::kHasOffset) {
#pragma unroll
        for (int j = 0; j < 8; ++j) xs[t] += xv[t][j];
      }
    }
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const W8 w = C::decode(raw[i], k);
#pragma unroll
      for (int t = 0; t < N; ++t) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) s = fmaf(w.q[j], xv[t][j], s);
        acc[i][t] = fmaf(w.d, s, acc[i][t]);
        if constexpr (C::kHasOffset) acc[i][t] = fmaf(w.o, xs[t], acc[i][t]);
      }
    }
  }

  __shared__ float red[kVecWarps][R * N];  // per-warp sums
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int t = 0; t < N; ++t) {
      const float v = warp_sum(acc[i][t]);
      if (lane == 0) red[warp][i * N + t] = v;
    }
  __syncthreads();

  if (threadIdx.x < kOut * N) {
    const int i = threadIdx.x / N, t = threadIdx.x % N;
    const int64_t r = r0 + i;
    if (r < a.rows) {
      float v = 0.0f;
#pragma unroll
      for (int wp = 0; wp < kVecWarps; ++wp) v += red[wp][i * N + t];
      float* out = a.y + t * a.ldy + r;
      if constexpr (kGateUp) {
        float u = 0.0f;
#pragma unroll
        for (int wp = 0; wp < kVecWarps; ++wp) u += red[wp][(i + kOut) * N + t];
        *out = silu(v) * u;
      } else {
        *out = a.accumulate ? *out + v : v;
      }
    }
  }
}

// Fallback for F32/F16/BF16 rows that are not 16-byte aligned or cols % 8 != 0, and for any type
// when x is not 16-byte aligned (never the case in the backend): one CTA per output row, all n
// tokens, element by element (quantized: group by group).
template <int T, bool kGateUp>
__global__ void __launch_bounds__(kVecThreads) matmul_scalar_kernel(VecArgs a, int64_t n) {
  const int64_t r = blockIdx.x;
  const uint8_t* row0 = a.w0 + r * a.row_bytes;
  const uint8_t* row1 = kGateUp ? a.w1 + r * a.row_bytes : nullptr;
  __shared__ float red[2][kVecWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = a.x + t * a.cols;
    float s0 = 0.0f, s1 = 0.0f;
    if constexpr (quant::is_float_type(T)) {
      for (int64_t k = threadIdx.x; k < a.cols; k += kVecThreads) {
        s0 = fmaf(quant::element1<T>(row0, k), xt[k], s0);
        if constexpr (kGateUp) s1 = fmaf(quant::element1<T>(row1, k), xt[k], s1);
      }
    } else {  // quantized (here only when x is not 16-byte aligned): 8-element groups, scalar x
      for (int64_t k = 8 * static_cast<int64_t>(threadIdx.x); k < a.cols; k += 8 * kVecThreads) {
        const W8 w0 = quant::load8<T>(row0, k);
        float d0 = 0.0f, d1 = 0.0f, xs = 0.0f;
        W8 w1 = w0;
        if constexpr (kGateUp) w1 = quant::load8<T>(row1, k);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          d0 = fmaf(w0.q[j], xt[k + j], d0);
          if constexpr (kGateUp) d1 = fmaf(w1.q[j], xt[k + j], d1);
          xs += xt[k + j];
        }
        s0 += w0.d * d0 + w0.o * xs;
        if constexpr (kGateUp) s1 += w1.d * d1 + w1.o * xs;
      }
    }
    s0 = warp_sum(s0);
    s1 = warp_sum(s1);
    if (lane == 0) {
      red[0][warp] = s0;
      red[1][warp] = s1;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float v = 0.0f, u = 0.0f;
      for (int wp = 0; wp < kVecWarps; ++wp) {
        v += red[0][wp];
        u += red[1][wp];
      }
      float* out = a.y + t * a.ldy + r;
      if constexpr (kGateUp) {
        *out = silu(v) * u;
      } else {
        *out = a.accumulate ? *out + v : v;
      }
    }
    __syncthreads();  // red is reused by the next token
  }
}

template <int T, bool kGateUp>
void launch_vec_type(const VecArgs& a, int nn, cudaStream_t stream) {
  constexpr int kOut = kGateUp ? kVecWeightRows / 2 : kVecWeightRows;
  const dim3 grid(static_cast<unsigned>((a.rows + kOut - 1) / kOut));
  switch (nn) {
    case 1: matmul_vec_kernel<T, 1, kGateUp><<<grid, kVecThreads, 0, stream>>>(a); break;
    case 2: matmul_vec_kernel<T, 2, kGateUp><<<grid, kVecThreads, 0, stream>>>(a); break;
    case 3: matmul_vec_kernel<T, 3, kGateUp><<<grid, kVecThreads, 0, stream>>>(a); break;
    default: matmul_vec_kernel<T, 4, kGateUp><<<grid, kVecThreads, 0, stream>>>(a); break;
  }
}

template <bool kGateUp>
void launch_vec(int type, const VecArgs& a, int nn, cudaStream_t stream) {
  switch (type) {
    case quant::kF32: launch_vec_type<quant::kF32, kGateUp>(a, nn, stream); break;
    case quant::kF16: launch_vec_type<quant::kF16, kGateUp>(a, nn, stream); break;
    case quant::kBF16: launch_vec_type<quant::kBF16, kGateUp>(a, nn, stream); break;
    case quant::kQ8_0: launch_vec_type<quant::kQ8_0, kGateUp>(a, nn, stream); break;
    case quant::kQ4_0: launch_vec_type<quant::kQ4_0, kGateUp>(a, nn, stream); break;
    case quant::kQ4_K: launch_vec_type<quant::kQ4_K, kGateUp>(a, nn, stream); break;
    case quant::kQ6_K: launch_vec_type<quant::kQ6_K, kGateUp>(a, nn, stream); break;
    case quant::kIQ4_NL: launch_vec_type<quant::kIQ4_NL, kGateUp>(a, nn, stream); break;
    case quant::kIQ4_XS: launch_vec_type<quant::kIQ4_XS, kGateUp>(a, nn, stream); break;
    case quant::kMXFP4: launch_vec_type<quant::kMXFP4, kGateUp>(a, nn, stream); break;
    case quant::kQ5_0: launch_vec_type<quant::kQ5_0, kGateUp>(a, nn, stream); break;
    case quant::kQ4_1: launch_vec_type<quant::kQ4_1, kGateUp>(a, nn, stream); break;
    case quant::kQ5_1: launch_vec_type<quant::kQ5_1, kGateUp>(a, nn, stream); break;
    case quant::kQ2_K: launch_vec_type<quant::kQ2_K, kGateUp>(a, nn, stream); break;
    case quant::kQ3_K: launch_vec_type<quant::kQ3_K, kGateUp>(a, nn, stream); break;
    case quant::kQ5_K: launch_vec_type<quant::kQ5_K, kGateUp>(a, nn, stream); break;
    default: break;
  }
}

template <bool kGateUp>
void launch_scalar(int type, const VecArgs& a, int64_t n, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(a.rows));
  switch (type) {
    case quant::kF32: matmul_scalar_kernel<quant::kF32, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kF16: matmul_scalar_kernel<quant::kF16, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kBF16: matmul_scalar_kernel<quant::kBF16, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    // Quantized types land here only with an unaligned x (previously: nothing launched, y unwritten).
    case quant::kQ8_0: matmul_scalar_kernel<quant::kQ8_0, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ4_0: matmul_scalar_kernel<quant::kQ4_0, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ4_K: matmul_scalar_kernel<quant::kQ4_K, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ6_K: matmul_scalar_kernel<quant::kQ6_K, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kIQ4_NL: matmul_scalar_kernel<quant::kIQ4_NL, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kIQ4_XS: matmul_scalar_kernel<quant::kIQ4_XS, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kMXFP4: matmul_scalar_kernel<quant::kMXFP4, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ5_0: matmul_scalar_kernel<quant::kQ5_0, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ4_1: matmul_scalar_kernel<quant::kQ4_1, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ5_1: matmul_scalar_kernel<quant::kQ5_1, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ2_K: matmul_scalar_kernel<quant::kQ2_K, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ3_K: matmul_scalar_kernel<quant::kQ3_K, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    case quant::kQ5_K: matmul_scalar_kernel<quant::kQ5_K, kGateUp><<<grid, kVecThreads, 0, stream>>>(a, n); break;
    default: break;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

void launch_matmul_vec(const DeviceMatrix& w, const DeviceMatrix* up, const float* x, int64_t n,
                       float* y, int64_t ldy, bool accumulate, cudaStream_t stream) {
  if (n <= 0 || w.rows <= 0) return;
  const uint64_t delta =
      up ? reinterpret_cast<uint64_t>(up->data) - reinterpret_cast<uint64_t>(w.data) : 0;
  VecArgs a{w.data, up ? up->data : nullptr, delta, w.rows, w.cols, w.row_bytes, x, y, ldy, accumulate};
  bool fast = w.cols % 8 == 0 && aligned16(x);
  if (quant::is_float_type(w.type)) {
    fast = fast && w.row_bytes % 16 == 0 && aligned16(w.data) && (!up || aligned16(up->data));
  }
  if (!fast) {
    if (up) launch_scalar<true>(w.type, a, n, stream);
    else launch_scalar<false>(w.type, a, n, stream);
    return;
  }
  for (int64_t t0 = 0; t0 < n; t0 += kVecMaxTokens) {  // one pass over W per 4 tokens
    const int nn = static_cast<int>(std::min<int64_t>(kVecMaxTokens, n - t0));
    a.x = x + t0 * w.cols;
    a.y = y + t0 * ldy;
    if (up) launch_vec<true>(w.type, a, nn, stream);
    else launch_vec<false>(w.type, a, nn, stream);
  }
}

}  // namespace platform::cuda::detail
