// AVX-512 (F, BW, VL, VNNI) tile products for Q8_0, Q4_K, Q5_K and Q6_K weights (see quant_kernels.h):
// several weight rows times several activation rows per call, each weight block loaded and
// unpacked once and applied to every token of the tile. Two shapes, by token count:
//
// - Fewer than 8 tokens (decoding): row tiles on the weights as stored. One 256-bit vector holds
//   one block of one row; vpdpbusd leaves 8 partial sums per (row, token, block), scaled and
//   accumulated in f32 and summed at the end. Q8_0: vpdpbusd wants unsigned x signed bytes, so
//   the weights are flipped to unsigned once per block (w ^ 0x80 = w + 128) and each sum starts at
//   -128 * (sum of the activations): dpbusd(-128*sum(a), w + 128, a) = w . a exactly. Q4_K: the
//   quants are unsigned already; vpmaddubsw gives pair sums (at most 2*15*127, no saturation) and
//   vpdpwssd applies the sub-block's 6-bit scale while accumulating; the mins go through the
//   activation sums of 16 (bsums) with one vpmaddwd. Q5_K: Q4_K's with the fifth bit (qh) or-ed
//   in. Q6_K: its quants taken unsigned (0..63), the int8 scale per 16 elements applied by
//   vpdpwssd, and the offset of 32 taken off through the bsums (32 * sum of scale x bsum).
// - 8 tokens or more (prefill, batched decoding): 16 rows at a time are packed into a panel where
//   each 32-bit lane of a 512-bit vector belongs to one row (an 8x8 transpose of 4-byte groups per
//   half), so one vpdpbusd multiplies 16 rows by the same 4 activations (a 32-bit broadcast) with
//   every lane useful: a 32-element block of 16 rows x 1 token costs 8 vpdpbusd plus a
//   conversion and two multiply-adds, where the row tiles spend 16 x 4 instructions. The panel is
//   packed once per item (16 rows x a chunk of tokens) and reused for every token from L1/L2.
//   Q4_K / Q5_K apply the 6-bit scale per sub-block of 32 (vpmulld), Q6_K its int8 scale per 16,
//   each group's sum starting from -32 times its activation sum.
//
// The single-token kernels walk one row at a time (one sequential stream: the hardware prefetchers
// handle it best); multi-row tiles prefetch the next tile's rows in order.
// Everything else (dot products, quantization, attention, SiLU) comes from the AVX2 table.
#include "../../core/simd_target.h"
#include "quant_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

// GCC 12 warns about the deliberately undefined pass-through operand inside _mm512_cvtepi32_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define Q512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define Q512_LAMBDA __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace platform::cpu {
namespace {

Q512_TARGET inline float hsum_ps(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// ---------------------------------------------------------------- Q8_0 row tiles

template <int R, int T>
Q512_TARGET void tile_q8_0(int64_t nb, const uint8_t* w, int64_t row_bytes, const BlockQ8A* a,
                           int64_t a_stride, float* y, int64_t ldy) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  // The next tile's rows follow these R rows in memory: stream them in, in order, while this tile
  // computes (the hardware prefetchers do badly on R interleaved streams).
  const char* next = reinterpret_cast<const char*>(w + R * row_bytes);
  for (int64_t b = 0; b < nb; ++b) {
    if (R > 1) {
      _mm_prefetch(next + b * R * 34, _MM_HINT_T0);
      _mm_prefetch(next + b * R * 34 + 64, _MM_HINT_T0);
      if (R > 2) _mm_prefetch(next + b * R * 34 + 128, _MM_HINT_T0);
    }
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

// ---------------------------------------------------------------- Q8_0 panels

// -128 * (sum of the 32 quants) of every activation block: sad against 0 of the quants + 128.
Q512_TARGET void q8a_neg_sums(const BlockQ8A* a, int64_t a_stride, int64_t n, int64_t nb, int32_t* out) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i q = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t * a_stride + b].qs)), flip);
      const __m256i s = _mm256_sad_epu8(q, _mm256_setzero_si256());  // 4 x sum of 8 (q + 128)
      const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
      const int64_t sum = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1) - 32 * 128;
      out[t * nb + b] = static_cast<int32_t>(-128 * sum);
    }
  }
}

