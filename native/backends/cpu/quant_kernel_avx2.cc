// AVX2/FMA/F16C quantized dot products. The core step is _mm256_maddubs_epi16(u8, s8): 32
// unsigned weights times 32 signed activations, summed in adjacent pairs to int16 (no overflow:
// |q| <= 63 and |a| <= 127 keep each pair below 2^15), then _mm256_madd_epi16 widens to int32,
// multiplying by the sub-block scale on the way for the K-quants.
#include "../../core/simd_target.h"
#include "quant_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#define QUANT_TARGET __attribute__((target("avx2,fma,f16c")))

namespace platform::cpu {
namespace {

QUANT_TARGET inline float hsum_ps(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

QUANT_TARGET inline float f16(uint16_t h) { return _cvtsh_ss(h); }

// Signed int8 x signed int8 dot of 32 lanes -> 8 int32 partial sums.
QUANT_TARGET inline __m256i dot_s8(__m256i w, __m256i a) {
  const __m256i aw = _mm256_sign_epi8(w, w);  // |w|, unsigned for maddubs
  const __m256i sa = _mm256_sign_epi8(a, w);  // a with w's sign
  return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sa), _mm256_set1_epi16(1));
}

QUANT_TARGET float dot_q8_0(int64_t n, const BlockQ8_0* w, const BlockQ8A* a) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs));
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
    const __m256 p = _mm256_cvtepi32_ps(dot_s8(qw, qa));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), p, acc);
  }
  return hsum_ps(acc);
}

QUANT_TARGET float dot_q4_0(int64_t n, const BlockQ4_0* w, const BlockQ8A* a) {
  const __m256i low = _mm256_set1_epi8(0xF), eight = _mm256_set1_epi8(8);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].qs));
    // elements 0-15 from the low nibbles, 16-31 from the high nibbles
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    const __m256i qw = _mm256_sub_epi8(_mm256_and_si256(both, low), eight);
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
    const __m256 p = _mm256_cvtepi32_ps(dot_s8(qw, qa));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), p, acc);
  }
  return hsum_ps(acc);
}

QUANT_TARGET float dot_q4_k(int64_t n, const BlockQ4_K* w, const BlockQ8_K* a) {
  const __m256i low = _mm256_set1_epi8(0xF);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) q4_k_scale_min(j, w[i].scales, &sc[j], &m[j]);
    int summ = 0;
    for (int j = 0; j < 8; ++j) summ += m[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * j));
      const __m256i q0 = _mm256_and_si256(q, low);
      const __m256i q1 = _mm256_and_si256(_mm256_srli_epi16(q, 4), low);
      const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs + 64 * j));
      const __m256i a1 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs + 64 * j + 32));
      const __m256i p0 =
          _mm256_madd_epi16(_mm256_maddubs_epi16(q0, a0), _mm256_set1_epi16(sc[2 * j]));
      const __m256i p1 =
          _mm256_madd_epi16(_mm256_maddubs_epi16(q1, a1), _mm256_set1_epi16(sc[2 * j + 1]));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
    }
    const __m256 s = _mm256_cvtepi32_ps(sumi);
    sum += a[i].d * (f16(w[i].d) * hsum_ps(s) - f16(w[i].dmin) * static_cast<float>(summ));
  }
  return sum;
}

QUANT_TARGET float dot_q6_k(int64_t n, const BlockQ6_K* w, const BlockQ8_K* a) {
  const __m256i low = _mm256_set1_epi8(0xF), two = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const int8_t* sc = w[i].scales;
    // The -32 offset of every value: sum_g sc[g] * 32 * (sum of a in group g of 16).
    int offset = 0;
    for (int g = 0; g < 16; ++g) offset += sc[g] * a[i].bsums[g];
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = w[i].ql + 64 * half;
      const uint8_t* qh = w[i].qh + 32 * half;
      const int8_t* s = sc + 8 * half;
      const int8_t* y = a[i].qs + 128 * half;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(l0, low),
                             _mm256_slli_epi16(_mm256_and_si256(h, two), 4));
      q[1] = _mm256_or_si256(_mm256_and_si256(l1, low),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two), 4));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two), 4));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two), 4));
      for (int k = 0; k < 4; ++k) {
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + 32 * k));
        // lanes 0-7 (elements 0-15) use scale 2k, lanes 8-15 (elements 16-31) scale 2k+1
        const __m256i scale =
            _mm256_set_m128i(_mm_set1_epi16(s[2 * k + 1]), _mm_set1_epi16(s[2 * k]));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q[k], av), scale));
      }
    }
    const float d = f16(w[i].d) * a[i].d;
    const __m256 v = _mm256_cvtepi32_ps(sumi);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), v, acc);
    acc = _mm256_add_ps(acc, _mm256_setr_ps(-d * 32.0f * static_cast<float>(offset), 0, 0, 0, 0,
                                            0, 0, 0));
  }
  return hsum_ps(acc);
}

