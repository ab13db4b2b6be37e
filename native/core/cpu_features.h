// CPU feature detection and the process-wide SIMD level used by the kernels.
//
// Every ISA's kernels are compiled into the one binary (function target attributes, no global
// -m flags), so the choice happens here at run time. Levels are totally ordered so that "the best
// supported level at or below X" is well defined on every architecture:
//   scalar < neon < avx2 < avx512
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace platform {

enum class SimdLevel : int { kScalar = 0, kNeon = 1, kAvx2 = 2, kAvx512 = 3 };

const char* simd_level_name(SimdLevel level);
std::optional<SimdLevel> parse_simd_level(std::string_view name);

struct CpuFeatures {
  bool avx2_fma = false;  // AVX2 + FMA3 instructions, and the OS saves YMM state
  bool avx512f = false;   // AVX-512F instructions, and the OS saves ZMM + opmask state
  bool neon = false;      // AdvSIMD (always present on arm64)
};

// Detected once (thread-safe static init).
const CpuFeatures& cpu_features();

bool simd_level_supported(SimdLevel level);

// Best level the hardware supports.
SimdLevel detected_simd_level();

// The process default: detected_simd_level(), lowered by env PLATFORM_SIMD if set to a valid name.
// An unknown PLATFORM_SIMD value is ignored (see simd_env_warning()).
SimdLevel active_simd_level();

// Non-empty when PLATFORM_SIMD was set to something unusable; engineInfo() surfaces it.
const std::string& simd_env_warning();

// The best supported level at or below `requested`.
SimdLevel clamp_simd_level(SimdLevel requested);

// Every supported level, ascending.
std::vector<SimdLevel> available_simd_levels();

}  // namespace platform