struct alignas(64) PanelQ8 {
  float d[16];        // the 16 rows' block scales
  uint8_t q[8 * 64];  // group g: 4 bytes per row; rows 0-7 in [64g, 64g + 32), rows 8-15 after
};
static_assert(sizeof(PanelQ8) == 576, "panel block layout");

Q512_TARGET void pack_q8_0(const uint8_t* w, int64_t row_bytes, int64_t nrows, int64_t nb, PanelQ8* out) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const char* next = reinterpret_cast<const char*>(w + 16 * row_bytes);
  for (int64_t b = 0; b < nb; ++b) {
    // The next panel's rows, in order, into L2 (into L1 they would be evicted by this panel's
    // token passes before they are packed).
    for (int l = 0; l < 9; ++l) _mm_prefetch(next + b * 16 * 34 + 64 * l, _MM_HINT_T1);
    for (int half = 0; half < 2; ++half) {
      __m256i r[8];
      for (int i = 0; i < 8; ++i) {
        const int64_t row = 8 * half + i;
        if (row < nrows) {
          const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(w + row * row_bytes) + b;
          r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs));
          out[b].d[row] = _cvtsh_ss(blk->d);
        } else {
          r[i] = _mm256_setzero_si256();
          out[b].d[row] = 0.0f;
        }
      }
      const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
      const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
      const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
      const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
      const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
      const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
      const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
      const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
      uint8_t* q = out[b].q + 32 * half;
#define put(g, v) _mm256_store_si256(reinterpret_cast<__m256i*>(q + 64 * (g)), _mm256_xor_si256((v), flip))
      put(0, _mm256_permute2x128_si256(u0, u4, 0x20));
      put(1, _mm256_permute2x128_si256(u1, u5, 0x20));
      put(2, _mm256_permute2x128_si256(u2, u6, 0x20));
      put(3, _mm256_permute2x128_si256(u3, u7, 0x20));
      put(4, _mm256_permute2x128_si256(u0, u4, 0x31));
      put(5, _mm256_permute2x128_si256(u1, u5, 0x31));
      put(6, _mm256_permute2x128_si256(u2, u6, 0x31));
      put(7, _mm256_permute2x128_si256(u3, u7, 0x31));
#undef put
    }
  }
}

template <int T>
Q512_TARGET void panel_q8_0(const PanelQ8* p, int64_t nb, const BlockQ8A* a, int64_t a_stride,
                                const int32_t* nsum, float* y, int64_t ldy, int64_t nrows) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m512i w[8];
    for (int g = 0; g < 8; ++g) w[g] = _mm512_load_si512(p[b].q + 64 * g);
    const __m512 dw = _mm512_load_ps(p[b].d);
    for (int t = 0; t < T; ++t) {
      const BlockQ8A& ab = a[t * a_stride + b];
      __m512i dp = _mm512_set1_epi32(nsum[t * nb + b]);
      for (int g = 0; g < 8; ++g) {
        int32_t a4;
        std::memcpy(&a4, ab.qs + 4 * g, 4);
        dp = _mm512_dpbusd_epi32(dp, w[g], _mm512_set1_epi32(a4));
      }
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dp), _mm512_mul_ps(dw, _mm512_set1_ps(ab.d)), acc[t]);
    }
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << nrows) - 1);
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
}

constexpr int kPanelT = 8;  // tokens per pass over a panel: 8 independent vpdpbusd chains

using PanelFn = void (*)(const PanelQ8*, int64_t, const BlockQ8A*, int64_t, const int32_t*, float*, int64_t, int64_t);