// Byte i of the result is 0xFF where bit i of `bits` is set, else 0 (32 bits -> 32 bytes).
QUANT_TARGET inline __m256i bits_to_bytes(uint32_t bits) {
  // byte i takes source byte i / 8, then keeps bit i % 8
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// Q4_0's nibbles plus bit 4 from qh, minus 16: signed values in -16..15.
QUANT_TARGET float dot_q5_0(int64_t n, const BlockQ5_0* w, const BlockQ8A* a) {
  const __m256i low = _mm256_set1_epi8(0xF), bit4 = _mm256_set1_epi8(0x10), sixteen = _mm256_set1_epi8(16);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    uint32_t qh;
    std::memcpy(&qh, w[i].qh, 4);
    const __m256i hi = _mm256_and_si256(bits_to_bytes(qh), bit4);
    const __m256i qw = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(both, low), hi), sixteen);
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
    const __m256 p = _mm256_cvtepi32_ps(dot_s8(qw, qa));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), p, acc);
  }
  return hsum_ps(acc);
}

// d * (q . a) + m * (sum of a) for unsigned q in 0..31: maddubs takes q as it is, and the sum of
// a comes from maddubs against ones; both stay in vectors until the end.
QUANT_TARGET inline void add_min_block(__m256i qw, const BlockQ8A& a, float d, float m, __m256& acc, __m256& acc_m) {
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
  const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(qw, qa), ones16);
  const __m256i sa = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), qa), ones16);
  acc = _mm256_fmadd_ps(_mm256_set1_ps(d * a.d), _mm256_cvtepi32_ps(p), acc);
  acc_m = _mm256_fmadd_ps(_mm256_set1_ps(m * a.d), _mm256_cvtepi32_ps(sa), acc_m);
}

QUANT_TARGET float dot_q4_1(int64_t n, const BlockQ4_1* w, const BlockQ8A* a) {
  const __m256i low = _mm256_set1_epi8(0xF);
  __m256 acc = _mm256_setzero_ps(), acc_m = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].qs));
    const __m256i qw = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), low);
    add_min_block(qw, a[i], f16(w[i].d), f16(w[i].m), acc, acc_m);
  }
  return hsum_ps(_mm256_add_ps(acc, acc_m));
}

QUANT_TARGET float dot_q5_1(int64_t n, const BlockQ5_1* w, const BlockQ8A* a) {
  const __m256i low = _mm256_set1_epi8(0xF), bit4 = _mm256_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps(), acc_m = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].qs));
    uint32_t qh;
    std::memcpy(&qh, w[i].qh, 4);
    const __m256i qw = _mm256_or_si256(_mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), low),
                                       _mm256_and_si256(bits_to_bytes(qh), bit4));
    add_min_block(qw, a[i], f16(w[i].d), f16(w[i].m), acc, acc_m);
  }
  return hsum_ps(_mm256_add_ps(acc, acc_m));
}

// The 32 values of a block of 4-bit indices (16 bytes: low nibbles elements 0-15, high 16-31),
// looked up in a 16-entry int8 table by a byte shuffle.
QUANT_TARGET inline __m256i table_values(const int8_t* values, const uint8_t* qs) {
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i idx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0xF));
  return _mm256_shuffle_epi8(table, idx);
}

// |value| <= 127 and |a| <= 127: dot_s8's pair sums stay below 2^15.
QUANT_TARGET float dot_iq4_nl(int64_t n, const BlockIQ4_NL* w, const BlockQ8A* a) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
    const __m256 p = _mm256_cvtepi32_ps(dot_s8(table_values(kIq4Values, w[i].qs), qa));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), p, acc);
  }
  return hsum_ps(acc);
}

