// The type table and row dequantization (reference layouts from ggml).
#include "types.h"

namespace platform::ggml {

const char* ggml_type_name(uint32_t type_id) {
  // ggml.h's enum ggml_type; ids it retired (4, 5, 31-33, 36-38) are absent.
  static const char* const kNames[] = {"F32",   "F16",   "Q4_0",    "Q4_1",   "",       "",      "Q5_0",   "Q5_1",  "Q8_0",  "Q8_1",
                                       "Q2_K",  "Q3_K",  "Q4_K",    "Q5_K",   "Q6_K",   "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
                                       "IQ4_NL", "IQ3_S", "IQ2_S",  "IQ4_XS", "I8",     "I16",   "I32",    "I64",   "F64",   "IQ1_M",
                                       "BF16",  "",      "",        "",       "TQ1_0",  "TQ2_0", "",       "",      "",      "MXFP4"};
  if (type_id >= sizeof(kNames) / sizeof(kNames[0]) || kNames[type_id][0] == '\0') return nullptr;
  return kNames[type_id];
}

const char* supported_type_names() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4";
}

const TypeInfo* type_info(uint32_t type_id) {
  static const TypeInfo kF32{"F32", 1, 4}, kF16{"F16", 1, 2}, kBF16{"BF16", 1, 2},
      kQ8_0{"Q8_0", kQK, sizeof(BlockQ8_0)}, kQ4_0{"Q4_0", kQK, sizeof(BlockQ4_0)},
      kQ4_1{"Q4_1", kQK, sizeof(BlockQ4_1)}, kQ5_0{"Q5_0", kQK, sizeof(BlockQ5_0)},
      kQ5_1{"Q5_1", kQK, sizeof(BlockQ5_1)}, kQ2_K{"Q2_K", kQK_K, sizeof(BlockQ2_K)},
      kQ3_K{"Q3_K", kQK_K, sizeof(BlockQ3_K)}, kQ4_K{"Q4_K", kQK_K, sizeof(BlockQ4_K)},
      kQ5_K{"Q5_K", kQK_K, sizeof(BlockQ5_K)}, kQ6_K{"Q6_K", kQK_K, sizeof(BlockQ6_K)},
      kIQ4_NL{"IQ4_NL", kQK, sizeof(BlockIQ4_NL)}, kIQ4_XS{"IQ4_XS", kQK_K, sizeof(BlockIQ4_XS)},
      kMXFP4{"MXFP4", kQK, sizeof(BlockMXFP4)};
  switch (static_cast<Type>(type_id)) {
    case Type::kF32: return &kF32;
    case Type::kF16: return &kF16;
    case Type::kBF16: return &kBF16;
    case Type::kQ8_0: return &kQ8_0;
    case Type::kQ4_0: return &kQ4_0;
    case Type::kQ4_1: return &kQ4_1;
    case Type::kQ5_0: return &kQ5_0;
    case Type::kQ5_1: return &kQ5_1;
    case Type::kQ2_K: return &kQ2_K;
    case Type::kQ3_K: return &kQ3_K;
    case Type::kQ4_K: return &kQ4_K;
    case Type::kQ5_K: return &kQ5_K;
    case Type::kQ6_K: return &kQ6_K;
    case Type::kIQ4_NL: return &kIQ4_NL;
    case Type::kIQ4_XS: return &kIQ4_XS;
    case Type::kMXFP4: return &kMXFP4;
  }
  return nullptr;
}

