// Which SIMD kernels this build contains, and the attributes that compile one function for an ISA.
//
// The whole addon is built without -mavx2/-march so that it loads on any x86-64 (or arm64) CPU;
// only functions marked with these attributes may use the wider instructions, and they are only
// called after cpu_features.cc has confirmed the CPU and OS support them.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PLATFORM_X86_SIMD 1
#define PLATFORM_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define PLATFORM_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define PLATFORM_X86_SIMD 0
#endif

#if defined(__aarch64__)
#define PLATFORM_NEON_SIMD 1  // AdvSIMD is baseline on arm64: no attribute needed
#else
#define PLATFORM_NEON_SIMD 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PLATFORM_ALWAYS_INLINE inline __attribute__((always_inline))
#define PLATFORM_RESTRICT __restrict__
#else
#define PLATFORM_ALWAYS_INLINE inline
#define PLATFORM_RESTRICT
#endif
