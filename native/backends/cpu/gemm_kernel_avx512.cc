// AVX-512F GEMM micro-kernel: a 12x32 tile (24 zmm accumulators, 2 B vectors, 1 A broadcast = 27
// of 32 registers). 24 independent FMAs per k step cover the FMA latency on cores with one or two
// 512-bit FMA ports (Intel server parts, AMD Zen 4/5).
#include "../../core/simd_target.h"
#include "gemm_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

namespace platform::cpu {
namespace {

constexpr int64_t kMR = 12;
constexpr int64_t kNV = 2;  // vectors of 16 floats per row
constexpr int64_t kNR = kNV * 16;

PLATFORM_TARGET_AVX512 void micro_12x32(int64_t kc, const float* PLATFORM_RESTRICT a,
                                        const float* PLATFORM_RESTRICT b,
                                        float* PLATFORM_RESTRICT c, int64_t ldc, float alpha,
                                        float beta, int64_t mr, int64_t nr, PrefetchList prefetch) {
  __m512 acc[kMR][kNV];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
    acc[i][0] = _mm512_setzero_ps();
    acc[i][1] = _mm512_setzero_ps();
  }
  PrefetchTrickle trickle(prefetch, kc);
  for (int64_t k = 0; k < kc; ++k) {
    trickle.at(k);
    // a: [kc][12], b: [kc][32]
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMR;
    b += kNR;
  }
  trickle.finish();

  const __m512 va = _mm512_set1_ps(alpha);
  if (mr == kMR && nr == kNR) {
    if (beta == 0.0f) {
#pragma GCC unroll 16
      for (int i = 0; i < kMR; ++i) {
        _mm512_storeu_ps(c + i * ldc, _mm512_mul_ps(va, acc[i][0]));
        _mm512_storeu_ps(c + i * ldc + 16, _mm512_mul_ps(va, acc[i][1]));
      }
    } else {
      const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
      for (int i = 0; i < kMR; ++i) {
        float* ci = c + i * ldc;
        const __m512 r0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci), _mm512_mul_ps(va, acc[i][0]));
        const __m512 r1 =
            _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci + 16), _mm512_mul_ps(va, acc[i][1]));
        _mm512_storeu_ps(ci, r0);
        _mm512_storeu_ps(ci + 16, r1);
      }
    }
    return;
  }
  // Edge tile: masked loads/stores write only the valid mr x nr corner (beta == 0: C not read).
  const int64_t n0 = nr < 16 ? nr : 16;
  const int64_t n1 = nr - n0;
  const __mmask16 m0 = static_cast<__mmask16>((uint32_t{1} << n0) - 1);
  const __mmask16 m1 = static_cast<__mmask16>((uint32_t{1} << n1) - 1);
  const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
    if (i >= mr) break;
    float* ci = c + i * ldc;
    __m512 r0 = _mm512_mul_ps(va, acc[i][0]);
    __m512 r1 = _mm512_mul_ps(va, acc[i][1]);
    if (beta != 0.0f) {
      r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), r0);
      r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
    }
    _mm512_mask_storeu_ps(ci, m0, r0);
    _mm512_mask_storeu_ps(ci + 16, m1, r1);
  }
}

const GemmKernel kKernel = {
    "avx512", kMR, kNR, /*kc=*/256, /*mc=*/144, /*nc=*/4096, micro_12x32, pack_block_avx2,
};

}  // namespace

const GemmKernel* gemm_kernel_avx512() { return &kKernel; }

}  // namespace platform::cpu

#else

namespace platform::cpu {
const GemmKernel* gemm_kernel_avx512() { return nullptr; }
}  // namespace platform::cpu

#endif  // PLATFORM_X86_SIMD
