// Device-side GGML weight formats: block layouts and dequantisation of 8 consecutive elements.
//
// Every matmul / get_rows kernel reads weights through Codec<T>: load_raw() issues the global
// loads of the bytes that hold elements k..k+7 of a row (k % 8 == 0), decode() turns them into
// W8, eight values in the form  w[i] = q[i] * d + o  (q exact small integers for the quantized
// types, so a dot product is d * sum(q x) + o * sum(x) in f32). Loading and decoding are separate
// so that a kernel can keep the next tile's raw bytes in flight while it computes this one.
//
// Byte layouts are exactly ggml's (ggml/types.h, whose dequantize_row is the host reference):
//   Q8_0  34 B / 32:  f16 d, int8 qs[32];                         w = d * q
//   Q4_0  18 B / 32:  f16 d, qs[16] (low nibbles 0-15, high 16-31); w = d * (q - 8)
//   Q4_K 144 B / 256: f16 d, f16 dmin, scales[12] (6-bit sc, m), qs[128];
//                     64-element groups j: low nibbles of qs[32j..] sub-block 2j, high 2j+1;
//                     w = d * sc * q - dmin * m
//   Q6_K 210 B / 256: ql[128], qh[64], int8 scales[16], f16 d;    w = d * sc * (q - 32)
//   Q5_0  22 B / 32:  f16 d, qh[4] (bit 4 of element j: bit j), qs[16] as Q4_0; w = d * (q - 16)
//   Q4_1  20 B / 32:  f16 d, f16 m, qs[16] as Q4_0;               w = d * q + m
//   Q5_1  24 B / 32:  f16 d, f16 m, qh[4] and qs[16] as Q5_0;     w = d * q + m
//   Q2_K  84 B / 256: scales[16] (4-bit sc | 4-bit m << 4), qs[64] (2 bits), f16 d, f16 dmin;
//                     w = d * sc * q - dmin * m
//   Q3_K 110 B / 256: hmask[32], qs[64] (low 2 bits), scales[12] (6-bit, offset 32), f16 d;
//                     w = d * (sc - 32) * (q - 4)
//   Q5_K 176 B / 256: f16 d, f16 dmin, scales[12] as Q4_K, qh[32], qs[128]; Q4_K's w with 5-bit q
//   IQ4_NL 18 B / 32: f16 d, qs[16] as Q4_0 (indices);            w = d * kIq4Values[q]
//   IQ4_XS 136 B / 256: f16 d, u16 scales_h, scales_l[4], qs[128] (8 IQ4_NL-like sub-blocks);
//                     w = d * (sc - 32) * kIq4Values[q]
//   MXFP4  17 B / 32: u8 e (E8M0), qs[16] as Q4_0 (FP4 codes);    w = 2^(e - 128) * kMxfp4Values[q]
// Blocks are only 2-byte aligned (34, 18, 210, 22, 110, 18 bytes), so Q8_0 / Q4_0 / Q6_K / Q5_0 /
// Q3_K / IQ4_NL data is read with 16-bit loads; IQ4_XS (136 B) blocks are 8-byte aligned; Q4_1 (20 B) and Q2_K (84 B) blocks are 4-byte aligned, Q5_1
// (24 B) 8-byte, Q4_K (144 B) and Q5_K (176 B) rows and blocks 16-byte aligned; MXFP4 (17 B)
// blocks are not aligned at all and read byte by byte. F32 / F16 / BF16 use 16-byte
// loads, which needs row_bytes % 16 == 0 (the launchers check it and otherwise use per-element
// element1()).
//
// Integer -> float: (float)(int8) compiles to I2F, 16 per SM-clock on sm_80 / sm_90 (FMA: 64-128),
// which would bound a batch-1 Q8_0 GEMV at about memory bandwidth. Instead the byte is placed in the
// mantissa of 2^23 (0x4B000000 | b == 2^23 + b exactly) and 2^23 (+ the format's offset)
// subtracted: one LOP/PRMT and one FADD, exact for every value used here.
//
// All functions are __host__ __device__ so that a host-only test can check them against the CPU
// reference dequantiser.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "../../../ggml/types.h"