QUANT_TARGET float dot_iq4_xs(int64_t n, const BlockIQ4_XS* w, const BlockQ8_K* a) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i qw = table_values(kIq4Values, w[i].qs + 16 * j);
      const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs + 32 * j));
      const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qa, qw));
      const __m256i scale = _mm256_set1_epi16(static_cast<int16_t>(iq4_xs_scale(j, w[i])));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(pairs, scale));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum_ps(acc);
}

QUANT_TARGET float dot_mxfp4(int64_t n, const BlockMXFP4* w, const BlockQ8A* a) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK; ++i) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
    const __m256 p = _mm256_cvtepi32_ps(dot_s8(table_values(kMxfp4Values, w[i].qs), qa));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(e8m0_half(w[i].e) * a[i].d), p, acc);
  }
  return hsum_ps(acc);
}

// The 32 two-bit values of elements 128h + 32c + l (l < 32) of a Q2_K / Q3_K super-block, given
// the 32 bytes qs[32h..32h+32): bits 2c of each byte.
QUANT_TARGET inline __m256i two_bits(__m256i qs, int c) {
  return _mm256_and_si256(_mm256_srli_epi16(qs, 2 * c), _mm256_set1_epi8(3));
}

// The 16 sub-block scales of a Q2_K / Q3_K super-block (int16 lanes of s16) as the madd operand
// of each 32-element run (h, c): out[4h + c] has scale 8h + 2c in lanes 0-7 (the pair sums of
// elements 0-15) and 8h + 2c + 1 in lanes 8-15. Two permutes and eight byte shuffles per
// super-block instead of building each operand from scalars.
QUANT_TARGET inline void run_scales(__m256i s16, __m256i out[8]) {
  const __m256i half0 = _mm256_permute4x64_epi64(s16, 0x44);  // scales 0-7 in both 128-bit lanes
  const __m256i half1 = _mm256_permute4x64_epi64(s16, 0xEE);  // scales 8-15
  for (int c = 0; c < 4; ++c) {
    // low lane: word 2c, high lane: word 2c + 1, each repeated
    const __m256i pick = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(((4 * c + 3) << 8) | (4 * c + 2))),
                                          _mm_set1_epi16(static_cast<int16_t>(((4 * c + 1) << 8) | (4 * c))));
    out[c] = _mm256_shuffle_epi8(half0, pick);
    out[4 + c] = _mm256_shuffle_epi8(half1, pick);
  }
}

// d * sum_g sc_g (q . a)_g - dmin * sum_g m_g bsum_g; q in 0..3 unsigned, so maddubs takes it as is.
QUANT_TARGET float dot_q2_k(int64_t n, const BlockQ2_K* w, const BlockQ8_K* a) {
  const __m256i low4 = _mm256_set1_epi16(0xF);
  __m256 acc = _mm256_setzero_ps(), acc_m = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const __m256i packed = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].scales)));
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    const __m256i summ = _mm256_madd_epi16(_mm256_srli_epi16(packed, 4), bsums);  // mins x group sums
    __m256i scales[8];
    run_scales(_mm256_and_si256(packed, low4), scales);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * h));
      for (int c = 0; c < 4; ++c) {
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs + 128 * h + 32 * c));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(two_bits(qs, c), av), scales[4 * h + c]));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), _mm256_cvtepi32_ps(sumi), acc);
    acc_m = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].dmin) * a[i].d), _mm256_cvtepi32_ps(summ), acc_m);
  }
  return hsum_ps(_mm256_sub_ps(acc, acc_m));
}

