// Per-ISA kernels of the LLM engine on the CPU (block layouts: ggml/types.h; activation formats:
// activation_quant.h).
//
// Dot products: each dot_* returns the dot product of one weight row of n elements with one
// activation row already quantized to the matching activation format:
//   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 weights  x  Q8A activations (32-element blocks);
//   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K weights  x  Q8_K activations (256-element super-blocks);
//   IQ4_NL, MXFP4 x Q8A; IQ4_XS x Q8_K (as ggml pairs them).
// dot_f32 is the plain f32 dot product (F16/BF16 rows are converted to f32 first, F16 with
// f16_to_f32: F16C on x86).
//
// Tile products (gemm_*; nullptr where an ISA has none, and the matmul falls back to one dot per
// weight row and activation row): several weight rows times several activation rows at once,
//   y[t * ldy + r] = dot(weight row r, activation row t)   for r < rows, t < n,
// weight row r at w + r * row_bytes, activation row t at a + t * a_stride (in blocks). Each weight
// block is loaded (and unpacked) once per tile of rows and applied to a tile of tokens from
// registers, which is what makes prefill and batched decoding cheaper per token than one dot per
// row and token.
//
// The rest serves the forward pass: activation quantization (bit-identical to the scalar
// quantize_row_* on every ISA), attention of one GQA group over f32 KV blocks, SiLU gating.
#pragma once

#include <cstdint>

#include "../../core/cpu_features.h"
#include "../../ggml/types.h"
#include "activation_quant.h"

namespace platform::cpu {

// The weight formats the kernels read, by their ggml names.
using ggml::BlockIQ4_NL;
using ggml::BlockIQ4_XS;
using ggml::BlockMXFP4;
using ggml::BlockQ2_K;
using ggml::BlockQ3_K;
using ggml::BlockQ4_0;
using ggml::BlockQ4_1;
using ggml::BlockQ4_K;
using ggml::BlockQ5_0;
using ggml::BlockQ5_1;
using ggml::BlockQ5_K;
using ggml::BlockQ6_K;
using ggml::BlockQ8_0;
using ggml::fp16_to_f32;
using ggml::kQK;
using ggml::iq4_xs_scale;
using ggml::kIq4Values;
using ggml::e8m0_half;
using ggml::kMxfp4Values;
using ggml::kQK_K;
using ggml::q3_k_scale;
using ggml::q4_k_scale_min;

struct QuantKernels {
  const char* name;
  float (*dot_q8_0)(int64_t n, const BlockQ8_0* w, const BlockQ8A* a);
  float (*dot_q4_0)(int64_t n, const BlockQ4_0* w, const BlockQ8A* a);
  float (*dot_q4_k)(int64_t n, const BlockQ4_K* w, const BlockQ8_K* a);
  float (*dot_q6_k)(int64_t n, const BlockQ6_K* w, const BlockQ8_K* a);
  float (*dot_q5_0)(int64_t n, const BlockQ5_0* w, const BlockQ8A* a);
  float (*dot_q2_k)(int64_t n, const BlockQ2_K* w, const BlockQ8_K* a);
  float (*dot_q3_k)(int64_t n, const BlockQ3_K* w, const BlockQ8_K* a);
  float (*dot_q5_k)(int64_t n, const BlockQ5_K* w, const BlockQ8_K* a);
  float (*dot_q4_1)(int64_t n, const BlockQ4_1* w, const BlockQ8A* a);
  float (*dot_q5_1)(int64_t n, const BlockQ5_1* w, const BlockQ8A* a);
  float (*dot_iq4_nl)(int64_t n, const BlockIQ4_NL* w, const BlockQ8A* a);
  float (*dot_iq4_xs)(int64_t n, const BlockIQ4_XS* w, const BlockQ8_K* a);
  float (*dot_mxfp4)(int64_t n, const BlockMXFP4* w, const BlockQ8A* a);
  float (*dot_f32)(int64_t n, const float* a, const float* b);
  void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);  // F16 weight rows

  void (*gemm_q8_0)(int64_t cols, const uint8_t* w, int64_t row_bytes, int64_t rows,
                    const BlockQ8A* a, int64_t a_stride, int64_t n, float* y, int64_t ldy);
  void (*gemm_q4_k)(int64_t cols, const uint8_t* w, int64_t row_bytes, int64_t rows,
                    const BlockQ8_K* a, int64_t a_stride, int64_t n, float* y, int64_t ldy);
  void (*gemm_q5_k)(int64_t cols, const uint8_t* w, int64_t row_bytes, int64_t rows,
                    const BlockQ8_K* a, int64_t a_stride, int64_t n, float* y, int64_t ldy);
  void (*gemm_q6_k)(int64_t cols, const uint8_t* w, int64_t row_bytes, int64_t rows,
                    const BlockQ8_K* a, int64_t a_stride, int64_t n, float* y, int64_t ldy);

  // Activation rows (n a multiple of 32 / 256), same results as quantize_row_q8a / _q8_k.
  void (*quantize_q8a)(const float* x, BlockQ8A* y, int64_t n);
  void (*quantize_q8_k)(const float* x, BlockQ8_K* y, int64_t n);

  // Attention of one query token's nq heads that share one KV head (a GQA group; q: [nq][hd]) over
  // len cached positions: position p's key row at k_blocks[p / bs] + (p % bs) * stride, its value
  // row likewise in v_blocks.  out[h][0..hd) = sum_p softmax_p(s_hp) * v_p with s_hp = scale *
  // q_h . k_p, or softcap * tanh(s_hp / softcap) when softcap > 0 (gemma2's logit soft-capping).
  // scratch: at least nq * len floats.
  void (*attend)(int64_t len, int64_t bs, int64_t stride, const float* const* k_blocks,
                 const float* const* v_blocks, const float* q, int64_t nq, int64_t hd,
                 float scale, float softcap, float* scratch, float* out);
  // g[i] = silu(g[i]) * u[i] = g / (1 + exp(-g)) * u
  void (*silu_mul)(float* g, const float* u, int64_t n);
  // g[i] = gelu(g[i]) * u[i], GELU's tanh form (gemma's gelu_pytorch_tanh, ggml's gelu):
  // 0.5 g (1 + tanh(z)) = g / (1 + exp(-2z)), z = sqrt(2/pi) (g + 0.044715 g^3)
  void (*gelu_mul)(float* g, const float* u, int64_t n);
};

const QuantKernels* quant_kernels_scalar();
// nullptr when this build has no x86 SIMD. Needs AVX2 + FMA + F16C at run time.
const QuantKernels* quant_kernels_avx2();
// nullptr unless the CPU has AVX-512 F/BW/VL/VNNI (and the AVX2 table): int8 tiles with vpdpbusd.
const QuantKernels* quant_kernels_avx512();

// The best table at or below `level` that this CPU runs.
const QuantKernels& select_quant_kernels(SimdLevel level);

}  // namespace platform::cpu