namespace platform::cuda::quant {

#define PLATFORM_QD __host__ __device__ __forceinline__

// The GGML type ids (ggml::Type) as ints: template arguments of Codec and the values of
// DeviceMatrix::type.
constexpr int kF32 = static_cast<int>(ggml::Type::kF32);
constexpr int kF16 = static_cast<int>(ggml::Type::kF16);
constexpr int kBF16 = static_cast<int>(ggml::Type::kBF16);
constexpr int kQ8_0 = static_cast<int>(ggml::Type::kQ8_0);
constexpr int kQ4_0 = static_cast<int>(ggml::Type::kQ4_0);
constexpr int kQ4_K = static_cast<int>(ggml::Type::kQ4_K);
constexpr int kQ6_K = static_cast<int>(ggml::Type::kQ6_K);
constexpr int kQ5_0 = static_cast<int>(ggml::Type::kQ5_0);
constexpr int kQ4_1 = static_cast<int>(ggml::Type::kQ4_1);
constexpr int kQ5_1 = static_cast<int>(ggml::Type::kQ5_1);
constexpr int kQ2_K = static_cast<int>(ggml::Type::kQ2_K);
constexpr int kQ3_K = static_cast<int>(ggml::Type::kQ3_K);
constexpr int kQ5_K = static_cast<int>(ggml::Type::kQ5_K);
constexpr int kIQ4_NL = static_cast<int>(ggml::Type::kIQ4_NL);
constexpr int kIQ4_XS = static_cast<int>(ggml::Type::kIQ4_XS);
constexpr int kMXFP4 = static_cast<int>(ggml::Type::kMXFP4);

// ---- loads (read-only path on the device) --------------------------------------------------

PLATFORM_QD uint32_t ld_u8(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}
PLATFORM_QD uint32_t ld_u16(const uint8_t* p) {  // p 2-byte aligned
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const unsigned short*>(p));
#else
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
#endif
}
PLATFORM_QD uint32_t ld_u32(const uint8_t* p) {  // p 4-byte aligned
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const unsigned int*>(p));
#else
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}
PLATFORM_QD uint2 ld_u64(const uint8_t* p) {  // p 8-byte aligned
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const uint2*>(p));
#else
  uint2 v;
  std::memcpy(&v, p, 8);
  return v;
#endif
}
PLATFORM_QD uint4 ld_u128(const uint8_t* p) {  // p 16-byte aligned
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const uint4*>(p));
#else
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
#endif
}
// 4 bytes from a 2-byte aligned address (two 16-bit loads), little-endian.
PLATFORM_QD uint32_t ld_u32_a2(const uint8_t* p) { return ld_u16(p) | (ld_u16(p + 2) << 16); }

// ---- scalar conversions ---------------------------------------------------------------------

PLATFORM_QD float as_float(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

PLATFORM_QD float f16_to_f32(uint32_t h) {  // low 16 bits hold an IEEE half
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  const uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                                  : (sign | ((exp + 112) << 23) | (mant << 13));
  return as_float(bits);
#endif
}

PLATFORM_QD float bf16_to_f32(uint32_t h) { return as_float(h << 16); }

// Byte i (0..3) of w as a float, minus `bias` (exact: 2^23 + byte - (2^23 + bias)).
template <int kBias>
PLATFORM_QD float byte_float(uint32_t w, int i) {
  return as_float(0x4B000000u | ((w >> (8 * i)) & 0xFFu)) - (8388608.0f + static_cast<float>(kBias));
}

// Eight dequantised values: w[i] = q[i] * d + o.
struct W8 {
  float q[8];
  float d, o;
};

// Two words of 4 bytes each (8 integer codes in bytes, already in 0..255) -> q[0..7] - bias.
template <int kBias>
PLATFORM_QD void bytes_to_q(uint32_t w0, uint32_t w1, float* q) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    q[i] = byte_float<kBias>(w0, i);
    q[4 + i] = byte_float<kBias>(w1, i);
  }
}