Q512_TARGET void gemm_q8_0_panels(int64_t nb, const uint8_t* w, int64_t row_bytes, int64_t rows,
                                  const BlockQ8A* a, int64_t a_stride, int64_t n, float* y, int64_t ldy) {
  static const PanelFn fns[kPanelT] = {panel_q8_0<1>, panel_q8_0<2>, panel_q8_0<3>, panel_q8_0<4>,
                                       panel_q8_0<5>, panel_q8_0<6>, panel_q8_0<7>, panel_q8_0<8>};
  static thread_local std::vector<PanelQ8> panel;
  static thread_local std::vector<int32_t> nsum;
  panel.resize(static_cast<size_t>(nb));
  nsum.resize(static_cast<size_t>(n * nb));
  q8a_neg_sums(a, a_stride, n, nb, nsum.data());
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t nr = std::min<int64_t>(16, rows - r0);
    pack_q8_0(w + r0 * row_bytes, row_bytes, nr, nb, panel.data());
    for (int64_t t0 = 0; t0 < n; t0 += kPanelT) {
      const int64_t nt = std::min<int64_t>(kPanelT, n - t0);
      fns[nt - 1](panel.data(), nb, a + t0 * a_stride, a_stride, nsum.data() + t0 * nb, y + t0 * ldy + r0, ldy, nr);
    }
  }
}

// ---------------------------------------------------------------- Q4_K row tiles

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

// Q4_K and Q5_K (Block): Q5_K adds the fifth bit of each quant from qh (values 0..31; pair sums
// at most 2*31*128, still no saturation in vpmaddubsw).
template <typename Block, int T>
Q512_TARGET void tile_q4_k(int64_t nsb, const uint8_t* w, const BlockQ8_K* a, int64_t a_stride,
                           float* y, int64_t ldy) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0xF);
  const Block* row = reinterpret_cast<const Block*>(w);
  for (int64_t b = 0; b < nsb; ++b) {
    const Block& blk = row[b];
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
    if constexpr (std::is_same_v<Block, BlockQ5_K>) {
      // element l of sub-block j has its fifth bit in bit j of qh[l]
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh));
      const __m256i bit4 = _mm256_set1_epi8(0x10);
      for (int j = 0; j < 8; ++j) {
        const __m256i h = j <= 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
        q[j] = _mm256_ternarylogic_epi32(q[j], h, bit4, 0xF8);  // q | (h & 0x10)
      }
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

// ---------------------------------------------------------------- Q4_K panels

// The 4-bit quants of 16 rows unpacked and transposed like Q8_0's (lanes = rows, 4 elements per
// 32-bit lane), already unsigned. Per sub-block of 32: 8 vpdpbusd give each row's integer dot and
// one vpmulld applies the row's 6-bit scale; the superblock's sum is converted and scaled (d) once;
// the mins go through the activation sums of 16 with 8 vpdpwssd per superblock ((m, m) int16
// pairs against (bsum[2j], bsum[2j + 1])).
struct alignas(64) PanelQ4K {
  uint8_t q[8][8 * 64];  // sub-block j, group g: 4 quants per row, rows 0-15
  int32_t sc[8][16];     // sub-block scale of each row
  int32_t mn[8][16];     // (min, min) as int16 pairs
  float d[16], dmin[16];
};

