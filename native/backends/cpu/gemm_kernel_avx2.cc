// AVX2/FMA GEMM micro-kernel: a 6x16 tile (12 ymm accumulators, 2 B vectors, 1 A broadcast = 15
// of 16 registers). Each k step does 12 FMAs for 2 loads + 6 broadcasts, enough independent
// accumulators to cover the FMA latency x throughput (4 cycles x 2 ports) of current x86 cores.
#include "../../core/simd_target.h"
#include "gemm_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

namespace platform::cpu {
namespace {

constexpr int64_t kMR = 6;
constexpr int64_t kNV = 2;  // vectors of 8 floats per row
constexpr int64_t kNR = kNV * 8;

PLATFORM_TARGET_AVX2 void micro_6x16(int64_t kc, const float* PLATFORM_RESTRICT a,
                                     const float* PLATFORM_RESTRICT b, float* PLATFORM_RESTRICT c,
                                     int64_t ldc, float alpha, float beta, int64_t mr, int64_t nr,
                                     PrefetchList prefetch) {
  __m256 acc[kMR][kNV];
#pragma GCC unroll 6
  for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kNV; ++v) acc[i][v] = _mm256_setzero_ps();
  }
  PrefetchTrickle trickle(prefetch, kc);
  for (int64_t k = 0; k < kc; ++k) {
    trickle.at(k);
    // a: [kc][6], b: [kc][16]
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMR;
    b += kNR;
  }
  trickle.finish();

  const __m256 va = _mm256_set1_ps(alpha);
  if (mr == kMR && nr == kNR) {
    if (beta == 0.0f) {
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
        _mm256_storeu_ps(c + i * ldc, _mm256_mul_ps(va, acc[i][0]));
        _mm256_storeu_ps(c + i * ldc + 8, _mm256_mul_ps(va, acc[i][1]));
      }
    } else {
      const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
      for (int i = 0; i < kMR; ++i) {
        float* ci = c + i * ldc;
        const __m256 r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), _mm256_mul_ps(va, acc[i][0]));
        const __m256 r1 =
            _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), _mm256_mul_ps(va, acc[i][1]));
        _mm256_storeu_ps(ci, r0);
        _mm256_storeu_ps(ci + 8, r1);
      }
    }
    return;
  }
  // Edge tile: spill alpha*AB and write only the valid mr x nr corner.
  alignas(32) float tile[kMR][kNR];
#pragma GCC unroll 6
  for (int i = 0; i < kMR; ++i) {
    _mm256_store_ps(tile[i], _mm256_mul_ps(va, acc[i][0]));
    _mm256_store_ps(tile[i] + 8, _mm256_mul_ps(va, acc[i][1]));
  }
  for (int64_t i = 0; i < mr; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < nr; ++j) ci[j] = tile[i][j];
    } else {
      for (int64_t j = 0; j < nr; ++j) ci[j] = tile[i][j] + beta * ci[j];
    }
  }
}

const GemmKernel kKernel = {
    "avx2", kMR, kNR, /*kc=*/256, /*mc=*/144, /*nc=*/4096, micro_6x16, pack_block_avx2,
};

}  // namespace

const GemmKernel* gemm_kernel_avx2() { return &kKernel; }

}  // namespace platform::cpu

#else

namespace platform::cpu {
const GemmKernel* gemm_kernel_avx2() { return nullptr; }
}  // namespace platform::cpu

#endif  // PLATFORM_X86_SIMD
