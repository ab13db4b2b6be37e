// Per-ISA dot-product kernels for quantized weights (see quant_types.h for the layouts).
// Each function returns the dot product of one weight row of n elements with one activation row
// already quantized to the matching activation format:
//   Q8_0, Q4_0 weights  x  Q8A activations;   Q4_K, Q6_K weights  x  Q8_K activations.
// dot_f32 is the plain f32 dot product (F16/BF16 rows are converted to f32 first, F16 with
// f16_to_f32: F16C on x86).
#pragma once

#include <cstdint>

#include "../core/cpu_features.h"
#include "quant_types.h"

namespace platform::cpu {

struct QuantKernels {
  const char* name;
  float (*dot_q8_0)(int64_t n, const BlockQ8_0* w, const BlockQ8A* a);
  float (*dot_q4_0)(int64_t n, const BlockQ4_0* w, const BlockQ8A* a);
  float (*dot_q4_k)(int64_t n, const BlockQ4_K* w, const BlockQ8_K* a);
  float (*dot_q6_k)(int64_t n, const BlockQ6_K* w, const BlockQ8_K* a);
  float (*dot_f32)(int64_t n, const float* a, const float* b);
  void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);  // F16 weight rows
};

const QuantKernels* quant_kernels_scalar();
// nullptr when this build has no x86 SIMD. Needs AVX2 + FMA + F16C at run time.
const QuantKernels* quant_kernels_avx2();

// The best table at or below `level` that this CPU runs (AVX-512 uses the AVX2 table).
const QuantKernels& select_quant_kernels(SimdLevel level);

}  // namespace platform::cpu