// 16 rows x 8 dwords (one 32-byte chunk of each row's quants) transposed to 8 vectors: vector g
// holds dword g of rows 0-15. Rows at or past nrows read as zero.
Q512_TARGET inline void transpose_16x8(const uint8_t* const* src, int64_t nrows, __m512i* out) {
  __m256i g[2][8];
  for (int half = 0; half < 2; ++half) {
    __m256i r[8];
    for (int i = 0; i < 8; ++i) {
      const int64_t row = 8 * half + i;
      r[i] = row < nrows ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src[row])) : _mm256_setzero_si256();
    }
    const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    g[half][0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    g[half][1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    g[half][2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    g[half][3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    g[half][4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    g[half][5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    g[half][6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    g[half][7] = _mm256_permute2x128_si256(u3, u7, 0x31);
  }
  for (int k = 0; k < 8; ++k) out[k] = _mm512_inserti64x4(_mm512_castsi256_si512(g[0][k]), g[1][k], 1);
}

// Packing works on 16 rows at once: the scales through 32-bit gathers (lane = row) and the same
// shifts and masks as q4_k_unpack; the quants as raw dwords (dword g of chunk k holds elements
// 4g..4g+3 of sub-block 2k in its low nibbles and of sub-block 2k + 1 in its high nibbles), so
// one transpose serves two sub-blocks.
// Q5_K (Block) is packed into the same panel: its qh transposed like the quants (dword g of each
// row's qh holds the fifth bits of elements 4g..4g+3 of every sub-block) and or-ed in.
template <typename Block>
Q512_TARGET void pack_q4_k(const uint8_t* w, int64_t row_bytes, int64_t nrows, int64_t nsb, PanelQ4K* out) {
  const __m512i low = _mm512_set1_epi8(0xF);
  const __mmask16 live = static_cast<__mmask16>((1u << nrows) - 1);
  const __m512i offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(static_cast<int32_t>(row_bytes)));
  const __m512i m6 = _mm512_set1_epi32(0x3f3f3f3f), m4 = _mm512_set1_epi32(0x0f0f0f0f), m2 = _mm512_set1_epi32(0x03030303);
  const __m512i byte = _mm512_set1_epi32(0xFF);
  const char* next = reinterpret_cast<const char*>(w + 16 * row_bytes);
  for (int64_t b = 0; b < nsb; ++b) {
    constexpr int64_t kPanelBytes = 16 * static_cast<int64_t>(sizeof(Block));
    for (int64_t l = 0; l < kPanelBytes; l += 64) _mm_prefetch(next + b * kPanelBytes + l, _MM_HINT_T1);  // as pack_q8_0
    PanelQ4K& P = out[b];
    const uint8_t* base = w + b * static_cast<int64_t>(sizeof(Block));
    auto gather = [&](int offset) Q512_LAMBDA {
      return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, offsets, base + offset, 1);
    };
    const __m512i dm = gather(0), u0 = gather(4), u1 = gather(8), u2 = gather(12);
    const __m512i sc03 = _mm512_and_si512(u0, m6), mn03 = _mm512_and_si512(u1, m6);
    const __m512i sc47 = _mm512_or_si512(_mm512_and_si512(u2, m4), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), m2), 4));
    const __m512i mn47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), m4),
                                         _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), m2), 4));
    for (int j = 0; j < 4; ++j) {
      const __m512i s0 = _mm512_and_si512(_mm512_srli_epi32(sc03, 8 * j), byte);
      const __m512i s1 = _mm512_and_si512(_mm512_srli_epi32(sc47, 8 * j), byte);
      const __m512i n0 = _mm512_and_si512(_mm512_srli_epi32(mn03, 8 * j), byte);
      const __m512i n1 = _mm512_and_si512(_mm512_srli_epi32(mn47, 8 * j), byte);
      _mm512_store_si512(P.sc[j], s0);
      _mm512_store_si512(P.sc[j + 4], s1);
      _mm512_store_si512(P.mn[j], _mm512_or_si512(n0, _mm512_slli_epi32(n0, 16)));
      _mm512_store_si512(P.mn[j + 4], _mm512_or_si512(n1, _mm512_slli_epi32(n1, 16)));
    }
    _mm512_store_ps(P.d, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm)));
    _mm512_store_ps(P.dmin, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dm, 16))));
    const uint8_t* src[16];
    __m512i qh[8];
    if constexpr (std::is_same_v<Block, BlockQ5_K>) {
      for (int i = 0; i < 16; ++i) src[i] = base + i * row_bytes + offsetof(BlockQ5_K, qh);
      transpose_16x8(src, nrows, qh);
    }
    const __m512i one = _mm512_set1_epi8(1);
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 16; ++i) src[i] = base + i * row_bytes + offsetof(Block, qs) + 32 * k;
      __m512i v[8];
      transpose_16x8(src, nrows, v);
      for (int g = 0; g < 8; ++g) {
        __m512i lo = _mm512_and_si512(v[g], low), hi = _mm512_and_si512(_mm512_srli_epi16(v[g], 4), low);
        if constexpr (std::is_same_v<Block, BlockQ5_K>) {
          // sub-blocks 2k and 2k + 1 take bits 2k and 2k + 1 of qh, moved to bit 4
          lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh[g], 2 * k), one), 4));
          hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh[g], 2 * k + 1), one), 4));
        }
        _mm512_store_si512(P.q[2 * k] + 64 * g, lo);
        _mm512_store_si512(P.q[2 * k + 1] + 64 * g, hi);
      }
    }
  }
}

