// Portable C++ GEMM micro-kernel: the fallback on any CPU, and the baseline the SIMD kernels are
// benchmarked against. A 4x8 tile of accumulators fits the 16 baseline vector registers when the
// compiler auto-vectorises the j loops (SSE2 on x86-64), without spilling.
#include "../../core/simd_target.h"
#include "gemm_kernels.h"

namespace platform::cpu {
namespace {

constexpr int64_t kMR = 4;
constexpr int64_t kNR = 8;

void micro_4x8(int64_t kc, const float* PLATFORM_RESTRICT a, const float* PLATFORM_RESTRICT b,
               float* PLATFORM_RESTRICT c, int64_t ldc, float alpha, float beta, int64_t mr,
               int64_t nr, PrefetchList prefetch) {
  float acc[kMR][kNR] = {};  // AB tile
  PrefetchTrickle trickle(prefetch, kc);
  for (int64_t k = 0; k < kc; ++k) {
    trickle.at(k);
    const float* ak = a + k * kMR;  // a: [kc][MR]
    const float* bk = b + k * kNR;  // b: [kc][NR]
    for (int64_t i = 0; i < kMR; ++i) {
      const float ai = ak[i];
      for (int64_t j = 0; j < kNR; ++j) acc[i][j] += ai * bk[j];
    }
  }
  trickle.finish();
  for (int64_t i = 0; i < mr; ++i) {
    float* ci = c + i * ldc;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < nr; ++j) ci[j] = alpha * acc[i][j];
    } else {
      for (int64_t j = 0; j < nr; ++j) ci[j] = alpha * acc[i][j] + beta * ci[j];
    }
  }
}

const GemmKernel kKernel = {
    "scalar", kMR, kNR, /*kc=*/256, /*mc=*/128, /*nc=*/2048, micro_4x8, pack_block_generic,
};

}  // namespace

const GemmKernel* gemm_kernel_scalar() { return &kKernel; }

}  // namespace platform::cpu
