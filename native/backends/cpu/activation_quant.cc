// Reference activation quantizers (see activation_quant.h): round to nearest, scale amax / 127
// (Q8A's rounded to f16).
#include "activation_quant.h"

#include <algorithm>
#include <cmath>

namespace platform::cpu {

using ggml::kQK;
using ggml::kQK_K;

void quantize_row_q8a(const float* x, BlockQ8A* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* v = x + i * kQK;
    float amax = 0.0f;
    for (int l = 0; l < kQK; ++l) amax = std::max(amax, std::fabs(v[l]));
    // As ggml's x86 quantize_row_q8_0: the values scaled by 127 / amax, the scale kept as f16.
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[i].d = q8a_scale(amax);
    for (int l = 0; l < kQK; ++l) y[i].qs[l] = static_cast<int8_t>(std::lrintf(v[l] * id));
  }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* v = x + i * kQK_K;
    float amax = 0.0f;
    for (int l = 0; l < kQK_K; ++l) amax = std::max(amax, std::fabs(v[l]));
    // As ggml's quantize_row_q8_K: the values scaled by 127 / amax, the scale its inverse.
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[i].d = amax != 0.0f ? 1.0f / id : 0.0f;
    for (int l = 0; l < kQK_K; ++l) {
      y[i].qs[l] = static_cast<int8_t>(std::min(127L, std::lrintf(v[l] * id)));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += y[i].qs[g * 16 + l];
      y[i].bsums[g] = static_cast<int16_t>(s);
    }
  }
}

}  // namespace platform::cpu
