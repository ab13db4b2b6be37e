#include "cpu_features.h"

#include "simd_target.h"

#include <cstdint>
#include <cstdlib>

#if defined(__x86_64__) || defined(_M_X64)
#define PLATFORM_X86_64 1
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif
#endif

namespace platform {

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kNeon: return "neon";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "scalar";
}

std::optional<SimdLevel> parse_simd_level(std::string_view name) {
  if (name == "scalar") return SimdLevel::kScalar;
  if (name == "neon") return SimdLevel::kNeon;
  if (name == "avx2") return SimdLevel::kAvx2;
  if (name == "avx512") return SimdLevel::kAvx512;
  return std::nullopt;
}

namespace {

#if PLATFORM_X86_64
void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t out[4]) {
#if defined(_MSC_VER) && !defined(__clang__)
  int regs[4];
  __cpuidex(regs, static_cast<int>(leaf), static_cast<int>(subleaf));
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint32_t>(regs[i]);
#else
  __cpuid_count(leaf, subleaf, out[0], out[1], out[2], out[3]);
#endif
}

// XCR0 says which register state the OS saves on context switch. Only valid when OSXSAVE is set.
uint64_t xgetbv0() {
#if defined(_MSC_VER) && !defined(__clang__)
  return _xgetbv(0);
#else
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
#endif
}

#if defined(__APPLE__)
// macOS enables ZMM state lazily on first use, so XCR0 under-reports; ask the kernel instead.
bool apple_sysctl_flag(const char* name) {
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
  uint32_t r[4];
  cpuid(0, 0, r);
  const uint32_t max_leaf = r[0];
  if (max_leaf < 1) return f;
  cpuid(1, 0, r);
  const bool osxsave = (r[2] >> 27) & 1;
  const bool avx = (r[2] >> 28) & 1;
  const bool fma = (r[2] >> 12) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;           // SSE + AVX state
  bool zmm_state = (xcr0 & 0xE6) == 0xE6;               // + opmask, ZMM_Hi256, Hi16_ZMM
  if (max_leaf < 7) return f;
  cpuid(7, 0, r);
  const bool avx2 = (r[1] >> 5) & 1;
  const bool avx512f = (r[1] >> 16) & 1;
#if defined(__APPLE__)
  if (avx512f && ymm_state && !zmm_state) zmm_state = apple_sysctl_flag("hw.optional.avx512f");
#endif
  // A level counts only if this build also contains its kernels (GCC/Clang target attributes).
  f.avx2_fma = PLATFORM_X86_SIMD && avx2 && fma && ymm_state;
  // Our AVX-512 kernels also use AVX2/FMA instructions for their edges.
  f.avx512f = f.avx2_fma && avx512f && zmm_state;
  return f;
}
#elif defined(__aarch64__) || defined(_M_ARM64)
CpuFeatures detect() {
  CpuFeatures f;
  f.neon = PLATFORM_NEON_SIMD;  // AdvSIMD is mandatory in ARMv8-A
  return f;
}
#else
CpuFeatures detect() { return CpuFeatures{}; }
#endif

struct ActiveState {
  SimdLevel level;
  std::string warning;
};

ActiveState compute_active() {
  ActiveState s{detected_simd_level(), {}};
  const char* env = std::getenv("PLATFORM_SIMD");
  if (env == nullptr || *env == '\0') return s;
  auto parsed = parse_simd_level(env);
  if (!parsed) {
    s.warning = std::string("PLATFORM_SIMD=") + env +
                " is not one of scalar, neon, avx2, avx512; using " + simd_level_name(s.level);
    return s;
  }
  // The env var may only lower the level (it exists to test and compare slower paths).
  s.level = clamp_simd_level(*parsed);
  return s;
}

const ActiveState& active_state() {
  static const ActiveState state = compute_active();
  return state;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool simd_level_supported(SimdLevel level) {
  const CpuFeatures& f = cpu_features();
  switch (level) {
    case SimdLevel::kScalar: return true;
    case SimdLevel::kNeon: return f.neon;
    case SimdLevel::kAvx2: return f.avx2_fma;
    case SimdLevel::kAvx512: return f.avx512f;
  }
  return false;
}

SimdLevel clamp_simd_level(SimdLevel requested) {
  for (int l = static_cast<int>(requested); l > 0; --l) {
    if (simd_level_supported(static_cast<SimdLevel>(l))) return static_cast<SimdLevel>(l);
  }
  return SimdLevel::kScalar;
}

SimdLevel detected_simd_level() { return clamp_simd_level(SimdLevel::kAvx512); }

SimdLevel active_simd_level() { return active_state().level; }

const std::string& simd_env_warning() { return active_state().warning; }

std::vector<SimdLevel> available_simd_levels() {
  std::vector<SimdLevel> out;
  for (int l = 0; l <= static_cast<int>(SimdLevel::kAvx512); ++l) {
    if (simd_level_supported(static_cast<SimdLevel>(l))) out.push_back(static_cast<SimdLevel>(l));
  }
  return out;
}

}  // namespace platform