// ---- per-type codecs ------------------------------------------------------------------------
// Codec<T>::Raw       the loaded words for one group of 8 elements
// Codec<T>::load_raw  (row, k): the loads; k % 8 == 0, k < cols
// Codec<T>::decode    (raw, k) -> W8
// Codec<T>::kHasOffset  whether W8::o can be non-zero (Q4_1's and Q5_1's m; Q2_K's, Q4_K's and
//                       Q5_K's -dmin * m)

template <int T>
struct Codec;

template <>
struct Codec<kF32> {
  static constexpr bool kHasOffset = false;
  struct Raw { uint4 a, b; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    return {ld_u128(row + 4 * k), ld_u128(row + 4 * k + 16)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t) {
    W8 w;
    const uint32_t v[8] = {r.a.x, r.a.y, r.a.z, r.a.w, r.b.x, r.b.y, r.b.z, r.b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) w.q[i] = as_float(v[i]);
    w.d = 1.0f;
    w.o = 0.0f;
    return w;
  }
};

template <>
struct Codec<kF16> {
  static constexpr bool kHasOffset = false;
  struct Raw { uint4 a; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) { return {ld_u128(row + 2 * k)}; }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t) {
    W8 w;
    const uint32_t v[4] = {r.a.x, r.a.y, r.a.z, r.a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w.q[2 * i] = f16_to_f32(v[i] & 0xFFFFu);
      w.q[2 * i + 1] = f16_to_f32(v[i] >> 16);
    }
    w.d = 1.0f;
    w.o = 0.0f;
    return w;
  }
};

template <>
struct Codec<kBF16> {
  static constexpr bool kHasOffset = false;
  struct Raw { uint4 a; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) { return {ld_u128(row + 2 * k)}; }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t) {
    W8 w;
    const uint32_t v[4] = {r.a.x, r.a.y, r.a.z, r.a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w.q[2 * i] = as_float(v[i] << 16);
      w.q[2 * i + 1] = as_float(v[i] & 0xFFFF0000u);
    }
    w.d = 1.0f;
    w.o = 0.0f;
    return w;
  }
};

// Q8_0 block (34 B): [0,2) f16 d, [2,34) int8 qs.
template <>
struct Codec<kQ8_0> {
  static constexpr int kBlockBytes = 34;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t d, q0, q1; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 5) * kBlockBytes;
    const uint8_t* qs = blk + 2 + (k & 31);
    return {ld_u16(blk), ld_u32_a2(qs), ld_u32_a2(qs + 4)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t) {
    W8 w;
    // int8 -> unsigned (q + 128) by flipping each sign bit, then subtract 128.
    bytes_to_q<128>(r.q0 ^ 0x80808080u, r.q1 ^ 0x80808080u, w.q);
    w.d = f16_to_f32(r.d);
    w.o = 0.0f;
    return w;
  }
};

// Q4_0 block (18 B): [0,2) f16 d, [2,18) qs; element l < 16 is the low nibble of qs[l], element
// 16 + l the high nibble.
template <>
struct Codec<kQ4_0> {
  static constexpr int kBlockBytes = 18;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t d, q0, q1; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 5) * kBlockBytes;
    const uint8_t* qs = blk + 2 + (k & 15);  // k % 32 in {0, 8, 16, 24}: bytes 0-7 or 8-15
    return {ld_u16(blk), ld_u32_a2(qs), ld_u32_a2(qs + 4)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int shift = (k & 16) ? 4 : 0;  // elements 16-31: high nibbles
    bytes_to_q<8>((r.q0 >> shift) & 0x0F0F0F0Fu, (r.q1 >> shift) & 0x0F0F0F0Fu, w.q);
    w.d = f16_to_f32(r.d);
    w.o = 0.0f;
    return w;
  }
};

