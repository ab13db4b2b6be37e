// AVX2/FMA/F16C quantized dot products. The core step is _mm256_maddubs_epi16(u8, s8): 32
// unsigned weights times 32 signed activations, summed in adjacent pairs to int16 (no overflow:
// |q| <= 63 and |a| <= 127 keep each pair below 2^15), then _mm256_madd_epi16 widens to int32,
// multiplying by the sub-block scale on the way for the K-quants.
#include "../core/simd_target.h"
#include "quant_kernels.h"

#if PLATFORM_X86_SIMD
#include <immintrin.h>

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

const QuantKernels kAvx2{"avx2", dot_q8_0, dot_q4_0, dot_q4_k, dot_q6_k, dot_f32, f16_to_f32};

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
