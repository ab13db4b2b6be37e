// x86 block packing with 8x8 AVX transposes for the strided case (see PackBlockFn in kernels.h).
// Used by the AVX2 and AVX-512 GEMM tables: packing B stored [N,K] (transB) is a transpose, and
// doing it 8x8 in registers keeps transB as fast as plain B.
#include <algorithm>

#include "../../core/simd_target.h"
#include "gemm_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

namespace platform::cpu {
namespace {

PLATFORM_TARGET_AVX2 PLATFORM_ALWAYS_INLINE void transpose8x8(__m256& r0, __m256& r1, __m256& r2,
                                                               __m256& r3, __m256& r4, __m256& r5,
                                                               __m256& r6, __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r0 = _mm256_permute2f128_ps(u0, u4, 0x20);
  r1 = _mm256_permute2f128_ps(u1, u5, 0x20);
  r2 = _mm256_permute2f128_ps(u2, u6, 0x20);
  r3 = _mm256_permute2f128_ps(u3, u7, 0x20);
  r4 = _mm256_permute2f128_ps(u0, u4, 0x31);
  r5 = _mm256_permute2f128_ps(u1, u5, 0x31);
  r6 = _mm256_permute2f128_ps(u2, u6, 0x31);
  r7 = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// One panel of W lanes, lanes contiguous along k: dst[k][W] from src lanes of length kc.
PLATFORM_TARGET_AVX2 void pack_panel_transpose(const float* src, int64_t lane_stride, int64_t kc,
                                               int64_t lanes, int64_t W, float* dst) {
  const int64_t lanes8 = lanes & ~int64_t{7};
  const int64_t kc8 = kc & ~int64_t{7};
  const int64_t ls = lane_stride;
  for (int64_t l0 = 0; l0 < lanes8; l0 += 8) {
    const float* s = src + l0 * ls;
    for (int64_t k0 = 0; k0 < kc8; k0 += 8) {
      __m256 r0 = _mm256_loadu_ps(s + 0 * ls + k0), r1 = _mm256_loadu_ps(s + 1 * ls + k0);
      __m256 r2 = _mm256_loadu_ps(s + 2 * ls + k0), r3 = _mm256_loadu_ps(s + 3 * ls + k0);
      __m256 r4 = _mm256_loadu_ps(s + 4 * ls + k0), r5 = _mm256_loadu_ps(s + 5 * ls + k0);
      __m256 r6 = _mm256_loadu_ps(s + 6 * ls + k0), r7 = _mm256_loadu_ps(s + 7 * ls + k0);
      transpose8x8(r0, r1, r2, r3, r4, r5, r6, r7);
      float* d = dst + k0 * W + l0;
      _mm256_storeu_ps(d + 0 * W, r0);
      _mm256_storeu_ps(d + 1 * W, r1);
      _mm256_storeu_ps(d + 2 * W, r2);
      _mm256_storeu_ps(d + 3 * W, r3);
      _mm256_storeu_ps(d + 4 * W, r4);
      _mm256_storeu_ps(d + 5 * W, r5);
      _mm256_storeu_ps(d + 6 * W, r6);
      _mm256_storeu_ps(d + 7 * W, r7);
    }
    for (int64_t l = l0; l < l0 + 8; ++l) {
      for (int64_t k = kc8; k < kc; ++k) dst[k * W + l] = src[l * ls + k];
    }
  }
  for (int64_t l = lanes8; l < lanes; ++l) {
    const float* s = src + l * ls;
    for (int64_t k = 0; k < kc; ++k) dst[k * W + l] = s[k];
  }
  for (int64_t l = lanes; l < W; ++l) {
    for (int64_t k = 0; k < kc; ++k) dst[k * W + l] = 0.0f;
  }
}

}  // namespace

PLATFORM_TARGET_AVX2 void pack_block_avx2(const float* src, int64_t lane_stride, int64_t k_stride,
                                          int64_t kc, int64_t lanes, int64_t W, float* dst) {
  if (lane_stride == 1 && W % 8 == 0) {
    // Lanes contiguous (plain B): k outermost, so each step copies one contiguous run of all
    // lanes into the panels with whole-vector moves.
    const int64_t full = lanes / W;  // panels with all W lanes present
    const int64_t rest = lanes - full * W;
    for (int64_t k = 0; k < kc; ++k) {
      const float* s = src + k * k_stride;
      float* d = dst + k * W;
      for (int64_t p = 0; p < full; ++p) {
        for (int64_t v = 0; v < W; v += 8) {
          _mm256_store_ps(d + p * W * kc + v, _mm256_loadu_ps(s + p * W + v));
        }
      }
      if (rest != 0) {
        float* dp = d + full * W * kc;
        const float* sp = s + full * W;
        for (int64_t l = 0; l < rest; ++l) dp[l] = sp[l];
        for (int64_t l = rest; l < W; ++l) dp[l] = 0.0f;
      }
    }
    return;
  }
  if (k_stride != 1 || lane_stride == 1) {
    pack_block_generic(src, lane_stride, k_stride, kc, lanes, W, dst);
    return;
  }
  for (int64_t p = 0; p * W < lanes; ++p) {
    pack_panel_transpose(src + p * W * lane_stride, lane_stride, kc, std::min(W, lanes - p * W),
                         W, dst + p * W * kc);
  }
}

}  // namespace platform::cpu

#endif  // PLATFORM_X86_SIMD
