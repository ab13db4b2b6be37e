// Portable quantized dot products: the reference for the SIMD kernels and the fallback on CPUs
// without them. Integer sums per block, one float multiply-add per block.
#include "quant_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace platform::cpu {
namespace {

float dot_q8_0(int64_t n, const BlockQ8_0* w, const BlockQ8A* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int l = 0; l < kQK; ++l) s += w[i].qs[l] * a[i].qs[l];
    sum += fp16_to_f32(w[i].d) * a[i].d * static_cast<float>(s);
  }
  return sum;
}

float dot_q4_0(int64_t n, const BlockQ4_0* w, const BlockQ8A* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int l = 0; l < kQK / 2; ++l) {
      s += ((w[i].qs[l] & 0xF) - 8) * a[i].qs[l];
      s += ((w[i].qs[l] >> 4) - 8) * a[i].qs[l + 16];
    }
    sum += fp16_to_f32(w[i].d) * a[i].d * static_cast<float>(s);
  }
  return sum;
}

// sum = d * sum_j sc_j * (q . a)_j - dmin * sum_j m_j * (sum of a in sub-block j)
float dot_q4_k(int64_t n, const BlockQ4_K* w, const BlockQ8_K* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const uint8_t* q = w[i].qs;
    const int8_t* y = a[i].qs;
    int sumi = 0, summ = 0;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc0, m0, sc1, m1;
      q4_k_scale_min(2 * j, w[i].scales, &sc0, &m0);
      q4_k_scale_min(2 * j + 1, w[i].scales, &sc1, &m1);
      int s0 = 0, s1 = 0;
      for (int l = 0; l < 32; ++l) {
        s0 += (q[l] & 0xF) * y[l];
        s1 += (q[l] >> 4) * y[l + 32];
      }
      sumi += sc0 * s0 + sc1 * s1;
      summ += m0 * (a[i].bsums[4 * j] + a[i].bsums[4 * j + 1]) +
              m1 * (a[i].bsums[4 * j + 2] + a[i].bsums[4 * j + 3]);
      q += 32;
      y += 64;
    }
    sum += a[i].d * (fp16_to_f32(w[i].d) * static_cast<float>(sumi) -
                     fp16_to_f32(w[i].dmin) * static_cast<float>(summ));
  }
  return sum;
}

float dot_q6_k(int64_t n, const BlockQ6_K* w, const BlockQ8_K* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const uint8_t* ql = w[i].ql;
    const uint8_t* qh = w[i].qh;
    const int8_t* sc = w[i].scales;
    const int8_t* y = a[i].qs;
    int sumi = 0;
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        sumi += sc[is] * q1 * y[l] + sc[is + 2] * q2 * y[l + 32] + sc[is + 4] * q3 * y[l + 64] +
                sc[is + 6] * q4 * y[l + 96];
      }
      ql += 64;
      qh += 32;
      sc += 8;
      y += 128;
    }
    sum += fp16_to_f32(w[i].d) * a[i].d * static_cast<float>(sumi);
  }
  return sum;
}

float dot_q5_0(int64_t n, const BlockQ5_0* w, const BlockQ8A* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    uint32_t qh;
    std::memcpy(&qh, w[i].qh, 4);
    int s = 0;
    for (int l = 0; l < kQK / 2; ++l) {
      s += (((w[i].qs[l] & 0xF) | (((qh >> l) & 1) << 4)) - 16) * a[i].qs[l];
      s += (((w[i].qs[l] >> 4) | (((qh >> (l + 16)) & 1) << 4)) - 16) * a[i].qs[l + 16];
    }
    sum += fp16_to_f32(w[i].d) * a[i].d * static_cast<float>(s);
  }
  return sum;
}

// sum = d * (q . a) + m * (sum of a), per block, times the activation scale
float dot_q4_1(int64_t n, const BlockQ4_1* w, const BlockQ8A* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0, sa = 0;
    for (int l = 0; l < kQK / 2; ++l) {
      s += (w[i].qs[l] & 0xF) * a[i].qs[l] + (w[i].qs[l] >> 4) * a[i].qs[l + 16];
      sa += a[i].qs[l] + a[i].qs[l + 16];
    }
    sum += a[i].d * (fp16_to_f32(w[i].d) * static_cast<float>(s) + fp16_to_f32(w[i].m) * static_cast<float>(sa));
  }
  return sum;
}

