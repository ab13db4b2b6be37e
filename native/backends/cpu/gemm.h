// f32 matrix-matrix and matrix-vector products (row-major, BLAS semantics).
//
//   gemm_f32: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C
//   gemv_f32: y      = alpha * op(A) * x + beta * y,   A stored [M,N]
//
// op(X) is X or X^T. Storage is row-major with leading dimensions (row strides):
//   A is stored [M,K] with lda >= K, or [K,M] with lda >= M when transA;
//   B is stored [K,N] with ldb >= N, or [N,K] with ldb >= K when transB (ONNX Gemm / LLM weights);
//   C is stored [M,N] with ldc >= N.
// As in BLAS, beta == 0 means C (or y) is only written, never read, so NaNs there do not
// propagate; alpha == 0 or K == 0 leaves C = beta * C without reading A and B.
// Callers validate buffer lengths; these functions throw std::invalid_argument on negative
// dimensions or too-small leading dimensions.
#pragma once

#include <cstdint>
#include <optional>

#include "../../core/cpu_features.h"

namespace platform {

struct GemmOptions {
  // Unset: active_simd_level(). Set: the best supported level at or below it (so tests and
  // benchmarks can run every level in one process).
  std::optional<SimdLevel> simd;
  // <= 0: default_thread_count().
  int threads = 0;
};

void gemm_f32(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
              const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
              int64_t ldc, const GemmOptions& options = {});

// x has N elements (M when transA), y has M elements (N when transA); both contiguous.
void gemv_f32(bool transA, int64_t M, int64_t N, float alpha, const float* A, int64_t lda,
              const float* x, float beta, float* y, const GemmOptions& options = {});

// The level a call with these options runs at.
SimdLevel resolve_simd_level(const GemmOptions& options);

}  // namespace platform