// Q4_K super-block (144 B): [0,2) f16 d, [2,4) f16 dmin, [4,16) scales, [16,144) qs.
// Element 64j + 32h + l (j < 4, h < 2, l < 32): nibble h of qs[32j + l], sub-block s = 2j + h
// with 6-bit scale / min (ggml's get_scale_min_k4, ggml::q4_k_scale_min):
//   s < 4:  sc = S[s] & 63,                          m = S[s + 4] & 63
//   s >= 4: sc = (S[s + 4] & 15) | (S[s - 4] >> 6) << 4,  m = (S[s + 4] >> 4) | (S[s] >> 6) << 4
template <>
struct Codec<kQ4_K> {
  static constexpr int kBlockBytes = 144;
  static constexpr bool kHasOffset = true;
  struct Raw { uint32_t dd, q0, q1, s0, s4, sm4; };  // sX = scale byte S[s + X] (sm4: S[s - 4])
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 8) * kBlockBytes;
    const int r = static_cast<int>(k & 255);
    const int j = r >> 6, h = (r >> 5) & 1, l = r & 31, s = 2 * j + h;
    const uint2 q = ld_u64(blk + 16 + 32 * j + l);
    const uint8_t* sc = blk + 4;
    return {ld_u32(blk), q.x, q.y, ld_u8(sc + s), ld_u8(sc + s + 4), ld_u8(sc + (s >= 4 ? s - 4 : s))};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int rr = static_cast<int>(k & 255);
    const int h = (rr >> 5) & 1, s = 2 * (rr >> 6) + h;
    const int shift = 4 * h;
    bytes_to_q<0>((r.q0 >> shift) & 0x0F0F0F0Fu, (r.q1 >> shift) & 0x0F0F0F0Fu, w.q);
    uint32_t sc, m;
    if (s < 4) {
      sc = r.s0 & 63;
      m = r.s4 & 63;
    } else {
      sc = (r.s4 & 0xF) | ((r.sm4 >> 6) << 4);
      m = (r.s4 >> 4) | ((r.s0 >> 6) << 4);
    }
    const float d = f16_to_f32(r.dd & 0xFFFFu), dmin = f16_to_f32(r.dd >> 16);
    w.d = d * static_cast<float>(sc);
    w.o = -(dmin * static_cast<float>(m));
    return w;
  }
};

// Q6_K super-block (210 B): [0,128) ql, [128,192) qh, [192,208) int8 scales, [208,210) f16 d.
// Element 128h + 32c + l (h < 2, c < 4, l < 32):
//   low 4 bits: nibble (c >= 2) of ql[64h + 32(c & 1) + l];  high 2 bits: qh[32h + l] >> 2c;
//   scale: scales[8h + l / 16 + 2c];  w = d * sc * (q - 32)
template <>
struct Codec<kQ6_K> {
  static constexpr int kBlockBytes = 210;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t l0, l1, h0, h1, sc, d; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 8) * kBlockBytes;
    const int r = static_cast<int>(k & 255);
    const int h = r >> 7, c = (r >> 5) & 3, l = r & 31;
    const uint8_t* ql = blk + 64 * h + 32 * (c & 1) + l;
    const uint8_t* qh = blk + 128 + 32 * h + l;
    return {ld_u32_a2(ql), ld_u32_a2(ql + 4), ld_u32_a2(qh), ld_u32_a2(qh + 4),
            ld_u8(blk + 192 + 8 * h + (l >> 4) + 2 * c), ld_u16(blk + 208)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int c = static_cast<int>((k >> 5) & 3);
    const int lshift = (c >= 2) ? 4 : 0, hshift = 2 * c;
    const uint32_t v0 = ((r.l0 >> lshift) & 0x0F0F0F0Fu) | (((r.h0 >> hshift) & 0x03030303u) << 4);
    const uint32_t v1 = ((r.l1 >> lshift) & 0x0F0F0F0Fu) | (((r.h1 >> hshift) & 0x03030303u) << 4);
    bytes_to_q<32>(v0, v1, w.q);
    const int sc = static_cast<int>(static_cast<int8_t>(static_cast<uint8_t>(r.sc)));
    w.d = f16_to_f32(r.d) * static_cast<float>(sc);
    w.o = 0.0f;
    return w;
  }
};