// q = (low 2 bits | hmask bit << 2) - 4, in -4..3: maddubs takes the unsigned 0..7 part, and the
// -4 comes off once per super-block as 4 * sum_g sc_g * bsum_g; the signed 6-bit scales
// (-32..31) go in through madd.
QUANT_TARGET float dot_q3_k(int64_t n, const BlockQ3_K* w, const BlockQ8_K* a) {
  const __m256i four = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    // The 16 six-bit scales as bytes (q3_k_scale's packing, four at a time): word k holds the low
    // nibbles of bytes 0-3 (k = 0), 4-7 (1), their high nibbles (2, 3), and the high 2 bits from
    // bytes 8-11 at bit offset 2k. Inserted from registers: a 16-byte load of four 4-byte stores
    // just made would stall on store forwarding (it cost 40% of this loop).
    uint32_t packed[3];
    std::memcpy(packed, w[i].scales, 12);
    const uint32_t low4 = 0x0F0F0F0Fu, low2 = 0x03030303u;
    const __m128i six = _mm_setr_epi32(
        static_cast<int>((packed[0] & low4) | ((packed[2] & low2) << 4)),
        static_cast<int>((packed[1] & low4) | (((packed[2] >> 2) & low2) << 4)),
        static_cast<int>(((packed[0] >> 4) & low4) | (((packed[2] >> 4) & low2) << 4)),
        static_cast<int>(((packed[1] >> 4) & low4) | (((packed[2] >> 6) & low2) << 4)));
    const __m256i s16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(six), _mm256_set1_epi16(32));
    __m256i scales[8];
    run_scales(s16, scales);
    const __m256i hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].hmask));
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    // starts at -4 * sum_g sc_g * bsum_g
    __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(s16, bsums), 2));
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * h));
      for (int c = 0; c < 4; ++c) {
        // hmask bit k = 4h + c moved to bit 2 of each byte (16-bit shifts: the bits that cross
        // into the other byte never land on bit 2)
        const int k = 4 * h + c;
        const __m256i high = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(hmask, k - 2) : _mm256_slli_epi16(hmask, 2 - k), four);
        const __m256i q = _mm256_or_si256(two_bits(qs, c), high);
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs + 128 * h + 32 * c));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q, av), scales[4 * h + c]));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return hsum_ps(acc);
}

// Q4_K's loop with bit 4 of each value from qh (bit 2j of qh[l] for the low nibbles of group j,
// 2j + 1 for the high ones); values 0..31 keep maddubs' pair sums below 2^15.
QUANT_TARGET float dot_q5_k(int64_t n, const BlockQ5_K* w, const BlockQ8_K* a) {
  const __m256i low = _mm256_set1_epi8(0xF), one = _mm256_set1_epi8(1);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) q4_k_scale_min(j, w[i].scales, &sc[j], &m[j]);
    int summ = 0;
    for (int j = 0; j < 8; ++j) summ += m[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qh));
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * j));
      const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4);
      const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4);
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(q, low), h0);
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low), h1);
      const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs + 64 * j));
      const __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs + 64 * j + 32));
      const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(q0, a0), _mm256_set1_epi16(sc[2 * j]));
      const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(q1, a1), _mm256_set1_epi16(sc[2 * j + 1]));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(w[i].d) * a[i].d), _mm256_cvtepi32_ps(sumi), acc);
    mins += a[i].d * f16(w[i].dmin) * static_cast<float>(summ);
  }
  return hsum_ps(acc) - mins;
}

QUANT_TARGET float dot_f32(int64_t n, const float* a, const float* b) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

QUANT_TARGET void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

// ---------------------------------------------------------------- activation quantization

// The scale and 127 / amax exactly as quantize_row_q8a computes them; then v * id rounded to
// nearest even (vcvtps2dq under the default MXCSR, like lrintf) and packed with saturation.
QUANT_TARGET inline float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// 32 floats -> 32 int8 in order.
QUANT_TARGET inline __m256i quantize32(const float* v, __m256 id) {
  const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v), id));
  const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 8), id));
  const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 16), id));
  const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 24), id));
  const __m256i w01 = _mm256_packs_epi32(i0, i1);  // lanes interleaved by 128-bit halves
  const __m256i w23 = _mm256_packs_epi32(i2, i3);
  const __m256i b = _mm256_packs_epi16(w01, w23);
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

QUANT_TARGET inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

QUANT_TARGET void quantize_q8a(const float* x, BlockQ8A* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* v = x + i * kQK;
    __m256 m = _mm256_max_ps(abs_ps(_mm256_loadu_ps(v)), abs_ps(_mm256_loadu_ps(v + 8)));
    m = _mm256_max_ps(m, _mm256_max_ps(abs_ps(_mm256_loadu_ps(v + 16)), abs_ps(_mm256_loadu_ps(v + 24))));
    const float amax = hmax_ps(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[i].d = q8a_scale(amax);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), quantize32(v, _mm256_set1_ps(id)));
  }
}

