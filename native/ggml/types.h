// The GGML tensor types of GGUF files: ids, block layouts (as in ggml's ggml-common.h), the type
// table, half-precision conversions and row dequantization. This is the file format, below every
// backend: the CPU kernels and the CUDA decoders (backends/cuda/llm/quant.cuh) read these layouts,
// and dequantize_row is the reference both are checked against.
//
// Weights are stored in blocks: Q8_0 / Q4_0 / Q5_0 hold 32 elements with one f16 scale (Q4_1 /
// Q5_1 also an f16 min); the
// K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) hold 256-element super-blocks with 4- to 8-bit
// sub-block scales (and, for Q2_K / Q4_K / Q5_K, sub-block mins). IQ4_NL (32 elements, f16 scale)
// and IQ4_XS (256, with 6-bit sub-block scales) store 4-bit indices into 16 non-linear values;
// MXFP4 (gpt-oss) 32 FP4 E2M1 values under a power-of-two (E8M0) scale. (The 8-bit activation formats
// the CPU's integer dot products consume are the CPU backend's: backends/cpu/activation_quant.h.)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace platform::ggml {

enum class Type : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
  kMXFP4 = 39,
};

constexpr int kQK = 32;     // Q8_0 / Q4_0 block
constexpr int kQK_K = 256;  // K-quant super-block

struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQK];
};
struct BlockQ4_0 {
  uint16_t d;           // f16 scale
  uint8_t qs[kQK / 2];  // low nibbles: elements 0-15, high nibbles: 16-31; value = d * (q - 8)
};
struct BlockQ4_1 {
  uint16_t d;           // f16 scale
  uint16_t m;           // f16 min
  uint8_t qs[kQK / 2];  // as Q4_0's; value = d * q + m
};
struct BlockQ5_1 {
  uint16_t d;           // f16 scale
  uint16_t m;           // f16 min
  uint8_t qh[4];        // as Q5_0's
  uint8_t qs[kQK / 2];  // as Q4_0's; value = d * q + m, q in 0..31
};
struct BlockQ5_0 {
  uint16_t d;           // f16 scale
  uint8_t qh[4];        // bit 4 of element j is bit j of this little-endian u32
  uint8_t qs[kQK / 2];  // low 4 bits: low nibbles elements 0-15, high nibbles 16-31
                        // value = d * (q - 16)
};
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // per 16 elements: 4-bit scale (low nibble), 4-bit min (high)
  uint8_t qs[kQK_K / 4];       // 2-bit values; element 128h + 32c + l: bits 2c of qs[32h + l]
  uint16_t d;                  // f16 super-block scale for the scales
  uint16_t dmin;               // f16 super-block scale for the mins; value = d * sc * q - dmin * m
};
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // bit 2 of the value: element 32c + l (c < 8) is bit c of hmask[l]
  uint8_t qs[kQK_K / 4];     // low 2 bits, packed as Q2_K's
  uint8_t scales[12];        // 16 six-bit scales, packed (q3_k_scale), offset by 32
  uint16_t d;                // f16 super-block scale; value = d * (sc - 32) * (q - 4)
};
struct BlockQ4_K {
  uint16_t d;            // f16 super-block scale for the sub-block scales
  uint16_t dmin;         // f16 super-block scale for the sub-block mins
  uint8_t scales[12];    // 8 six-bit scales and 8 six-bit mins, packed
  uint8_t qs[kQK_K / 2];  // 4-bit values; value = d * sc * q - dmin * m
};
struct BlockQ5_K {
  uint16_t d;             // f16 super-block scale for the sub-block scales
  uint16_t dmin;          // f16 super-block scale for the sub-block mins
  uint8_t scales[12];     // 8 six-bit scales and 8 six-bit mins, packed as Q4_K's
  uint8_t qh[kQK_K / 8];  // bit 4: element 64j + 32h + l is bit 2j + h of qh[l]
  uint8_t qs[kQK_K / 2];  // low 4 bits, as Q4_K's nibbles; value = d * sc * q - dmin * m
};
struct BlockIQ4_NL {
  uint16_t d;           // f16 scale
  uint8_t qs[kQK / 2];  // indices into kIq4Values, packed as Q4_0's; value = d * kIq4Values[q]
};
struct BlockIQ4_XS {
  uint16_t d;              // f16 super-block scale
  uint16_t scales_h;       // high 2 bits of sub-block j's 6-bit scale: bits 2j
  uint8_t scales_l[4];     // low 4 bits of sub-block j's scale: nibble j % 2 of byte j / 2
  uint8_t qs[kQK_K / 2];   // 8 sub-blocks of 32 packed as IQ4_NL's; value = d * (sc - 32) * kIq4Values[q]
};
struct BlockMXFP4 {
  uint8_t e;            // E8M0 scale exponent: 2^(e - 127)
  uint8_t qs[kQK / 2];  // FP4 E2M1 codes packed as Q4_0's; value = e8m0_half(e) * kMxfp4Values[q]
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // low 4 bits
  uint8_t qh[kQK_K / 4];      // high 2 bits
  int8_t scales[kQK_K / 16];  // 8-bit scale per 16 elements
  uint16_t d;                 // f16 super-block scale; value = d * sc * (q - 32)
};