// Bits 0-3 of h spread to bit 0 of bytes 0-3 (bit i times 2^(7i) lands at bit 8i; no two terms meet).
PLATFORM_QD uint32_t spread4(uint32_t h) { return ((h & 0xFu) * 0x00204081u) & 0x01010101u; }

// Q5_0 block (22 B): [0,2) f16 d, [2,6) qh (u32, bit j = bit 4 of element j), [6,22) qs as Q4_0.
template <>
struct Codec<kQ5_0> {
  static constexpr int kBlockBytes = 22;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t d, qh, q0, q1; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 5) * kBlockBytes;
    const uint8_t* qs = blk + 6 + (k & 15);
    return {ld_u16(blk), ld_u32_a2(blk + 2), ld_u32_a2(qs), ld_u32_a2(qs + 4)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int shift = (k & 16) ? 4 : 0;  // elements 16-31: high nibbles
    const uint32_t h = r.qh >> (k & 31);  // bits of elements k..k+7
    const uint32_t v0 = ((r.q0 >> shift) & 0x0F0F0F0Fu) | (spread4(h) << 4);
    const uint32_t v1 = ((r.q1 >> shift) & 0x0F0F0F0Fu) | (spread4(h >> 4) << 4);
    bytes_to_q<16>(v0, v1, w.q);
    w.d = f16_to_f32(r.d);
    w.o = 0.0f;
    return w;
  }
};

// Q4_1 block (20 B): [0,2) f16 d, [2,4) f16 m, [4,20) qs as Q4_0 (no offset).
template <>
struct Codec<kQ4_1> {
  static constexpr int kBlockBytes = 20;
  static constexpr bool kHasOffset = true;
  struct Raw { uint32_t dm, q0, q1; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 5) * kBlockBytes;
    const uint8_t* qs = blk + 4 + (k & 15);
    return {ld_u32(blk), ld_u32(qs), ld_u32(qs + 4)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int shift = (k & 16) ? 4 : 0;
    bytes_to_q<0>((r.q0 >> shift) & 0x0F0F0F0Fu, (r.q1 >> shift) & 0x0F0F0F0Fu, w.q);
    w.d = f16_to_f32(r.dm & 0xFFFFu);
    w.o = f16_to_f32(r.dm >> 16);
    return w;
  }
};

// Q5_1 block (24 B): [0,2) f16 d, [2,4) f16 m, [4,8) qh, [8,24) qs, as Q5_0 (no offset).
template <>
struct Codec<kQ5_1> {
  static constexpr int kBlockBytes = 24;
  static constexpr bool kHasOffset = true;
  struct Raw { uint32_t dm, qh, q0, q1; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 5) * kBlockBytes;
    const uint2 q = ld_u64(blk + 8 + (k & 15));
    return {ld_u32(blk), ld_u32(blk + 4), q.x, q.y};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int shift = (k & 16) ? 4 : 0;
    const uint32_t h = r.qh >> (k & 31);
    const uint32_t v0 = ((r.q0 >> shift) & 0x0F0F0F0Fu) | (spread4(h) << 4);
    const uint32_t v1 = ((r.q1 >> shift) & 0x0F0F0F0Fu) | (spread4(h >> 4) << 4);
    bytes_to_q<0>(v0, v1, w.q);
    w.d = f16_to_f32(r.dm & 0xFFFFu);
    w.o = f16_to_f32(r.dm >> 16);
    return w;
  }
};

