// AVX-512 (F, BW, VL, VNNI) tile kernels for quantized weights: several weight rows times several
// activation rows per call, each weight block loaded and unpacked once and applied to every
// token of the tile from registers (see quant_kernels.h). The integer products use VNNI:
//
//   Q8_0 x Q8A:  vpdpbusd wants unsigned x signed bytes. The signed weights are flipped to
//                unsigned once per block (w ^ 0x80 = w + 128) and the accumulator starts at
//                -128 * (sum of the activations), computed once per token and block, so
//                dpbusd(-128*sum(a), w + 128, a) = w . a exactly.
//   Q4_K x Q8_K: the 4-bit quants are already unsigned: vpmaddubsw gives 16 pair sums per sub-block
//                of 32 (at most 2*15*127, no saturation) and vpdpwssd multiplies them by the
//                sub-block's 6-bit scale while accumulating; the mins go through the activation
//                sums of 16 (bsums) with one vpmaddwd.
//
// The vectors are 256 bits (AVX-512VL encodings): on Zen 4, which splits 512-bit operations in
// two, they give the same multiply throughput as 512-bit ones and keep one block per register.
// Everything else (dot products, quantization, attention) comes from the AVX2 table.
#include "../core/simd_target.h"
#include "quant_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#define Q512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace platform::cpu {
namespace {

Q512_TARGET inline float hsum_ps(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// ---------------------------------------------------------------- Q8_0

template <int R, int T>
Q512_TARGET void tile_q8_0(int64_t nb, const uint8_t* w, int64_t row_bytes, const BlockQ8A* a,
                           int64_t a_stride, float* y, int64_t ldy) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < nb; ++b) {
    __m256i wq[R];
    __m256 wd[R];
    for (int r = 0; r < R; ++r) {
      const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(w + r * row_bytes) + b;
      wq[r] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs)), flip);
      wd[r] = _mm256_set1_ps(_cvtsh_ss(blk->d));
    }
    for (int t = 0; t < T; ++t) {
      const BlockQ8A* ab = a + t * a_stride + b;
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab->qs));
      // -128 * (sum of each 4 activations), the start of every row's accumulator
      const __m256i nsum = _mm256_sub_epi32(_mm256_setzero_si256(),
                                            _mm256_dpbusd_epi32(_mm256_setzero_si256(), flip, av));
      const __m256 ad = _mm256_set1_ps(ab->d);
      for (int r = 0; r < R; ++r) {
        const __m256i dp = _mm256_dpbusd_epi32(nsum, wq[r], av);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dp), _mm256_mul_ps(wd[r], ad), acc[r][t]);
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int r = 0; r < R; ++r) y[t * ldy + r] = hsum_ps(acc[r][t]);
}

// ---------------------------------------------------------------- Q4_K

// The 8 six-bit scales and 8 mins of a Q4_K block (q4_k_scale_min for all j at once).
inline void q4_k_unpack(const uint8_t* scales, uint64_t* sc, uint64_t* mn) {
  uint32_t u[3];
  std::memcpy(u, scales, 12);
  const uint32_t sc03 = u[0] & 0x3f3f3f3fu, mn03 = u[1] & 0x3f3f3f3fu;
  const uint32_t sc47 = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  const uint32_t mn47 = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  *sc = sc03 | (static_cast<uint64_t>(sc47) << 32);
  *mn = mn03 | (static_cast<uint64_t>(mn47) << 32);
}

template <int T>
Q512_TARGET void tile_q4_k(int64_t nsb, const uint8_t* w, const BlockQ8_K* a, int64_t a_stride,
                           float* y, int64_t ldy) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0xF);
  const BlockQ4_K* row = reinterpret_cast<const BlockQ4_K*>(w);
  for (int64_t b = 0; b < nsb; ++b) {
    const BlockQ4_K& blk = row[b];
    uint64_t sc64, mn64;
    q4_k_unpack(blk.scales, &sc64, &mn64);
    // scale j as an int16 pair (sc_j, sc_j) in one dword, for vpdpwssd
    const __m128i sc16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(sc64)));
    alignas(32) int32_t sc[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(sc),
                       _mm256_set_m128i(_mm_unpackhi_epi16(sc16, sc16), _mm_unpacklo_epi16(sc16, sc16)));
    // min j for both groups of 16 of sub-block j, against bsums[2j], bsums[2j + 1]
    const __m128i mn16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(mn64)));
    const __m256i mins = _mm256_set_m128i(_mm_unpackhi_epi16(mn16, mn16), _mm_unpacklo_epi16(mn16, mn16));
    __m256i q[8];
    for (int k = 0; k < 4; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * k));
      q[2 * k] = _mm256_and_si256(v, low);
      q[2 * k + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    }
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d));
    const __m256 dmin = _mm256_set1_ps(_cvtsh_ss(blk.dmin));
    for (int t = 0; t < T; ++t) {
      const BlockQ8_K& ab = a[t * a_stride + b];
      __m256i s = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs + 32 * j));
        s = _mm256_dpwssd_epi32(s, _mm256_maddubs_epi16(q[j], av), _mm256_set1_epi32(sc[j]));
      }
      const __m256i m = _mm256_madd_epi16(mins, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)));
      const __m256 ad = _mm256_set1_ps(ab.d);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, ad), acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(dmin, ad), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum_ps(acc[t]);
}

