// NEON GEMV kernels for arm64 (see GemvRowsKernel / GemvColsKernel in kernels.h).
#include <algorithm>

#include "../../core/simd_target.h"
#include "gemm_kernels.h"

#if PLATFORM_NEON_SIMD
#include <arm_neon.h>

namespace platform::cpu {
namespace {

inline float finish(float dot, float alpha, float beta, const float* y) {
  return beta == 0.0f ? alpha * dot : alpha * dot + beta * *y;
}

// Four rows at a time share each load of x; two accumulators per row cover the FMA latency.
void rows_neon(int64_t rows, int64_t cols, const float* A, int64_t lda, const float* x,
               float alpha, float beta, float* y) {
  const int64_t cols8 = cols & ~int64_t{7};
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* a0 = A + i * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    float32x4_t s00 = vdupq_n_f32(0), s01 = vdupq_n_f32(0), s10 = vdupq_n_f32(0),
                s11 = vdupq_n_f32(0), s20 = vdupq_n_f32(0), s21 = vdupq_n_f32(0),
                s30 = vdupq_n_f32(0), s31 = vdupq_n_f32(0);
    for (int64_t j = 0; j < cols8; j += 8) {
      const float32x4_t x0 = vld1q_f32(x + j), x1 = vld1q_f32(x + j + 4);
      s00 = vfmaq_f32(s00, vld1q_f32(a0 + j), x0);
      s01 = vfmaq_f32(s01, vld1q_f32(a0 + j + 4), x1);
      s10 = vfmaq_f32(s10, vld1q_f32(a1 + j), x0);
      s11 = vfmaq_f32(s11, vld1q_f32(a1 + j + 4), x1);
      s20 = vfmaq_f32(s20, vld1q_f32(a2 + j), x0);
      s21 = vfmaq_f32(s21, vld1q_f32(a2 + j + 4), x1);
      s30 = vfmaq_f32(s30, vld1q_f32(a3 + j), x0);
      s31 = vfmaq_f32(s31, vld1q_f32(a3 + j + 4), x1);
    }
    float d0 = vaddvq_f32(vaddq_f32(s00, s01)), d1 = vaddvq_f32(vaddq_f32(s10, s11));
    float d2 = vaddvq_f32(vaddq_f32(s20, s21)), d3 = vaddvq_f32(vaddq_f32(s30, s31));
    for (int64_t j = cols8; j < cols; ++j) {
      d0 += a0[j] * x[j];
      d1 += a1[j] * x[j];
      d2 += a2[j] * x[j];
      d3 += a3[j] * x[j];
    }
    y[i + 0] = finish(d0, alpha, beta, y + i + 0);
    y[i + 1] = finish(d1, alpha, beta, y + i + 1);
    y[i + 2] = finish(d2, alpha, beta, y + i + 2);
    y[i + 3] = finish(d3, alpha, beta, y + i + 3);
  }
  for (; i < rows; ++i) {
    const float* a = A + i * lda;
    float32x4_t s0 = vdupq_n_f32(0), s1 = vdupq_n_f32(0);
    for (int64_t j = 0; j < cols8; j += 8) {
      s0 = vfmaq_f32(s0, vld1q_f32(a + j), vld1q_f32(x + j));
      s1 = vfmaq_f32(s1, vld1q_f32(a + j + 4), vld1q_f32(x + j + 4));
    }
    float d = vaddvq_f32(vaddq_f32(s0, s1));
    for (int64_t j = cols8; j < cols; ++j) d += a[j] * x[j];
    y[i] = finish(d, alpha, beta, y + i);
  }
}

// Column strips whose partial sums stay in L1; four rows per pass over the strip.
constexpr int64_t kStrip = 512;

void cols_neon(int64_t rows, int64_t cols, const float* A, int64_t lda, const float* x,
               float alpha, float beta, float* y) {
  alignas(16) float acc[kStrip];
  for (int64_t j0 = 0; j0 < cols; j0 += kStrip) {
    const int64_t w = std::min(kStrip, cols - j0);
    const int64_t w4 = w & ~int64_t{3};
    std::fill(acc, acc + w, 0.0f);
    const float* a = A + j0;
    int64_t i = 0;
    for (; i + 4 <= rows; i += 4) {
      const float* a0 = a + i * lda;
      const float* a1 = a0 + lda;
      const float* a2 = a1 + lda;
      const float* a3 = a2 + lda;
      const float x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
      for (int64_t j = 0; j < w4; j += 4) {
        float32x4_t s = vld1q_f32(acc + j);
        s = vfmaq_n_f32(s, vld1q_f32(a0 + j), x0);
        s = vfmaq_n_f32(s, vld1q_f32(a1 + j), x1);
        s = vfmaq_n_f32(s, vld1q_f32(a2 + j), x2);
        s = vfmaq_n_f32(s, vld1q_f32(a3 + j), x3);
        vst1q_f32(acc + j, s);
      }
      for (int64_t j = w4; j < w; ++j) acc[j] += x0 * a0[j] + x1 * a1[j] + x2 * a2[j] + x3 * a3[j];
    }
    for (; i < rows; ++i) {
      const float* ai = a + i * lda;
      for (int64_t j = 0; j < w4; j += 4) {
        vst1q_f32(acc + j, vfmaq_n_f32(vld1q_f32(acc + j), vld1q_f32(ai + j), x[i]));
      }
      for (int64_t j = w4; j < w; ++j) acc[j] += x[i] * ai[j];
    }
    for (int64_t j = 0; j < w; ++j) y[j0 + j] = finish(acc[j], alpha, beta, y + j0 + j);
  }
}

const GemvKernel kKernel = {"neon", rows_neon, cols_neon};

}  // namespace

const GemvKernel* gemv_kernel_neon() { return &kKernel; }

}  // namespace platform::cpu

#else

namespace platform::cpu {
const GemvKernel* gemv_kernel_neon() { return nullptr; }
}  // namespace platform::cpu

#endif  // PLATFORM_NEON_SIMD
