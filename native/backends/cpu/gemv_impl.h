// Internal matrix-vector entry point shared by gemm_f32 (M == 1 or N == 1) and gemv_f32.
#pragma once

#include <cstdint>

#include "../../core/cpu_features.h"

namespace platform::detail {

// S is stored [rows, cols] with row stride lds >= cols; x and y are contiguous.
//   trans == false: y[rows] = alpha * S x + beta * y      (x has cols elements)
//   trans == true:  y[cols] = alpha * S^T x + beta * y    (x has rows elements)
// beta == 0: y is not read. alpha == 0 or an empty reduction: y = beta * y, S and x not read.
void gemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* S, int64_t lds,
          const float* x, float beta, float* y, SimdLevel level, int threads);

}  // namespace platform::detail