template <int T>
Q512_TARGET void panel_q4_k(const PanelQ4K* p, int64_t nsb, const BlockQ8_K* a, int64_t a_stride,
                            float* y, int64_t ldy, int64_t nrows) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nsb; ++b) {
    const PanelQ4K& P = p[b];
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      __m512i w[8];
      for (int g = 0; g < 8; ++g) w[g] = _mm512_load_si512(P.q[j] + 64 * g);
      const __m512i sc = _mm512_load_si512(P.sc[j]);
      for (int t = 0; t < T; ++t) {
        const int8_t* aq = a[t * a_stride + b].qs + 32 * j;
        __m512i dp = _mm512_setzero_si512();
        for (int g = 0; g < 8; ++g) {
          int32_t a4;
          std::memcpy(&a4, aq + 4 * g, 4);
          dp = _mm512_dpbusd_epi32(dp, w[g], _mm512_set1_epi32(a4));
        }
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dp, sc));
      }
    }
    const __m512 d = _mm512_load_ps(P.d), dmin = _mm512_load_ps(P.dmin);
    for (int t = 0; t < T; ++t) {
      const BlockQ8_K& ab = a[t * a_stride + b];
      __m512i m = _mm512_setzero_si512();
      for (int j = 0; j < 8; ++j) {
        int32_t bs2;
        std::memcpy(&bs2, ab.bsums + 2 * j, 4);
        m = _mm512_dpwssd_epi32(m, _mm512_load_si512(P.mn[j]), _mm512_set1_epi32(bs2));
      }
      const __m512 ad = _mm512_set1_ps(ab.d);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, ad), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dmin, ad), acc[t]);
    }
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << nrows) - 1);
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
}

using PanelQ4Fn = void (*)(const PanelQ4K*, int64_t, const BlockQ8_K*, int64_t, float*, int64_t, int64_t);

template <typename Block>
Q512_TARGET void gemm_q4_k_panels(int64_t nsb, const uint8_t* w, int64_t row_bytes, int64_t rows,
                                  const BlockQ8_K* a, int64_t a_stride, int64_t n, float* y, int64_t ldy) {
  static const PanelQ4Fn fns[kPanelT] = {panel_q4_k<1>, panel_q4_k<2>, panel_q4_k<3>, panel_q4_k<4>,
                                         panel_q4_k<5>, panel_q4_k<6>, panel_q4_k<7>, panel_q4_k<8>};
  static thread_local std::vector<PanelQ4K> panel;
  panel.resize(static_cast<size_t>(nsb));
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t nr = std::min<int64_t>(16, rows - r0);
    pack_q4_k<Block>(w + r0 * row_bytes, row_bytes, nr, nsb, panel.data());
    for (int64_t t0 = 0; t0 < n; t0 += kPanelT) {
      const int64_t nt = std::min<int64_t>(kPanelT, n - t0);
      fns[nt - 1](panel.data(), nsb, a + t0 * a_stride, a_stride, y + t0 * ldy + r0, ldy, nr);
    }
  }
}

// ---------------------------------------------------------------- Q6_K row tiles