void dequantize_row(Type type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case Type::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case Type::kF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
      return;
    }
    case Type::kBF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case Type::kQ8_0: {
      const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n / kQK; ++i) {
        const float d = fp16_to_f32(b[i].d);
        for (int l = 0; l < kQK; ++l) dst[i * kQK + l] = d * b[i].qs[l];
      }
      return;
    }
    case Type::kQ4_0: {
      const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
      for (int64_t i = 0; i < n / kQK; ++i) {
        const float d = fp16_to_f32(b[i].d);
        for (int l = 0; l < kQK / 2; ++l) {
          dst[i * kQK + l] = d * ((b[i].qs[l] & 0xF) - 8);
          dst[i * kQK + l + 16] = d * ((b[i].qs[l] >> 4) - 8);
        }
      }
      return;
    }
    case Type::kMXFP4: {
      const BlockMXFP4* b = static_cast<const BlockMXFP4*>(src);
      for (int64_t i = 0; i < n / kQK; ++i) {
        const float d = e8m0_half(b[i].e);
        for (int l = 0; l < kQK / 2; ++l) {
          dst[i * kQK + l] = kMxfp4Values[b[i].qs[l] & 0xF] * d;
          dst[i * kQK + l + 16] = kMxfp4Values[b[i].qs[l] >> 4] * d;
        }
      }
      return;
    }
    case Type::kIQ4_NL: {
      const BlockIQ4_NL* b = static_cast<const BlockIQ4_NL*>(src);
      for (int64_t i = 0; i < n / kQK; ++i) {
        const float d = fp16_to_f32(b[i].d);
        for (int l = 0; l < kQK / 2; ++l) {
          dst[i * kQK + l] = d * kIq4Values[b[i].qs[l] & 0xF];
          dst[i * kQK + l + 16] = d * kIq4Values[b[i].qs[l] >> 4];
        }
      }
      return;
    }
    case Type::kIQ4_XS: {
      const BlockIQ4_XS* b = static_cast<const BlockIQ4_XS*>(src);
      for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < 8; ++j) {
          const float dl = d * iq4_xs_scale(j, b[i]);
          const uint8_t* q = b[i].qs + 16 * j;
          float* y = dst + i * kQK_K + 32 * j;
          for (int l = 0; l < 16; ++l) {
            y[l] = dl * kIq4Values[q[l] & 0xF];
            y[l + 16] = dl * kIq4Values[q[l] >> 4];
          }
        }
      }
      return;
    }
    case Type::kQ4_1: {
      const BlockQ4_1* b = static_cast<const BlockQ4_1*>(src);
      for (int64_t i = 0; i < n / kQK; ++i) {
        const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
        for (int l = 0; l < kQK / 2; ++l) {
          dst[i * kQK + l] = (b[i].qs[l] & 0xF) * d + m;
          dst[i * kQK + l + 16] = (b[i].qs[l] >> 4) * d + m;
        }
      }
      return;
    }
    case Type::kQ5_1: {
      const BlockQ5_1* b = static_cast<const BlockQ5_1*>(src);
      for (int64_t i = 0; i < n / kQK; ++i) {
        const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
        uint32_t qh;
        std::memcpy(&qh, b[i].qh, 4);
        for (int l = 0; l < kQK / 2; ++l) {
          dst[i * kQK + l] = ((b[i].qs[l] & 0xF) | (((qh >> l) & 1) << 4)) * d + m;
          dst[i * kQK + l + 16] = ((b[i].qs[l] >> 4) | (((qh >> (l + 16)) & 1) << 4)) * d + m;
        }
      }
      return;
    }
    case Type::kQ5_0: {
      const BlockQ5_0* b = static_cast<const BlockQ5_0*>(src);
      for (int64_t i = 0; i < n / kQK; ++i) {
        const float d = fp16_to_f32(b[i].d);
        uint32_t qh;
        std::memcpy(&qh, b[i].qh, 4);
        for (int l = 0; l < kQK / 2; ++l) {
          const int q0 = ((b[i].qs[l] & 0xF) | (((qh >> l) & 1) << 4)) - 16;
          const int q1 = ((b[i].qs[l] >> 4) | (((qh >> (l + 16)) & 1) << 4)) - 16;
          dst[i * kQK + l] = d * q0;
          dst[i * kQK + l + 16] = d * q1;
        }
      }
      return;
    }
    case Type::kQ2_K: {
      const BlockQ2_K* b = static_cast<const BlockQ2_K*>(src);
      for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        float* y = dst + i * kQK_K;
        for (int e = 0; e < kQK_K; ++e) {  // element 128h + 32c + l: bits 2c of qs[32h + l]
          const int h = e >> 7, c = (e >> 5) & 3, l = e & 31;
          const uint8_t sc = b[i].scales[e / 16];
          const int q = (b[i].qs[32 * h + l] >> (2 * c)) & 3;
          y[e] = d * (sc & 0xF) * q - dmin * (sc >> 4);
        }
      }
      return;
    }
    case Type::kQ3_K: {
      const BlockQ3_K* b = static_cast<const BlockQ3_K*>(src);
      for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(b[i].d);
        float* y = dst + i * kQK_K;
        for (int e = 0; e < kQK_K; ++e) {
          const int h = e >> 7, c = (e >> 5) & 3, l = e & 31;
          const int low = (b[i].qs[32 * h + l] >> (2 * c)) & 3;
          const int high = (b[i].hmask[l] >> (e >> 5)) & 1;  // set: +0, clear: -4
          y[e] = d * q3_k_scale(e / 16, b[i].scales) * (low - (high ? 0 : 4));
        }
      }
      return;
    }
    case Type::kQ5_K: {
      const BlockQ5_K* b = static_cast<const BlockQ5_K*>(src);
      for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        const uint8_t* q = b[i].qs;
        float* y = dst + i * kQK_K;
        for (int j = 0; j < 4; ++j) {  // 64 elements: low nibbles then high nibbles of 32 bytes
          uint8_t sc0, m0, sc1, m1;
          q4_k_scale_min(2 * j, b[i].scales, &sc0, &m0);
          q4_k_scale_min(2 * j + 1, b[i].scales, &sc1, &m1);
          const float d0 = d * sc0, o0 = dmin * m0, d1 = d * sc1, o1 = dmin * m1;
          for (int l = 0; l < 32; ++l) {
            const int hi0 = (b[i].qh[l] >> (2 * j)) & 1, hi1 = (b[i].qh[l] >> (2 * j + 1)) & 1;
            y[l] = d0 * ((q[l] & 0xF) | (hi0 << 4)) - o0;
            y[32 + l] = d1 * ((q[l] >> 4) | (hi1 << 4)) - o1;
          }
          q += 32;
          y += 64;
        }
      }
      return;
    }
    case Type::kQ4_K: {
      const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
      for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
        const uint8_t* q = b[i].qs;
        float* y = dst + i * kQK_K;
        for (int j = 0; j < 4; ++j) {  // 64 elements: low nibbles then high nibbles of 32 bytes
          uint8_t sc0, m0, sc1, m1;
          q4_k_scale_min(2 * j, b[i].scales, &sc0, &m0);
          q4_k_scale_min(2 * j + 1, b[i].scales, &sc1, &m1);
          for (int l = 0; l < 32; ++l) y[l] = d * sc0 * (q[l] & 0xF) - dmin * m0;
          for (int l = 0; l < 32; ++l) y[32 + l] = d * sc1 * (q[l] >> 4) - dmin * m1;
          q += 32;
          y += 64;
        }
      }
      return;
    }
    case Type::kQ6_K: {
      const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
      for (int64_t i = 0; i < n / kQK_K; ++i) {
        const float d = fp16_to_f32(b[i].d);
        const uint8_t* ql = b[i].ql;
        const uint8_t* qh = b[i].qh;
        const int8_t* sc = b[i].scales;
        float* y = dst + i * kQK_K;
        for (int half = 0; half < 2; ++half) {  // 128 elements from 64 ql and 32 qh bytes
          for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * sc[is] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
          }
          y += 128;
          ql += 64;
          qh += 32;
          sc += 8;
        }
      }
      return;
    }
  }
}

}  // namespace platform::ggml
