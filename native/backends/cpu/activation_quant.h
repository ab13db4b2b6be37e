// The 8-bit activation formats that the CPU's quantized dot products consume, and their reference
// quantizers. An activation row is quantized on the fly, once per matmul input, to Q8A (32
// elements, f32 scale; this engine's own format, for Q8_0 / Q4_0 weights) or to Q8_K (ggml's 256
// elements, f32 scale, sums of 16; for the K-quants), so that the inner loops are integer dot
// products, as llama.cpp does. Never stored in files. The SIMD kernel tables' quantize_q8a /
// quantize_q8_k must give the same bytes as these (test/llm-engine-kernels.test.ts).
#pragma once

#include <cstdint>

#include "../../ggml/types.h"

namespace platform::cpu {

struct BlockQ8A {
  float d;
  int8_t qs[ggml::kQK];
};
struct BlockQ8_K {
  float d;
  int8_t qs[ggml::kQK_K];
  int16_t bsums[ggml::kQK_K / 16];  // sums of each group of 16 qs (the K-quant min / offset terms)
};

// Quantizes an f32 activation row (n a multiple of 32 / 256) to Q8A / Q8_K blocks.
void quantize_row_q8a(const float* x, BlockQ8A* y, int64_t n);
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace platform::cpu
