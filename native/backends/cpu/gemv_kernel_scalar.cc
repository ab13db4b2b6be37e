// Portable C++ GEMV kernels (see GemvRowsKernel / GemvColsKernel in kernels.h).
#include <algorithm>

#include "../../core/simd_target.h"
#include "gemm_kernels.h"

namespace platform::cpu {
namespace {

// Dot products with 8 independent partial sums so the adds do not form one serial chain.
void rows_scalar(int64_t rows, int64_t cols, const float* A, int64_t lda, const float* x,
                 float alpha, float beta, float* y) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* a = A + i * lda;
    float s[8] = {};
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
      for (int u = 0; u < 8; ++u) s[u] += a[j + u] * x[j + u];
    }
    float dot = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; j < cols; ++j) dot += a[j] * x[j];
    y[i] = beta == 0.0f ? alpha * dot : alpha * dot + beta * y[i];
  }
}

// y[j] += x[i] * A[i, j] over strips of columns whose partial sums stay in L1, so each row
// segment is read contiguously.
constexpr int64_t kStrip = 512;

void cols_scalar(int64_t rows, int64_t cols, const float* A, int64_t lda, const float* x,
                 float alpha, float beta, float* y) {
  float acc[kStrip];
  for (int64_t j0 = 0; j0 < cols; j0 += kStrip) {
    const int64_t w = std::min(kStrip, cols - j0);
    std::fill(acc, acc + w, 0.0f);
    for (int64_t i = 0; i < rows; ++i) {
      const float xi = x[i];
      const float* a = A + i * lda + j0;
      for (int64_t j = 0; j < w; ++j) acc[j] += xi * a[j];
    }
    for (int64_t j = 0; j < w; ++j) {
      y[j0 + j] = beta == 0.0f ? alpha * acc[j] : alpha * acc[j] + beta * y[j0 + j];
    }
  }
}

const GemvKernel kKernel = {"scalar", rows_scalar, cols_scalar};

}  // namespace

const GemvKernel* gemv_kernel_scalar() { return &kKernel; }

}  // namespace platform::cpu