// The quants of sub-block s = 4h + k (elements 128h + 32k + l, l < 32), unsigned 0..63: low
// nibbles of ql[64h + 32(k & 1) + l] (high nibbles for k >= 2), bits 2k, 2k + 1 of qh[32h + l]
// on top. Their scales are sc[2s] (l < 16) and sc[2s + 1]. The offset of 32 comes off as
// 32 * sum_i sc_i * bsum_i (bsums: the activation sums of 16), so value = d * sc * (q - 32).
template <int T>
Q512_TARGET void tile_q6_k(int64_t nsb, const uint8_t* w, const BlockQ8_K* a, int64_t a_stride,
                           float* y, int64_t ldy) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0xF), two = _mm256_set1_epi8(3);
  const BlockQ6_K* row = reinterpret_cast<const BlockQ6_K*>(w);
  for (int64_t b = 0; b < nsb; ++b) {
    const BlockQ6_K& blk = row[b];
    __m256i q[8];
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.ql + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.ql + 64 * h + 32));
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h));
      const __m256i lo[4] = {_mm256_and_si256(l0, low), _mm256_and_si256(l1, low),
                             _mm256_and_si256(_mm256_srli_epi16(l0, 4), low),
                             _mm256_and_si256(_mm256_srli_epi16(l1, 4), low)};
      for (int k = 0; k < 4; ++k)
        q[4 * h + k] = _mm256_or_si256(lo[k], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), two), 4));
    }
    // the 16 scales as int16; per sub-block s, sc[2s] on the low 8 pair sums, sc[2s + 1] on the high 8
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
    __m256i sc[8];
    for (int s = 0; s < 8; ++s)
      sc[s] = _mm256_permutexvar_epi16(_mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(2 * s + 1)),
                                                        _mm_set1_epi16(static_cast<int16_t>(2 * s))), sc16);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(blk.d));
    for (int t = 0; t < T; ++t) {
      const BlockQ8_K& ab = a[t * a_stride + b];
      // -32 * sum_i sc_i * bsum_i to start from
      __m256i s = _mm256_slli_epi32(
          _mm256_sub_epi32(_mm256_setzero_si256(),
                           _mm256_madd_epi16(sc16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)))),
          5);
      for (int j = 0; j < 8; ++j) {
        const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs + 32 * j));
        s = _mm256_dpwssd_epi32(s, _mm256_maddubs_epi16(q[j], av), sc[j]);
      }
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(d, _mm256_set1_ps(ab.d)), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum_ps(acc[t]);
}

// ---------------------------------------------------------------- Q6_K panels

// The 6-bit quants of 16 rows transposed like Q4_K's, per group i of 16 elements (scale i): 4
// vpdpbusd per row and token, started from -32 * bsum_i (the offset), then one vpmulld by the
// rows' int8 scale.
struct alignas(64) PanelQ6K {
  uint8_t q[16][4 * 64];  // group i of 16 elements, dword g: 4 quants per row, rows 0-15
  int32_t sc[16][16];     // scale i of each row
  float d[16];
};