static_assert(sizeof(BlockQ8_0) == 34, "ggml layout");
static_assert(sizeof(BlockQ4_0) == 18, "ggml layout");
static_assert(sizeof(BlockQ4_1) == 20, "ggml layout");
static_assert(sizeof(BlockQ5_0) == 22, "ggml layout");
static_assert(sizeof(BlockQ5_1) == 24, "ggml layout");
static_assert(sizeof(BlockQ2_K) == 84, "ggml layout");
static_assert(sizeof(BlockQ3_K) == 110, "ggml layout");
static_assert(sizeof(BlockQ4_K) == 144, "ggml layout");
static_assert(sizeof(BlockQ5_K) == 176, "ggml layout");
static_assert(sizeof(BlockQ6_K) == 210, "ggml layout");
static_assert(sizeof(BlockIQ4_NL) == 18, "ggml layout");
static_assert(sizeof(BlockIQ4_XS) == 136, "ggml layout");
static_assert(sizeof(BlockMXFP4) == 17, "ggml layout");

// The 16 non-linear values IQ4_NL / IQ4_XS indices select (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

struct TypeInfo {
  const char* name;
  int64_t block_elems;  // elements per block
  int64_t block_bytes;  // bytes per block
};

// nullptr for a type id this engine does not support.
const TypeInfo* type_info(uint32_t type_id);
// ggml's name for any type id it defines (Q5_K, IQ4_XS, MXFP4...), supported here or not; nullptr
// for an id ggml does not define. For the messages that refuse a file.
const char* ggml_type_name(uint32_t type_id);
// The names of the supported types, "F32, F16, ...".
const char* supported_type_names();
inline const char* type_name(Type t) { return type_info(static_cast<uint32_t>(t))->name; }
// Bytes of a row of n elements (n must be a multiple of the block size).
inline int64_t row_bytes(Type t, int64_t n) {
  const TypeInfo* info = type_info(static_cast<uint32_t>(t));
  return n / info->block_elems * info->block_bytes;
}

inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24.
    const float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// f32 -> f16, rounding to nearest even (as F16C's vcvtps2ph and ggml's GGML_FP32_TO_FP16 do):
// overflow to infinity, subnormal halves below 2^-14, NaN kept a NaN.
inline uint16_t f32_to_fp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, infinity
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to infinity
  if (abs < 0x38800000u) {  // below 2^-14: a subnormal half, m * 2^-24 (the product is exact)
    float a;
    std::memcpy(&a, &abs, 4);
    return sign | static_cast<uint16_t>(std::lrintf(a * 16777216.0f));
  }
  // Rebias the exponent (127 -> 15) and round the mantissa's 13 dropped bits to nearest even.
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Dequantizes n elements (a multiple of the block size) of a row of `type` to f32.
void dequantize_row(Type type, const void* src, float* dst, int64_t n);

// Q4_K sub-block j (0..7): 6-bit scale and min.
inline void q4_k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q3_K sub-block j (0..15): its 6-bit scale minus 32. The 12 bytes hold the low 4 bits of
// scales 0-7 in bytes 0-7's low nibbles, of 8-15 in their high nibbles, and the high 2 bits of
// scale j in bits 2 * (j / 4) of byte 8 + j % 4.
inline int q3_k_scale(int j, const uint8_t* s) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// The FP4 E2M1 values doubled (so that they are integers), as ggml's kvalues_mxfp4: the block
// scale is halved to match (e8m0_half).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): half of the E8M0 scale 2^(e - 127), the subnormals for e < 2 included.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IQ4_XS sub-block j (0..7): its 6-bit scale minus 32.
inline int iq4_xs_scale(int j, const BlockIQ4_XS& b) {
  return (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

}  // namespace platform::ggml