float dot_q5_1(int64_t n, const BlockQ5_1* w, const BlockQ8A* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    uint32_t qh;
    std::memcpy(&qh, w[i].qh, 4);
    int s = 0, sa = 0;
    for (int l = 0; l < kQK / 2; ++l) {
      s += ((w[i].qs[l] & 0xF) | (((qh >> l) & 1) << 4)) * a[i].qs[l];
      s += ((w[i].qs[l] >> 4) | (((qh >> (l + 16)) & 1) << 4)) * a[i].qs[l + 16];
      sa += a[i].qs[l] + a[i].qs[l + 16];
    }
    sum += a[i].d * (fp16_to_f32(w[i].d) * static_cast<float>(s) + fp16_to_f32(w[i].m) * static_cast<float>(sa));
  }
  return sum;
}

float dot_iq4_nl(int64_t n, const BlockIQ4_NL* w, const BlockQ8A* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int l = 0; l < kQK / 2; ++l) {
      s += kIq4Values[w[i].qs[l] & 0xF] * a[i].qs[l] + kIq4Values[w[i].qs[l] >> 4] * a[i].qs[l + 16];
    }
    sum += fp16_to_f32(w[i].d) * a[i].d * static_cast<float>(s);
  }
  return sum;
}

float dot_iq4_xs(int64_t n, const BlockIQ4_XS* w, const BlockQ8_K* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int sumi = 0;
    for (int j = 0; j < 8; ++j) {
      const uint8_t* q = w[i].qs + 16 * j;
      const int8_t* y = a[i].qs + 32 * j;
      int s = 0;
      for (int l = 0; l < 16; ++l) s += kIq4Values[q[l] & 0xF] * y[l] + kIq4Values[q[l] >> 4] * y[l + 16];
      sumi += iq4_xs_scale(j, w[i]) * s;
    }
    sum += fp16_to_f32(w[i].d) * a[i].d * static_cast<float>(sumi);
  }
  return sum;
}

float dot_mxfp4(int64_t n, const BlockMXFP4* w, const BlockQ8A* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int l = 0; l < kQK / 2; ++l) {
      s += kMxfp4Values[w[i].qs[l] & 0xF] * a[i].qs[l] + kMxfp4Values[w[i].qs[l] >> 4] * a[i].qs[l + 16];
    }
    sum += e8m0_half(w[i].e) * a[i].d * static_cast<float>(s);
  }
  return sum;
}

// Element 128h + 32c + l of a Q2_K / Q3_K super-block: bits 2c of qs[32h + l].
inline int two_bits(const uint8_t* qs, int e) { return (qs[32 * (e >> 7) + (e & 31)] >> (2 * ((e >> 5) & 3))) & 3; }

// sum = d * sum_g sc_g * (q . a)_g - dmin * sum_g m_g * (sum of a in group g), groups of 16
float dot_q2_k(int64_t n, const BlockQ2_K* w, const BlockQ8_K* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int sumi = 0, summ = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) s += two_bits(w[i].qs, e) * a[i].qs[e];
      sumi += (w[i].scales[g] & 0xF) * s;
      summ += (w[i].scales[g] >> 4) * a[i].bsums[g];
    }
    sum += a[i].d * (fp16_to_f32(w[i].d) * static_cast<float>(sumi) -
                     fp16_to_f32(w[i].dmin) * static_cast<float>(summ));
  }
  return sum;
}

// q = low 2 bits - (hmask bit clear ? 4 : 0), in -4..3; scales in -32..31
float dot_q3_k(int64_t n, const BlockQ3_K* w, const BlockQ8_K* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) {
        const int high = (w[i].hmask[e & 31] >> (e >> 5)) & 1;
        s += (two_bits(w[i].qs, e) - (high ? 0 : 4)) * a[i].qs[e];
      }
      sumi += q3_k_scale(g, w[i].scales) * s;
    }
    sum += fp16_to_f32(w[i].d) * a[i].d * static_cast<float>(sumi);
  }
  return sum;
}