QUANT_TARGET void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* v = x + i * kQK_K;
    __m256 m = _mm256_setzero_ps();
    for (int l = 0; l < kQK_K; l += 8) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(v + l)));
    const float amax = hmax_ps(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[i].d = amax != 0.0f ? 1.0f / id : 0.0f;
    const __m256 idv = _mm256_set1_ps(id);
    const __m256i ones = _mm256_set1_epi8(1);
    for (int l = 0; l < kQK_K; l += 32) {
      const __m256i q = quantize32(v + l, idv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + l), q);
      // sums of 16: pairs (maddubs with 1), then quads (madd with 1), then 4 quads per group
      const __m256i quads = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, q), _mm256_set1_epi16(1));
      alignas(32) int32_t s[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(s), quads);
      y[i].bsums[l / 16] = static_cast<int16_t>(s[0] + s[1] + s[2] + s[3]);
      y[i].bsums[l / 16 + 1] = static_cast<int16_t>(s[4] + s[5] + s[6] + s[7]);
    }
  }
}

// ---------------------------------------------------------------- exp, SiLU, attention

// e^x for x in about [-87, 88] (clamped outside), Cephes' expf polynomial: ~1 ulp.
QUANT_TARGET inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

QUANT_TARGET void silu_mul(float* g, const float* u, int64_t n) {
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
    _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

QUANT_TARGET void gelu_mul(float* g, const float* u, int64_t n) {
  constexpr float k2 = 2.0f * 0.7978845608028654f;  // 2 sqrt(2/pi)
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f), c = _mm256_set1_ps(0.044715f), mk2 = _mm256_set1_ps(-k2);
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 z = _mm256_fmadd_ps(_mm256_mul_ps(c, x), _mm256_mul_ps(x, x), x);  // x + 0.044715 x^3
    const __m256 e = exp_ps(_mm256_mul_ps(mk2, z));
    _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) {
    const float x = g[i];
    g[i] = x / (1.0f + std::exp(-k2 * (x + 0.044715f * x * x * x))) * u[i];
  }
}

// Sums of 8 vectors: lane h of the result = horizontal sum of a[h].
QUANT_TARGET inline __m256 hsum8(const __m256* a) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

// scores[p * nq + h0 + h] = scale * q_(h0+h) . k_p for HN heads (HN <= 8).
template <int HN>
QUANT_TARGET void attend_scores(int64_t len, int64_t bs, int64_t stride, const float* const* kb,
                                const float* q, int64_t nq, int64_t h0, int64_t hd, float scale,
                                float* scores) {
  for (int64_t p = 0; p < len; ++p) {
    const float* k = kb[p / bs] + (p % bs) * stride;
    __m256 acc[8];
    for (int h = 0; h < 8; ++h) acc[h] = _mm256_setzero_ps();
    for (int64_t i = 0; i < hd; i += 8) {
      const __m256 kv = _mm256_loadu_ps(k + i);
      for (int h = 0; h < HN; ++h) acc[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (h0 + h) * hd + i), kv, acc[h]);
    }
    float* s = scores + p * nq + h0;
    if (HN == 8) {
      _mm256_storeu_ps(s, _mm256_mul_ps(hsum8(acc), _mm256_set1_ps(scale)));
    } else {
      for (int h = 0; h < HN; ++h) s[h] = hsum_ps(acc[h]) * scale;
    }
  }
}

// out[0..hd) = sum_p w[p * w_stride] * v_p / sum: 64 dimensions (8 accumulators) at a time.
QUANT_TARGET void weighted_values(int64_t len, int64_t bs, int64_t stride, const float* const* vb,
                                  const float* w, int64_t w_stride, int64_t hd, float sum, float* out) {
  const __m256 iv = _mm256_set1_ps(1.0f / sum);
  for (int64_t i0 = 0; i0 < hd; i0 += 64) {
    const int64_t nv = std::min<int64_t>(64, hd - i0) / 8;
    __m256 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t p = 0; p < len; ++p) {
      const float* v = vb[p / bs] + (p % bs) * stride + i0;
      const __m256 wp = _mm256_broadcast_ss(w + p * w_stride);
      if (nv == 8) {
        for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(wp, _mm256_loadu_ps(v + 8 * j), acc[j]);
      } else {
        for (int j = 0; j < nv; ++j) acc[j] = _mm256_fmadd_ps(wp, _mm256_loadu_ps(v + 8 * j), acc[j]);
      }
    }
    for (int j = 0; j < nv; ++j) _mm256_storeu_ps(out + i0 + 8 * j, _mm256_mul_ps(acc[j], iv));
  }
}