Q512_TARGET void pack_q6_k(const uint8_t* w, int64_t row_bytes, int64_t nrows, int64_t nsb, PanelQ6K* out) {
  const __mmask16 live = static_cast<__mmask16>((1u << nrows) - 1);
  const __m512i offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(static_cast<int32_t>(row_bytes)));
  const __m512i low = _mm512_set1_epi8(0xF), two = _mm512_set1_epi8(3);
  const char* next = reinterpret_cast<const char*>(w + 16 * row_bytes);
  constexpr int64_t kPanelBytes = 16 * static_cast<int64_t>(sizeof(BlockQ6_K));
  for (int64_t b = 0; b < nsb; ++b) {
    for (int64_t l = 0; l < kPanelBytes; l += 64) _mm_prefetch(next + b * kPanelBytes + l, _MM_HINT_T1);  // as pack_q8_0
    PanelQ6K& P = out[b];
    const uint8_t* base = w + b * static_cast<int64_t>(sizeof(BlockQ6_K));
    auto gather = [&](int64_t offset) Q512_LAMBDA {
      return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, offsets, base + offset, 1);
    };
    // scales 4u..4u+3 in dword u; sign-extended byte by byte
    for (int u = 0; u < 4; ++u) {
      const __m512i v = gather(static_cast<int64_t>(offsetof(BlockQ6_K, scales)) + 4 * u);
      for (int k = 0; k < 4; ++k)
        _mm512_store_si512(P.sc[4 * u + k], _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * k), 24));
    }
    // d is the last field: read it with the two scales before it (a dword at d would pass the block's end)
    const __m512i dd = gather(static_cast<int64_t>(offsetof(BlockQ6_K, d)) - 2);
    _mm512_store_ps(P.d, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16))));
    const uint8_t* src[16];
    for (int h = 0; h < 2; ++h) {
      __m512i hb[8], l0[8], l1[8];
      for (int i = 0; i < 16; ++i) src[i] = base + i * row_bytes + offsetof(BlockQ6_K, qh) + 32 * h;
      transpose_16x8(src, nrows, hb);
      for (int i = 0; i < 16; ++i) src[i] = base + i * row_bytes + offsetof(BlockQ6_K, ql) + 64 * h;
      transpose_16x8(src, nrows, l0);
      for (int i = 0; i < 16; ++i) src[i] = base + i * row_bytes + offsetof(BlockQ6_K, ql) + 64 * h + 32;
      transpose_16x8(src, nrows, l1);
      for (int k = 0; k < 4; ++k) {
        const int s = 4 * h + k;  // sub-block: groups 2s (dwords 0-3) and 2s + 1 (dwords 4-7)
        for (int g = 0; g < 8; ++g) {
          const __m512i l = k & 1 ? l1[g] : l0[g];
          const __m512i nib = k < 2 ? _mm512_and_si512(l, low) : _mm512_and_si512(_mm512_srli_epi16(l, 4), low);
          const __m512i top = _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb[g], 2 * k), two), 4);
          _mm512_store_si512(P.q[2 * s + g / 4] + 64 * (g % 4), _mm512_or_si512(nib, top));
        }
      }
    }
  }
}

template <int T>
Q512_TARGET void panel_q6_k(const PanelQ6K* p, int64_t nsb, const BlockQ8_K* a, int64_t a_stride,
                            float* y, int64_t ldy, int64_t nrows) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nsb; ++b) {
    const PanelQ6K& P = p[b];
    __m512i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
    for (int i = 0; i < 16; ++i) {
      __m512i w[4];
      for (int g = 0; g < 4; ++g) w[g] = _mm512_load_si512(P.q[i] + 64 * g);
      const __m512i sc = _mm512_load_si512(P.sc[i]);
      for (int t = 0; t < T; ++t) {
        const BlockQ8_K& ab = a[t * a_stride + b];
        const int8_t* aq = ab.qs + 16 * i;
        __m512i dp = _mm512_set1_epi32(-32 * static_cast<int32_t>(ab.bsums[i]));
        for (int g = 0; g < 4; ++g) {
          int32_t a4;
          std::memcpy(&a4, aq + 4 * g, 4);
          dp = _mm512_dpbusd_epi32(dp, w[g], _mm512_set1_epi32(a4));
        }
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dp, sc));
      }
    }
    const __m512 d = _mm512_load_ps(P.d);
    for (int t = 0; t < T; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, _mm512_set1_ps(a[t * a_stride + b].d)), acc[t]);
  }
  const __mmask16 mask = static_cast<__mmask16>((1u << nrows) - 1);
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
}

using PanelQ6Fn = void (*)(const PanelQ6K*, int64_t, const BlockQ8_K*, int64_t, float*, int64_t, int64_t);