// Q4_K's sums with 5-bit values (bit 4 of element 64j + 32h + l: bit 2j + h of qh[l]).
float dot_q5_k(int64_t n, const BlockQ5_K* w, const BlockQ8_K* a) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const uint8_t* q = w[i].qs;
    const int8_t* y = a[i].qs;
    int sumi = 0, summ = 0;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc0, m0, sc1, m1;
      q4_k_scale_min(2 * j, w[i].scales, &sc0, &m0);
      q4_k_scale_min(2 * j + 1, w[i].scales, &sc1, &m1);
      int s0 = 0, s1 = 0;
      for (int l = 0; l < 32; ++l) {
        s0 += ((q[l] & 0xF) | (((w[i].qh[l] >> (2 * j)) & 1) << 4)) * y[l];
        s1 += ((q[l] >> 4) | (((w[i].qh[l] >> (2 * j + 1)) & 1) << 4)) * y[l + 32];
      }
      sumi += sc0 * s0 + sc1 * s1;
      summ += m0 * (a[i].bsums[4 * j] + a[i].bsums[4 * j + 1]) +
              m1 * (a[i].bsums[4 * j + 2] + a[i].bsums[4 * j + 3]);
      q += 32;
      y += 64;
    }
    sum += a[i].d * (fp16_to_f32(w[i].d) * static_cast<float>(sumi) -
                     fp16_to_f32(w[i].dmin) * static_cast<float>(summ));
  }
  return sum;
}

float dot_f32(int64_t n, const float* a, const float* b) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

void f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(src[i]);
}

// Scores first (scratch[h * len + p]), then the softmax of each head, then the weighted values.
void attend(int64_t len, int64_t bs, int64_t stride, const float* const* k_blocks,
            const float* const* v_blocks, const float* q, int64_t nq, int64_t hd, float scale,
            float softcap, float* scratch, float* out) {
  for (int64_t h = 0; h < nq; ++h) {
    const float* qh = q + h * hd;
    float* s = scratch + h * len;
    float mx = -INFINITY;
    for (int64_t p = 0; p < len; ++p) {
      const float* k = k_blocks[p / bs] + (p % bs) * stride;
      float acc = 0.0f;
      for (int64_t i = 0; i < hd; ++i) acc += qh[i] * k[i];
      s[p] = softcap > 0.0f ? softcap * std::tanh(acc * scale / softcap) : acc * scale;
      mx = std::max(mx, s[p]);
    }
    float sum = 0.0f;
    for (int64_t p = 0; p < len; ++p) {
      s[p] = std::exp(s[p] - mx);
      sum += s[p];
    }
    float* o = out + h * hd;
    std::fill(o, o + hd, 0.0f);
    for (int64_t p = 0; p < len; ++p) {
      const float* v = v_blocks[p / bs] + (p % bs) * stride;
      const float w = s[p] / sum;
      for (int64_t i = 0; i < hd; ++i) o[i] += w * v[i];
    }
  }
}

void silu_mul(float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void gelu_mul(float* g, const float* u, int64_t n) {
  constexpr float k2 = 2.0f * 0.7978845608028654f;  // 2 sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float x = g[i];
    g[i] = x / (1.0f + std::exp(-k2 * (x + 0.044715f * x * x * x))) * u[i];
  }
}

const QuantKernels kScalar{"scalar",       dot_q8_0, dot_q4_0, dot_q4_k, dot_q6_k,
                           dot_q5_0,       dot_q2_k, dot_q3_k, dot_q5_k, dot_q4_1,
                           dot_q5_1,       dot_iq4_nl, dot_iq4_xs,
                           dot_mxfp4,      dot_f32,
                           f16_to_f32,     nullptr,  nullptr,  nullptr, nullptr, quantize_row_q8a,
                           quantize_row_q8_k, attend, silu_mul,
                           gelu_mul};

}  // namespace

const QuantKernels* quant_kernels_scalar() { return &kScalar; }

const QuantKernels& select_quant_kernels(SimdLevel level) {
  if (clamp_simd_level(level) >= SimdLevel::kAvx512) {
    if (const QuantKernels* k = quant_kernels_avx512()) return *k;
  }
  if (clamp_simd_level(level) >= SimdLevel::kAvx2) {
    if (const QuantKernels* k = quant_kernels_avx2()) return *k;
  }
  return kScalar;
}

}  // namespace platform::cpu
