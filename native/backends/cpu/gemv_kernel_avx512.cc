// AVX-512F GEMV kernels (see GemvRowsKernel / GemvColsKernel in kernels.h). Column tails use
// masked loads, which never touch memory past the end of a row.
#include <algorithm>

#include "../../core/simd_target.h"
#include "gemm_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

namespace platform::cpu {
namespace {

PLATFORM_TARGET_AVX512 PLATFORM_ALWAYS_INLINE float finish(float dot, float alpha, float beta,
                                                           const float* y) {
  return beta == 0.0f ? alpha * dot : alpha * dot + beta * *y;
}

// Horizontal sum. The maskz forms avoid GCC 12 -Wmaybe-uninitialized false positives that the
// unmasked intrinsics (and _mm512_reduce_add_ps) trigger inside GCC's own headers.
PLATFORM_TARGET_AVX512 PLATFORM_ALWAYS_INLINE float hsum(__m512 v) {
  const __mmask16 all = 0xFFFF;
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, _MM_SHUFFLE(1, 0, 3, 2)));  // halves
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, _MM_SHUFFLE(2, 3, 0, 1)));  // quarters
  __m128 s = _mm512_maskz_extractf32x4_ps(0xF, v, 0);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

PLATFORM_TARGET_AVX512 PLATFORM_ALWAYS_INLINE __mmask16 tail_mask(int64_t n) {
  return static_cast<__mmask16>((uint32_t{1} << n) - 1);
}

// Four rows at a time share each load of x; two accumulators per row cover the FMA latency.
PLATFORM_TARGET_AVX512 void rows_avx512(int64_t rows, int64_t cols, const float* A, int64_t lda,
                                        const float* x, float alpha, float beta, float* y) {
  const int64_t cols32 = cols & ~int64_t{31};
  const int64_t cols16 = cols & ~int64_t{15};
  const __mmask16 tail = tail_mask(cols - cols16);
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* a0 = A + i * lda;
    const float* a1 = a0 + lda;
    const float* a2 = a1 + lda;
    const float* a3 = a2 + lda;
    __m512 s00 = _mm512_setzero_ps(), s01 = _mm512_setzero_ps();
    __m512 s10 = _mm512_setzero_ps(), s11 = _mm512_setzero_ps();
    __m512 s20 = _mm512_setzero_ps(), s21 = _mm512_setzero_ps();
    __m512 s30 = _mm512_setzero_ps(), s31 = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j < cols32; j += 32) {
      const __m512 x0 = _mm512_loadu_ps(x + j), x1 = _mm512_loadu_ps(x + j + 16);
      s00 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + j), x0, s00);
      s01 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + j + 16), x1, s01);
      s10 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + j), x0, s10);
      s11 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + j + 16), x1, s11);
      s20 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + j), x0, s20);
      s21 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + j + 16), x1, s21);
      s30 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + j), x0, s30);
      s31 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + j + 16), x1, s31);
    }
    for (; j < cols16; j += 16) {
      const __m512 x0 = _mm512_loadu_ps(x + j);
      s00 = _mm512_fmadd_ps(_mm512_loadu_ps(a0 + j), x0, s00);
      s10 = _mm512_fmadd_ps(_mm512_loadu_ps(a1 + j), x0, s10);
      s20 = _mm512_fmadd_ps(_mm512_loadu_ps(a2 + j), x0, s20);
      s30 = _mm512_fmadd_ps(_mm512_loadu_ps(a3 + j), x0, s30);
    }
    if (tail != 0) {
      const __m512 x0 = _mm512_maskz_loadu_ps(tail, x + j);
      s01 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a0 + j), x0, s01);
      s11 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a1 + j), x0, s11);
      s21 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a2 + j), x0, s21);
      s31 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a3 + j), x0, s31);
    }
    y[i + 0] = finish(hsum(_mm512_add_ps(s00, s01)), alpha, beta, y + i + 0);
    y[i + 1] = finish(hsum(_mm512_add_ps(s10, s11)), alpha, beta, y + i + 1);
    y[i + 2] = finish(hsum(_mm512_add_ps(s20, s21)), alpha, beta, y + i + 2);
    y[i + 3] = finish(hsum(_mm512_add_ps(s30, s31)), alpha, beta, y + i + 3);
  }
  for (; i < rows; ++i) {
    const float* a = A + i * lda;
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j < cols32; j += 32) {
      s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(x + j), s0);
      s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j + 16), _mm512_loadu_ps(x + j + 16), s1);
    }
    for (; j < cols16; j += 16) {
      s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(x + j), s0);
    }
    if (tail != 0) {
      const __m512 xt = _mm512_maskz_loadu_ps(tail, x + j);
      s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a + j), xt, s1);
    }
    y[i] = finish(hsum(_mm512_add_ps(s0, s1)), alpha, beta, y + i);
  }
}