// Q2_K super-block (84 B): [0,16) scales, [16,80) qs, [80,82) f16 d, [82,84) f16 dmin.
// Element 128h + 32c + l (h < 2, c < 4, l < 32): bits 2c of qs[32h + l]; sub-block (16 elements)
// s = e / 16 with scale scales[s] & 15 and min scales[s] >> 4.
template <>
struct Codec<kQ2_K> {
  static constexpr int kBlockBytes = 84;
  static constexpr bool kHasOffset = true;
  struct Raw { uint32_t q0, q1, dd, sc; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 8) * kBlockBytes;
    const int e = static_cast<int>(k & 255);
    const uint8_t* qs = blk + 16 + 32 * (e >> 7) + (e & 31);
    return {ld_u32(qs), ld_u32(qs + 4), ld_u32(blk + 80), ld_u8(blk + (e >> 4))};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int shift = 2 * static_cast<int>((k >> 5) & 3);
    bytes_to_q<0>((r.q0 >> shift) & 0x03030303u, (r.q1 >> shift) & 0x03030303u, w.q);
    const float d = f16_to_f32(r.dd & 0xFFFFu), dmin = f16_to_f32(r.dd >> 16);
    w.d = d * static_cast<float>(r.sc & 0xF);
    w.o = -(dmin * static_cast<float>(r.sc >> 4));
    return w;
  }
};

// Q3_K super-block (110 B): [0,32) hmask, [32,96) qs, [96,108) scales, [108,110) f16 d.
// Element e = 128h + 32c + l: low 2 bits as Q2_K's (qs at 32), bit 2 = bit e / 32 of hmask[l]
// (q - 4 with the bit clear, q with it set: q in 0..7 minus 4); sub-block s = e / 16 with the
// 6-bit scale (ggml::q3_k_scale): low 4 bits from byte s % 8 (nibble s / 8), high 2 bits from
// byte 8 + s % 4 (bits 2 * (s / 4)), minus 32.
template <>
struct Codec<kQ3_K> {
  static constexpr int kBlockBytes = 110;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t q0, q1, h0, h1, lo, hi, d; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 8) * kBlockBytes;
    const int e = static_cast<int>(k & 255), l = e & 31, s = e >> 4;
    const uint8_t* qs = blk + 32 + 32 * (e >> 7) + l;
    return {ld_u32_a2(qs), ld_u32_a2(qs + 4), ld_u32_a2(blk + l), ld_u32_a2(blk + l + 4),
            ld_u8(blk + 96 + (s & 7)), ld_u8(blk + 104 + (s & 3)), ld_u16(blk + 108)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int e = static_cast<int>(k & 255), s = e >> 4;
    const int shift = 2 * ((e >> 5) & 3), hbit = e >> 5;
    const uint32_t v0 = ((r.q0 >> shift) & 0x03030303u) | (((r.h0 >> hbit) & 0x01010101u) << 2);
    const uint32_t v1 = ((r.q1 >> shift) & 0x03030303u) | (((r.h1 >> hbit) & 0x01010101u) << 2);
    bytes_to_q<4>(v0, v1, w.q);
    const int low = (s < 8) ? (r.lo & 0xF) : (r.lo >> 4);
    const int high = (r.hi >> (2 * (s >> 2))) & 3;
    w.d = f16_to_f32(r.d) * static_cast<float>((low | (high << 4)) - 32);
    w.o = 0.0f;
    return w;
  }
};

