// Products of a weight matrix (any supported GGML type, memory-mapped) with a batch of f32
// activation rows: Y[n, rows] = X[n, cols] * W[rows, cols]^T, W stored one row per output.
//
// All n rows of X are multiplied in one pass over W: this is what makes batched decoding and
// prefill cheaper than token-at-a-time.
//   F32:        gemm_f32 / gemv_f32 (gemm.h: blocked, SIMD);
//   F16, BF16:  each weight row converted to f32 once, then f32 dots;
//   Q8_0, Q4_0: activations quantized to Q8A (8-bit, 32 per block), integer dots;
//   Q4_K, Q6_K: activations quantized to Q8_K (8-bit, 256 per block), integer dots.
// Quantized weights go through the kernel table's tile products where it has one (each weight
// block unpacked once per tile of rows and applied to a tile of tokens from registers), else one
// dot per row and token. The work is cut into items of a few rows times a chunk of tokens (the
// chunk's activations stay in L2) that the threads take from a shared counter, so a thread slowed
// by another process on its core does not hold the others up.
#pragma once

#include <cstdint>
#include <vector>

#include "../../core/cpu_features.h"
#include "../../core/thread_pool.h"
#include "../../ggml/weight_matrix.h"
#include "quant_kernels.h"

namespace platform::cpu {

using ggml::WeightMatrix;

// Per-caller settings and scratch (one MatmulContext per thread that calls matmul).
struct MatmulContext {
  int threads = 1;
  SimdLevel level = SimdLevel::kScalar;
  const QuantKernels* kernels = nullptr;
  std::vector<uint8_t> act, act_k;  // quantized activations: Q8A, Q8_K

  MatmulContext(int threads, SimdLevel level);
};

// y[t * w.rows + r] = dot(W row r, x[t * w.cols ...]) for t < n, r < w.rows.
void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatmulContext& ctx);

// Several products of the same input (every w[i].cols equal): ys[i] = x * ws[i]^T as above. The
// input is quantized once per activation format and the quantized products share one parallel
// region (Q, K and V; gate and up).
void matmul_multi(const WeightMatrix* const* ws, float* const* ys, int count, const float* x,
                  int64_t n, MatmulContext& ctx);

// Runs fn(i) for i in [0, count) on up to `threads` threads that take indices from a shared
// counter (for uneven items: attention rows of different lengths, a thread losing its core).
void parallel_dynamic(int64_t count, int threads, FunctionRef<void(int64_t)> fn);

}  // namespace platform::cpu
