// Portable block packing (see PackBlockFn in kernels.h).
#include <algorithm>

#include "gemm_kernels.h"

namespace platform::cpu {

void pack_block_generic(const float* src, int64_t lane_stride, int64_t k_stride, int64_t kc,
                        int64_t lanes, int64_t W, float* dst) {
  const int64_t panels = (lanes + W - 1) / W;
  if (lane_stride == 1) {
    // Lanes are contiguous (plain B, or A^T): walk k outermost so each step reads one contiguous
    // run of all the lanes. Walking panel by panel instead would read a W-float sliver of every
    // row, and with power-of-two row strides those slivers all land in the same cache sets.
    for (int64_t k = 0; k < kc; ++k) {
      const float* s = src + k * k_stride;
      for (int64_t p = 0; p < panels; ++p) {
        float* d = dst + p * W * kc + k * W;
        const int64_t n = std::min(W, lanes - p * W);
        for (int64_t l = 0; l < n; ++l) d[l] = s[p * W + l];
        for (int64_t l = n; l < W; ++l) d[l] = 0.0f;
      }
    }
    return;
  }
  // Each lane is a run along k (plain A, or B^T weights): read lane by lane so the loads stream;
  // the strided writes land in one small destination panel at a time, which stays in L1.
  for (int64_t p = 0; p < panels; ++p) {
    float* d = dst + p * W * kc;
    const int64_t n = std::min(W, lanes - p * W);
    for (int64_t l = 0; l < n; ++l) {
      const float* s = src + (p * W + l) * lane_stride;
      for (int64_t k = 0; k < kc; ++k) d[k * W + l] = s[k * k_stride];
    }
    for (int64_t l = n; l < W; ++l) {
      for (int64_t k = 0; k < kc; ++k) d[k * W + l] = 0.0f;
    }
  }
}

}  // namespace platform::cpu