// Q5_K super-block (176 B): [0,2) f16 d, [2,4) f16 dmin, [4,16) scales, [16,48) qh, [48,176) qs.
// Element 64j + 32h + l: Q4_K's nibble h of qs[32j + l] and sub-block 2j + h, plus bit 4 from
// bit 2j + h of qh[l].
template <>
struct Codec<kQ5_K> {
  static constexpr int kBlockBytes = 176;
  static constexpr bool kHasOffset = true;
  struct Raw { uint32_t dd, q0, q1, h0, h1, s0, s4, sm4; };  // sX as Codec<kQ4_K>'s
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 8) * kBlockBytes;
    const int r = static_cast<int>(k & 255);
    const int j = r >> 6, h = (r >> 5) & 1, l = r & 31, s = 2 * j + h;
    const uint2 q = ld_u64(blk + 48 + 32 * j + l);
    const uint2 qh = ld_u64(blk + 16 + l);
    const uint8_t* sc = blk + 4;
    return {ld_u32(blk), q.x, q.y, qh.x, qh.y, ld_u8(sc + s), ld_u8(sc + s + 4), ld_u8(sc + (s >= 4 ? s - 4 : s))};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int rr = static_cast<int>(k & 255);
    const int h = (rr >> 5) & 1, s = 2 * (rr >> 6) + h;
    const int shift = 4 * h;
    const uint32_t v0 = ((r.q0 >> shift) & 0x0F0F0F0Fu) | (((r.h0 >> s) & 0x01010101u) << 4);
    const uint32_t v1 = ((r.q1 >> shift) & 0x0F0F0F0Fu) | (((r.h1 >> s) & 0x01010101u) << 4);
    bytes_to_q<0>(v0, v1, w.q);
    uint32_t sc, m;
    if (s < 4) {
      sc = r.s0 & 63;
      m = r.s4 & 63;
    } else {
      sc = (r.s4 & 0xF) | ((r.sm4 >> 6) << 4);
      m = (r.s4 >> 4) | ((r.s0 >> 6) << 4);
    }
    const float d = f16_to_f32(r.dd & 0xFFFFu), dmin = f16_to_f32(r.dd >> 16);
    w.d = d * static_cast<float>(sc);
    w.o = -(dmin * static_cast<float>(m));
    return w;
  }
};

// table[i] + 128 (0..255) for the four indices in the low nibbles of the bytes of `nib`, packed
// as bytes; a 16-entry int8 table lives in two immediates (kLow: entries 0-7 + 128, byte i =
// entry i; kHigh: entries 8-15), so no memory is read on the device.
template <uint64_t kLow, uint64_t kHigh>
PLATFORM_QD uint32_t table_biased(uint32_t nib) {
  uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t q = (nib >> (8 * i)) & 0xFu;
    const uint64_t t = q < 8 ? kLow : kHigh;
    out |= static_cast<uint32_t>((t >> (8 * (q & 7))) & 0xFFu) << (8 * i);
  }
  return out;
}
PLATFORM_QD uint32_t iq4_biased(uint32_t nib) { return table_biased<0x766A5D4F3F2D1801ull, 0xF1D9C5B5A6998D81ull>(nib); }
PLATFORM_QD uint32_t mxfp4_biased(uint32_t nib) { return table_biased<0x8C88868483828180ull, 0x74787A7C7D7E7F80ull>(nib); }

// IQ4_NL block (18 B): [0,2) f16 d, [2,18) qs as Q4_0's, indices into kIq4Values.
template <>
struct Codec<kIQ4_NL> {
  static constexpr int kBlockBytes = 18;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t d, q0, q1; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 5) * kBlockBytes;
    const uint8_t* qs = blk + 2 + (k & 15);
    return {ld_u16(blk), ld_u32_a2(qs), ld_u32_a2(qs + 4)};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int shift = (k & 16) ? 4 : 0;
    bytes_to_q<128>(iq4_biased((r.q0 >> shift) & 0x0F0F0F0Fu), iq4_biased((r.q1 >> shift) & 0x0F0F0F0Fu), w.q);
    w.d = f16_to_f32(r.d);
    w.o = 0.0f;
    return w;
  }
};