QUANT_TARGET void attend(int64_t len, int64_t bs, int64_t stride, const float* const* kb,
                         const float* const* vb, const float* q, int64_t nq, int64_t hd,
                         float scale, float softcap, float* scratch, float* out) {
  if (hd % 8 != 0 || len <= 0) {
    quant_kernels_scalar()->attend(len, bs, stride, kb, vb, q, nq, hd, scale, softcap, scratch, out);
    return;
  }
  float* s = scratch;  // [len][nq]
  for (int64_t h0 = 0; h0 < nq; h0 += 8) {
    switch (std::min<int64_t>(8, nq - h0)) {
      case 8: attend_scores<8>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
      case 7: attend_scores<7>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
      case 6: attend_scores<6>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
      case 5: attend_scores<5>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
      case 4: attend_scores<4>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
      case 3: attend_scores<3>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
      case 2: attend_scores<2>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
      default: attend_scores<1>(len, bs, stride, kb, q, nq, h0, hd, scale, s); break;
    }
  }
  if (softcap > 0.0f) {
    // s = cap * tanh(s / cap), tanh(y) = 1 - 2 / (e^(2y) + 1) (exp_ps clamps: +-1 at the ends).
    const __m256 to_2y = _mm256_set1_ps(2.0f / softcap), cap = _mm256_set1_ps(softcap);
    const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    const int64_t count = len * nq;
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
      const __m256 e = exp_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i), to_2y));
      _mm256_storeu_ps(s + i, _mm256_mul_ps(cap, _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)))));
    }
    for (; i < count; ++i) s[i] = softcap * std::tanh(s[i] / softcap);
  }
  // Softmax per head (column h of s): max, exp, sum. Groups of 8 heads are one vector per position.
  float sums[64];
  for (int64_t c0 = 0; c0 < nq; c0 += 64) {
    const int64_t cn = std::min<int64_t>(64, nq - c0);
    if (cn % 8 == 0) {
      for (int64_t v0 = 0; v0 < cn; v0 += 8) {
        float* col = s + c0 + v0;
        __m256 mx = _mm256_set1_ps(-INFINITY);
        for (int64_t p = 0; p < len; ++p) mx = _mm256_max_ps(mx, _mm256_loadu_ps(col + p * nq));
        __m256 sum = _mm256_setzero_ps();
        for (int64_t p = 0; p < len; ++p) {
          const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(col + p * nq), mx));
          _mm256_storeu_ps(col + p * nq, e);
          sum = _mm256_add_ps(sum, e);
        }
        _mm256_storeu_ps(sums + v0, sum);
      }
    } else {
      float mx[64];
      for (int64_t h = 0; h < cn; ++h) mx[h] = -INFINITY;
      for (int64_t p = 0; p < len; ++p)
        for (int64_t h = 0; h < cn; ++h) mx[h] = std::max(mx[h], s[p * nq + c0 + h]);
      for (int64_t h = 0; h < cn; ++h) sums[h] = 0.0f;
      for (int64_t p = 0; p < len; ++p) {
        for (int64_t h = 0; h < cn; ++h) {
          const float e = std::exp(s[p * nq + c0 + h] - mx[h]);
          s[p * nq + c0 + h] = e;
          sums[h] += e;
        }
      }
    }
    for (int64_t h = 0; h < cn; ++h) weighted_values(len, bs, stride, vb, s + c0 + h, nq, hd, sums[h], out + (c0 + h) * hd);
  }
}

const QuantKernels kAvx2{"avx2",       dot_q8_0,     dot_q4_0,      dot_q4_k, dot_q6_k,
                         dot_q5_0,     dot_q2_k,     dot_q3_k,      dot_q5_k, dot_q4_1,
                         dot_q5_1,     dot_iq4_nl,   dot_iq4_xs,    dot_mxfp4,
                         dot_f32,      f16_to_f32,   nullptr,       nullptr,  nullptr, nullptr, quantize_q8a,
                         quantize_q8_k, attend,      silu_mul,
                         gelu_mul};

}  // namespace

const QuantKernels* quant_kernels_avx2() {
  static const bool ok = simd_level_supported(SimdLevel::kAvx2) && __builtin_cpu_supports("f16c");
  return ok ? &kAvx2 : nullptr;
}

}  // namespace platform::cpu

#else

namespace platform::cpu {
const QuantKernels* quant_kernels_avx2() { return nullptr; }
}  // namespace platform::cpu

#endif