Q512_TARGET void gemm_q6_k_panels(int64_t nsb, const uint8_t* w, int64_t row_bytes, int64_t rows,
                                  const BlockQ8_K* a, int64_t a_stride, int64_t n, float* y, int64_t ldy) {
  static const PanelQ6Fn fns[kPanelT] = {panel_q6_k<1>, panel_q6_k<2>, panel_q6_k<3>, panel_q6_k<4>,
                                         panel_q6_k<5>, panel_q6_k<6>, panel_q6_k<7>, panel_q6_k<8>};
  static thread_local std::vector<PanelQ6K> panel;
  panel.resize(static_cast<size_t>(nsb));
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t nr = std::min<int64_t>(16, rows - r0);
    pack_q6_k(w + r0 * row_bytes, row_bytes, nr, nsb, panel.data());
    for (int64_t t0 = 0; t0 < n; t0 += kPanelT) {
      const int64_t nt = std::min<int64_t>(kPanelT, n - t0);
      fns[nt - 1](panel.data(), nsb, a + t0 * a_stride, a_stride, y + t0 * ldy + r0, ldy, nr);
    }
  }
}

// ---------------------------------------------------------------- drivers

constexpr int kPanelMinTokens = 8;
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
  if (n >= kPanelMinTokens) return gemm_q8_0_panels(nb, w, row_bytes, rows, a, a_stride, n, y, ldy);
  // One or two tokens: memory-bound, one row at a time is one sequential stream.
  const int64_t tile_rows = n <= 2 ? 1 : kQ8R;
  for (int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
    const int64_t nr = std::min<int64_t>(tile_rows, rows - r0);
    for (int64_t t0 = 0; t0 < n; t0 += kQ8T) {
      const int64_t nt = std::min<int64_t>(kQ8T, n - t0);
      tiles[nr - 1][nt - 1](nb, w + r0 * row_bytes, row_bytes, a + t0 * a_stride, a_stride, y + t0 * ldy + r0, ldy);
    }
  }
}

template <typename Block, int T>
constexpr Q4Tile k_tile() {
  if constexpr (std::is_same_v<Block, BlockQ6_K>) return tile_q6_k<T>;
  else return tile_q4_k<Block, T>;
}

// One row x up to 8 tokens below 8 tokens, panels from 8 on: Q4_K, Q5_K (Block) and Q6_K alike.
template <typename Block>
Q512_TARGET void gemm_k(int64_t cols, const uint8_t* w, int64_t row_bytes, int64_t rows,
                        const BlockQ8_K* a, int64_t a_stride, int64_t n, float* y, int64_t ldy) {
  constexpr bool q6 = std::is_same_v<Block, BlockQ6_K>;
  static const Q4Tile tiles[kQ4T] = {k_tile<Block, 1>(), k_tile<Block, 2>(), k_tile<Block, 3>(), k_tile<Block, 4>(),
                                     k_tile<Block, 5>(), k_tile<Block, 6>(), k_tile<Block, 7>(), k_tile<Block, 8>()};
  const int64_t nsb = cols / kQK_K;
  if (n >= kPanelMinTokens) {
    if constexpr (q6) return gemm_q6_k_panels(nsb, w, row_bytes, rows, a, a_stride, n, y, ldy);
    else return gemm_q4_k_panels<Block>(nsb, w, row_bytes, rows, a, a_stride, n, y, ldy);
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t0 = 0; t0 < n; t0 += kQ4T) {
      const int64_t nt = std::min<int64_t>(kQ4T, n - t0);
      tiles[nt - 1](nsb, w + r * row_bytes, a + t0 * a_stride, a_stride, y + t0 * ldy + r, ldy);
    }
  }
}

QuantKernels make_table() {
  // Every dot product (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4 included) is the AVX2
  // table's function.
  QuantKernels k = *quant_kernels_avx2();
  k.name = "avx512-vnni";
  k.gemm_q8_0 = gemm_q8_0;
  k.gemm_q4_k = gemm_k<BlockQ4_K>;
  k.gemm_q5_k = gemm_k<BlockQ5_K>;
  k.gemm_q6_k = gemm_k<BlockQ6_K>;
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
