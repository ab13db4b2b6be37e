// Pure helpers of the sampling kernel (host + device, so that the host self-check uses the same
// code): order-preserving float keys, probabilities, fixed-point masses.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace platform::cuda::smp {

// Monotone map float -> uint32 (a > b  <=>  key(a) > key(b)); -0 is mapped as +0 so that the
// two compare equal, as floats do (ties are then broken by token id, like the CPU's sort).
__host__ __device__ inline uint32_t float_key(float x) {
  if (x == 0.0f) x = 0.0f;
  uint32_t u;
#ifdef __CUDA_ARCH__
  u = __float_as_uint(x);
#else
  std::memcpy(&u, &x, 4);
#endif
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__host__ __device__ inline float key_float(uint32_t k) {
  const uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#endif
}

// The CPU's probability of a candidate: float(exp(x - mx) / sum) with sum a double.
__host__ __device__ inline float prob(float x, float mx, double sum) {
  return static_cast<float>(static_cast<double>(expf(x - mx)) / sum);
}

// Probabilities as 2^-60 fixed point: exact for p >= 2^-37 (every float of that size is a
// multiple of 2^-60), so prefix masses are exact integer sums, associative and deterministic.
// The sum of a softmax row (<= ~1.02 with float rounding) fits easily in 64 bits.
constexpr double kFixedScale = 1152921504606846976.0;  // 2^60
__host__ __device__ inline unsigned long long to_fixed(float p) {
  return static_cast<unsigned long long>(static_cast<double>(p) * kFixedScale);
}
// Smallest fixed mass m with m >= top_p (the CPU's `cum >= top_p`); at least 1 so that
// top_p <= 0 keeps exactly the first candidate, as on the CPU.
__host__ __device__ inline unsigned long long fixed_target(float top_p) {
  const double t = ceil(static_cast<double>(top_p) * kFixedScale);
  return t < 1.0 ? 1ull : static_cast<unsigned long long>(t);
}

// Radix-select step over one 8-bit digit (descending): given the histogram of the elements
// matching the known high digits and `base` (the measure of all elements above them), the largest
// digit d with base + sum_{d' >= d} hist[d'] >= target, and the new base (+ bins above d).
// Returns false when even the whole histogram falls short. Serial form (the kernel does the same
// with one warp).
template <typename T>
__host__ __device__ inline bool find_digit_serial(const T* hist, T base, T target, int* digit, T* new_base) {
  T acc = base;
  for (int d = 255; d >= 0; --d) {
    if (acc + hist[d] >= target) {
      *digit = d;
      *new_base = acc;
      return true;
    }
    acc += hist[d];
  }
  return false;
}

}  // namespace platform::cuda::smp