// ---------------------------------------------------------------- drivers

constexpr int kQ8R = 4, kQ8T = 4;  // Q8_0 tile: 16 accumulators + 4 weight blocks + 4 scales
constexpr int kQ4T = 8;            // Q4_K tile: one row (8 unpacked sub-blocks) x 8 tokens

using Q8Tile = void (*)(int64_t, const uint8_t*, int64_t, const BlockQ8A*, int64_t, float*, int64_t);
using Q4Tile = void (*)(int64_t, const uint8_t*, const BlockQ8_K*, int64_t, float*, int64_t);

template <int R>
constexpr Q8Tile q8_tile(int t) {
  return t == 1 ? tile_q8_0<R, 1> : t == 2 ? tile_q8_0<R, 2> : t == 3 ? tile_q8_0<R, 3> : tile_q8_0<R, 4>;
}

Q512_TARGET void gemm_q8_0(int64_t cols, const uint8_t* w, int64_t row_bytes, int64_t rows,
                           const BlockQ8A* a, int64_t a_stride, int64_t n, float* y, int64_t ldy) {
  static const Q8Tile tiles[kQ8R][kQ8T] = {
      {q8_tile<1>(1), q8_tile<1>(2), q8_tile<1>(3), q8_tile<1>(4)},
      {q8_tile<2>(1), q8_tile<2>(2), q8_tile<2>(3), q8_tile<2>(4)},
      {q8_tile<3>(1), q8_tile<3>(2), q8_tile<3>(3), q8_tile<3>(4)},
      {q8_tile<4>(1), q8_tile<4>(2), q8_tile<4>(3), q8_tile<4>(4)},
  };
  const int64_t nb = cols / kQK;
  for (int64_t r0 = 0; r0 < rows; r0 += kQ8R) {
    const int64_t nr = std::min<int64_t>(kQ8R, rows - r0);
    for (int64_t t0 = 0; t0 < n; t0 += kQ8T) {
      const int64_t nt = std::min<int64_t>(kQ8T, n - t0);
      tiles[nr - 1][nt - 1](nb, w + r0 * row_bytes, row_bytes, a + t0 * a_stride, a_stride, y + t0 * ldy + r0, ldy);
    }
  }
}

Q512_TARGET void gemm_q4_k(int64_t cols, const uint8_t* w, int64_t row_bytes, int64_t rows,
                           const BlockQ8_K* a, int64_t a_stride, int64_t n, float* y, int64_t ldy) {
  static const Q4Tile tiles[kQ4T] = {tile_q4_k<1>, tile_q4_k<2>, tile_q4_k<3>, tile_q4_k<4>,
                                     tile_q4_k<5>, tile_q4_k<6>, tile_q4_k<7>, tile_q4_k<8>};
  const int64_t nsb = cols / kQK_K;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t0 = 0; t0 < n; t0 += kQ4T) {
      const int64_t nt = std::min<int64_t>(kQ4T, n - t0);
      tiles[nt - 1](nsb, w + r * row_bytes, a + t0 * a_stride, a_stride, y + t0 * ldy + r, ldy);
    }
  }
}

QuantKernels make_table() {
  QuantKernels k = *quant_kernels_avx2();
  k.name = "avx512-vnni";
  k.gemm_q8_0 = gemm_q8_0;
  k.gemm_q4_k = gemm_q4_k;
  return k;
}

}  // namespace

const QuantKernels* quant_kernels_avx512() {
  static const bool ok = quant_kernels_avx2() != nullptr && simd_level_supported(SimdLevel::kAvx512) &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512vnni");
  if (!ok) return nullptr;
  static const QuantKernels table = make_table();
  return &table;
}

}  // namespace platform::cpu

#else

namespace platform::cpu {
const QuantKernels* quant_kernels_avx512() { return nullptr; }
}  // namespace platform::cpu

#endif