// IQ4_XS super-block (136 B): [0,2) f16 d, [2,4) scales_h, [4,8) scales_l, [8,136) qs: sub-block
// j = e / 32 has IQ4_NL's layout at qs[16j..]; its scale is (nibble j % 2 of scales_l[j / 2]) |
// (bits 2j of scales_h) << 4, minus 32 (ggml::iq4_xs_scale).
template <>
struct Codec<kIQ4_XS> {
  static constexpr int kBlockBytes = 136;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t dh, sl, q0, q1; };  // dh: d | scales_h << 16
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 8) * kBlockBytes;
    const int e = static_cast<int>(k & 255);
    const uint2 q = ld_u64(blk + 8 + 16 * (e >> 5) + (e & 15));
    return {ld_u32(blk), ld_u32(blk + 4), q.x, q.y};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int e = static_cast<int>(k & 255), j = e >> 5;
    const int shift = (e & 16) ? 4 : 0;
    bytes_to_q<128>(iq4_biased((r.q0 >> shift) & 0x0F0F0F0Fu), iq4_biased((r.q1 >> shift) & 0x0F0F0F0Fu), w.q);
    const int low = (r.sl >> (4 * j)) & 0xF, high = (r.dh >> (16 + 2 * j)) & 3;
    w.d = f16_to_f32(r.dh & 0xFFFFu) * static_cast<float>((low | (high << 4)) - 32);
    w.o = 0.0f;
    return w;
  }
};

// MXFP4 block (17 B): [0,1) E8M0 exponent e, [1,17) qs as Q4_0's (FP4 codes into kMxfp4Values);
// scale 2^(e - 128) (ggml::e8m0_half).
template <>
struct Codec<kMXFP4> {
  static constexpr int kBlockBytes = 17;
  static constexpr bool kHasOffset = false;
  struct Raw { uint32_t e, q0, q1; };
  PLATFORM_QD static Raw load_raw(const uint8_t* row, int64_t k) {
    const uint8_t* blk = row + (k >> 5) * kBlockBytes;
    const uint8_t* qs = blk + 1 + (k & 15);
    uint32_t q0 = 0, q1 = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      q0 |= ld_u8(qs + i) << (8 * i);
      q1 |= ld_u8(qs + 4 + i) << (8 * i);
    }
    return {ld_u8(blk), q0, q1};
  }
  PLATFORM_QD static W8 decode(const Raw& r, int64_t k) {
    W8 w;
    const int shift = (k & 16) ? 4 : 0;
    bytes_to_q<128>(mxfp4_biased((r.q0 >> shift) & 0x0F0F0F0Fu), mxfp4_biased((r.q1 >> shift) & 0x0F0F0F0Fu), w.q);
    w.d = as_float(r.e < 2 ? (0x00200000u << r.e) : ((r.e - 1) << 23));
    w.o = 0.0f;
    return w;
  }
};

template <int T>
PLATFORM_QD W8 load8(const uint8_t* row, int64_t k) {
  return Codec<T>::decode(Codec<T>::load_raw(row, k), k);
}

// One element of a float-type row (F32 / F16 / BF16) with 2-byte loads only: the fallback for
// rows that are not 16-byte aligned or cols % 8 != 0. Quantized types never need it.
template <int T>
PLATFORM_QD float element1(const uint8_t* row, int64_t k) {
  if constexpr (T == kF32) {
    return as_float(ld_u16(row + 4 * k) | (ld_u16(row + 4 * k + 2) << 16));
  } else if constexpr (T == kF16) {
    return f16_to_f32(ld_u16(row + 2 * k));
  } else {
    static_assert(T == kBF16, "element1: float types only");
    return bf16_to_f32(ld_u16(row + 2 * k));
  }
}

// __host__ __device__: used in `if constexpr` inside kernels (get_rows.cu) without --expt-relaxed-constexpr.
__host__ __device__ constexpr bool is_float_type(int t) { return t == kF32 || t == kF16 || t == kBF16; }

#undef PLATFORM_QD

}  // namespace platform::cuda::quant
