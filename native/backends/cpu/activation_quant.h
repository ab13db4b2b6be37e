// The 8-bit activation formats that the CPU's quantized dot products consume, and their reference
// quantizers. An activation row is quantized on the fly, once per matmul input, to Q8A (32
// elements, an f16 scale held as f32; for the 32-element weight types) or to Q8_K (ggml's 256
// elements, f32 scale, sums of 16; for the K-quants), so that the inner loops are integer dot
// products, as llama.cpp does. Never stored in files. The SIMD kernel tables' quantize_q8a /
// quantize_q8_k must give the same bytes as these (test/llm-engine-kernels.test.ts).
#pragma once

#include <cstdint>

#include "../../ggml/types.h"

namespace platform::cpu {

struct BlockQ8A {
  float d;  // an f16 value (q8a_scale), held as f32 for the kernels
  int8_t qs[ggml::kQK];
};
struct BlockQ8_K {
  float d;
  int8_t qs[ggml::kQK_K];
  int16_t bsums[ggml::kQK_K / 16];  // sums of each group of 16 qs (the K-quant min / offset terms)
};

// A Q8A block's scale for a block whose largest |value| is amax: amax / 127 rounded to f16, as
// ggml's block_q8_0 stores it. Rounding it makes this engine's Q8_0 / Q4_0 logits equal
// llama.cpp's instead of a few hundredths away (test/llm-logits-oracle.test.ts); the values
// themselves are scaled by 127 / amax, unrounded, as ggml's x86 quantizer does.
inline float q8a_scale(float amax) { return ggml::fp16_to_f32(ggml::f32_to_fp16(amax / 127.0f)); }

// Quantizes an f32 activation row (n a multiple of 32 / 256) to Q8A / Q8_K blocks.
void quantize_row_q8a(const float* x, BlockQ8A* y, int64_t n);
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace platform::cpu
