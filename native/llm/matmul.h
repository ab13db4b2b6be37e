// Products of a weight matrix (any supported GGML type, memory-mapped) with a batch of f32
// activation rows: Y[n, rows] = X[n, cols] * W[rows, cols]^T, W stored one row per output.
//
// All n rows of X are multiplied in one pass over W (each weight row is read once per call,
// then reused from L1 for every activation row): this is what makes batched decoding and
// prefill cheaper than token-at-a-time. Work is split across threads by output rows.
//   F32:        the core gemm_f32 / gemv_f32 (blocked, SIMD);
//   F16, BF16:  each weight row converted to f32 once, then f32 dots;
//   Q8_0, Q4_0: activations quantized to Q8A (8-bit, 32 per block), integer dots;
//   Q4_K, Q6_K: activations quantized to Q8_K (8-bit, 256 per block), integer dots.
#pragma once

#include <cstdint>
#include <vector>

#include "../core/cpu_features.h"
#include "../cpu/quant_kernels.h"
#include "../cpu/quant_types.h"

namespace platform::llm {

struct WeightMatrix {
  cpu::GgmlType type = cpu::GgmlType::kF32;
  int64_t rows = 0, cols = 0;
  int64_t row_bytes = 0;
  const uint8_t* data = nullptr;

  const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
};

// Per-caller settings and scratch (one MatmulContext per thread that calls matmul).
struct MatmulContext {
  int threads = 1;
  SimdLevel level = SimdLevel::kScalar;
  const cpu::QuantKernels* kernels = nullptr;
  std::vector<uint8_t> act;  // quantized activations

  MatmulContext(int threads, SimdLevel level);
};

// y[t * w.rows + r] = dot(W row r, x[t * w.cols ...]) for t < n, r < w.rows.
void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatmulContext& ctx);

}  // namespace platform::llm