// Column strips whose partial sums stay in L1; four rows per pass over the strip.
constexpr int64_t kStrip = 512;

PLATFORM_TARGET_AVX512 void cols_avx512(int64_t rows, int64_t cols, const float* A, int64_t lda,
                                        const float* x, float alpha, float beta, float* y) {
  alignas(64) float acc[kStrip];
  for (int64_t j0 = 0; j0 < cols; j0 += kStrip) {
    const int64_t w = std::min(kStrip, cols - j0);
    const int64_t w16 = w & ~int64_t{15};
    const __mmask16 tail = tail_mask(w - w16);
    std::fill(acc, acc + w, 0.0f);
    const float* a = A + j0;
    int64_t i = 0;
    for (; i + 4 <= rows; i += 4) {
      const float* a0 = a + i * lda;
      const float* a1 = a0 + lda;
      const float* a2 = a1 + lda;
      const float* a3 = a2 + lda;
      const __m512 x0 = _mm512_set1_ps(x[i]), x1 = _mm512_set1_ps(x[i + 1]);
      const __m512 x2 = _mm512_set1_ps(x[i + 2]), x3 = _mm512_set1_ps(x[i + 3]);
      int64_t j = 0;
      for (; j < w16; j += 16) {
        __m512 s = _mm512_load_ps(acc + j);
        s = _mm512_fmadd_ps(x0, _mm512_loadu_ps(a0 + j), s);
        s = _mm512_fmadd_ps(x1, _mm512_loadu_ps(a1 + j), s);
        s = _mm512_fmadd_ps(x2, _mm512_loadu_ps(a2 + j), s);
        s = _mm512_fmadd_ps(x3, _mm512_loadu_ps(a3 + j), s);
        _mm512_store_ps(acc + j, s);
      }
      if (tail != 0) {
        __m512 s = _mm512_maskz_loadu_ps(tail, acc + j);
        s = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, a0 + j), s);
        s = _mm512_fmadd_ps(x1, _mm512_maskz_loadu_ps(tail, a1 + j), s);
        s = _mm512_fmadd_ps(x2, _mm512_maskz_loadu_ps(tail, a2 + j), s);
        s = _mm512_fmadd_ps(x3, _mm512_maskz_loadu_ps(tail, a3 + j), s);
        _mm512_mask_storeu_ps(acc + j, tail, s);
      }
    }
    for (; i < rows; ++i) {
      const float* ai = a + i * lda;
      const __m512 xi = _mm512_set1_ps(x[i]);
      int64_t j = 0;
      for (; j < w16; j += 16) {
        const __m512 s = _mm512_fmadd_ps(xi, _mm512_loadu_ps(ai + j), _mm512_load_ps(acc + j));
        _mm512_store_ps(acc + j, s);
      }
      if (tail != 0) {
        const __m512 s = _mm512_fmadd_ps(xi, _mm512_maskz_loadu_ps(tail, ai + j),
                                         _mm512_maskz_loadu_ps(tail, acc + j));
        _mm512_mask_storeu_ps(acc + j, tail, s);
      }
    }
    for (int64_t j = 0; j < w; ++j) y[j0 + j] = finish(acc[j], alpha, beta, y + j0 + j);
  }
}

const GemvKernel kKernel = {"avx512", rows_avx512, cols_avx512};

}  // namespace

const GemvKernel* gemv_kernel_avx512() { return &kKernel; }

}  // namespace platform::cpu

#else

namespace platform::cpu {
const GemvKernel* gemv_kernel_avx512() { return nullptr; }
}  // namespace platform::cpu

#endif  // PLATFORM_X86_SIMD
