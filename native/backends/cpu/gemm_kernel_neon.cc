// NEON (AdvSIMD) GEMM micro-kernel for arm64: an 8x12 tile (24 q-register accumulators, 3 B
// vectors, 2 A vectors = 29 of 32 registers). A is loaded as two 4-float vectors and multiplied
// by lane (fmla v.4s, v.4s, v.s[i]), which saves the broadcasts x86 needs.
#include "../../core/simd_target.h"
#include "gemm_kernels.h"

#if PLATFORM_NEON_SIMD
#include <arm_neon.h>

namespace platform::cpu {
namespace {

constexpr int64_t kMR = 8;
constexpr int64_t kNV = 3;  // vectors of 4 floats per row
constexpr int64_t kNR = kNV * 4;

#define PLATFORM_FMA_ROW(i, av, lane)                           \
  acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, av, lane);         \
  acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, av, lane);         \
  acc[i][2] = vfmaq_laneq_f32(acc[i][2], b2, av, lane)

void micro_8x12(int64_t kc, const float* PLATFORM_RESTRICT a, const float* PLATFORM_RESTRICT b,
                float* PLATFORM_RESTRICT c, int64_t ldc, float alpha, float beta, int64_t mr,
                int64_t nr, PrefetchList prefetch) {
  float32x4_t acc[kMR][kNV];
  for (int i = 0; i < kMR; ++i) {
    for (int v = 0; v < kNV; ++v) acc[i][v] = vdupq_n_f32(0.0f);
  }
  PrefetchTrickle trickle(prefetch, kc);
  for (int64_t k = 0; k < kc; ++k) {
    trickle.at(k);
    // a: [kc][8], b: [kc][12]
    const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
    PLATFORM_FMA_ROW(0, a0, 0);
    PLATFORM_FMA_ROW(1, a0, 1);
    PLATFORM_FMA_ROW(2, a0, 2);
    PLATFORM_FMA_ROW(3, a0, 3);
    PLATFORM_FMA_ROW(4, a1, 0);
    PLATFORM_FMA_ROW(5, a1, 1);
    PLATFORM_FMA_ROW(6, a1, 2);
    PLATFORM_FMA_ROW(7, a1, 3);
    a += kMR;
    b += kNR;
  }
  trickle.finish();

  if (mr == kMR && nr == kNR) {
    for (int i = 0; i < kMR; ++i) {
      float* ci = c + i * ldc;
      for (int v = 0; v < kNV; ++v) {
        float32x4_t r = vmulq_n_f32(acc[i][v], alpha);
        if (beta != 0.0f) r = vfmaq_n_f32(r, vld1q_f32(ci + 4 * v), beta);
        vst1q_f32(ci + 4 * v, r);
      }
    }
    return;
  }
  // Edge tile: spill alpha*AB and write only the valid mr x nr corner.
  alignas(16) float tile[kMR][kNR];
  for (int i = 0; i < kMR; ++i) {
    for (int v = 0; v < kNV; ++v) vst1q_f32(tile[i] + 4 * v, vmulq_n_f32(acc[i][v], alpha));
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

#undef PLATFORM_FMA_ROW

const GemmKernel kKernel = {
    "neon", kMR, kNR, /*kc=*/256, /*mc=*/128, /*nc=*/4096, micro_8x12, pack_block_generic,
};

}  // namespace

const GemmKernel* gemm_kernel_neon() { return &kKernel; }

}  // namespace platform::cpu

#else

namespace platform::cpu {
const GemmKernel* gemm_kernel_neon() { return nullptr; }
}  // namespace platform::cpu

#endif  // PLATFORM_NEON_SIMD
