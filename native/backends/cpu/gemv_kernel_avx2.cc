// AVX2/FMA GEMV kernels (see GemvRowsKernel / GemvColsKernel in kernels.h).
#include <algorithm>

#include "../../core/simd_target.h"
#include "gemm_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

namespace platform::cpu {
namespace {

PLATFORM_TARGET_AVX2 PLATFORM_ALWAYS_INLINE float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

PLATFORM_TARGET_AVX2 PLATFORM_ALWAYS_INLINE float finish(float dot, float alpha, float beta,
                                                         const float* y) {
  return beta == 0.0f ? alpha * dot : alpha * dot + beta * *y;
}

// Four rows at a time share each load of x; two accumulators per row cover the FMA latency.
PLATFORM_TARGET_AVX2 void rows_avx2(int64_t rows, int64_t cols, const float* A, int64_t lda,
                                    const float* x, float alpha, float beta, float* y) {
  const int64_t cols16 = cols & ~int64_t{15};
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* a0 = A + i * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    __m256 s00 = _mm256_setzero_ps(), s01 = _mm256_setzero_ps();
    __m256 s10 = _mm256_setzero_ps(), s11 = _mm256_setzero_ps();
    __m256 s20 = _mm256_setzero_ps(), s21 = _mm256_setzero_ps();
    __m256 s30 = _mm256_setzero_ps(), s31 = _mm256_setzero_ps();
    for (int64_t j = 0; j < cols16; j += 16) {
      const __m256 x0 = _mm256_loadu_ps(x + j), x1 = _mm256_loadu_ps(x + j + 8);
      s00 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + j), x0, s00);
      s01 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + j + 8), x1, s01);
      s10 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + j), x0, s10);
      s11 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + j + 8), x1, s11);
      s20 = _mm256_fmadd_ps(_mm256_loadu_ps(a2 + j), x0, s20);
      s21 = _mm256_fmadd_ps(_mm256_loadu_ps(a2 + j + 8), x1, s21);
      s30 = _mm256_fmadd_ps(_mm256_loadu_ps(a3 + j), x0, s30);
      s31 = _mm256_fmadd_ps(_mm256_loadu_ps(a3 + j + 8), x1, s31);
    }
    float d0 = hsum(_mm256_add_ps(s00, s01)), d1 = hsum(_mm256_add_ps(s10, s11));
    float d2 = hsum(_mm256_add_ps(s20, s21)), d3 = hsum(_mm256_add_ps(s30, s31));
    for (int64_t j = cols16; j < cols; ++j) {
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
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (int64_t j = 0; j < cols16; j += 16) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(x + j), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 8), _mm256_loadu_ps(x + j + 8), s1);
    }
    float d = hsum(_mm256_add_ps(s0, s1));
    for (int64_t j = cols16; j < cols; ++j) d += a[j] * x[j];
    y[i] = finish(d, alpha, beta, y + i);
  }
}

// Column strips whose partial sums stay in L1; four rows per pass over the strip.
constexpr int64_t kStrip = 512;

PLATFORM_TARGET_AVX2 void cols_avx2(int64_t rows, int64_t cols, const float* A, int64_t lda,
                                    const float* x, float alpha, float beta, float* y) {
  alignas(32) float acc[kStrip];
  for (int64_t j0 = 0; j0 < cols; j0 += kStrip) {
    const int64_t w = std::min(kStrip, cols - j0);
    const int64_t w8 = w & ~int64_t{7};
    std::fill(acc, acc + w, 0.0f);
    const float* a = A + j0;
    int64_t i = 0;
    for (; i + 4 <= rows; i += 4) {
      const float* a0 = a + i * lda;
      const float* a1 = a0 + lda;
      const float* a2 = a1 + lda;
      const float* a3 = a2 + lda;
      const __m256 x0 = _mm256_set1_ps(x[i]), x1 = _mm256_set1_ps(x[i + 1]);
      const __m256 x2 = _mm256_set1_ps(x[i + 2]), x3 = _mm256_set1_ps(x[i + 3]);
      for (int64_t j = 0; j < w8; j += 8) {
        __m256 s = _mm256_load_ps(acc + j);
        s = _mm256_fmadd_ps(x0, _mm256_loadu_ps(a0 + j), s);
        s = _mm256_fmadd_ps(x1, _mm256_loadu_ps(a1 + j), s);
        s = _mm256_fmadd_ps(x2, _mm256_loadu_ps(a2 + j), s);
        s = _mm256_fmadd_ps(x3, _mm256_loadu_ps(a3 + j), s);
        _mm256_store_ps(acc + j, s);
      }
      for (int64_t j = w8; j < w; ++j) {
        acc[j] += x[i] * a0[j] + x[i + 1] * a1[j] + x[i + 2] * a2[j] + x[i + 3] * a3[j];
      }
    }
    for (; i < rows; ++i) {
      const float* ai = a + i * lda;
      const __m256 xi = _mm256_set1_ps(x[i]);
      for (int64_t j = 0; j < w8; j += 8) {
        const __m256 s = _mm256_fmadd_ps(xi, _mm256_loadu_ps(ai + j), _mm256_load_ps(acc + j));
        _mm256_store_ps(acc + j, s);
      }
      for (int64_t j = w8; j < w; ++j) acc[j] += x[i] * ai[j];
    }
    for (int64_t j = 0; j < w; ++j) y[j0 + j] = finish(acc[j], alpha, beta, y + j0 + j);
  }
}

const GemvKernel kKernel = {"avx2", rows_avx2, cols_avx2};

}  // namespace

const GemvKernel* gemv_kernel_avx2() { return &kKernel; }

}  // namespace platform::cpu

#else

namespace platform::cpu {
const GemvKernel* gemv_kernel_avx2() { return nullptr; }
}  // namespace platform::cpu

#endif  // PLATFORM_X86_SIMD
