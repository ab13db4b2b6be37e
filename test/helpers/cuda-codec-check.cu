// The device decoders of native/backends/cuda/llm/quant.cuh (Codec<T>, all __host__ __device__)
// run on the host against ggml::dequantize_row, the reference every backend is checked against:
// random bytes for every block (every bit pattern of quants, scales, mins, high bits, and of the
// f16 scales: values whose reference is Inf or NaN are skipped), each 8-element group decoded by
// load8<T> as q * d + o. Needs nvcc to compile but no GPU to run, so a machine without a device
// still checks the CUDA backend's byte layouts. A test program, built and run by
// test/llm-cuda-codecs.test.ts (no build lists it). Prints one line per type, "<name>
// <mismatches> <values>"; exit status 1 on any mismatch.
//
// Exact (bit for bit, +0 == -0) except where the codec has an offset (w.o, the types with mins):
// the host reference rounds d * sc * q and dmin * m separately and subtracts, this computes
// (q * d) + o with the same two roundings in another grouping, so 1e-6 of |q * d| + |o|.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../../native/backends/cuda/llm/quant.cuh"

namespace {

using namespace platform;

template <int T>
int check(std::mt19937& rng) {
  const ggml::TypeInfo* info = ggml::type_info(static_cast<uint32_t>(T));
  const int blocks = 64;
  const int64_t n = blocks * info->block_elems;
  std::vector<uint8_t> bytes(static_cast<size_t>(blocks * info->block_bytes));
  for (auto& b : bytes) b = static_cast<uint8_t>(rng() & 0xFF);
  std::vector<float> want(static_cast<size_t>(n));
  ggml::dequantize_row(static_cast<ggml::Type>(T), bytes.data(), want.data(), n);
  int bad = 0;
  for (int64_t k = 0; k < n; k += 8) {
    const cuda::quant::W8 w = cuda::quant::load8<T>(bytes.data(), k);
    for (int j = 0; j < 8; ++j) {
      const float got = w.q[j] * w.d + w.o;
      const float ref = want[static_cast<size_t>(k + j)];
      if (!std::isfinite(ref)) continue;  // an f16 scale of Inf / NaN in the random bytes
      const double tol = cuda::quant::Codec<T>::kHasOffset ? 1e-6 * (std::fabs(w.q[j] * w.d) + std::fabs(w.o)) : 0.0;
      if (std::fabs(static_cast<double>(got) - ref) > tol) {
        if (bad < 3) std::fprintf(stderr, "%s element %lld: decoded %.9g, dequantize_row %.9g\n", info->name, static_cast<long long>(k + j), got, ref);
        ++bad;
      }
    }
  }
  std::printf("%s %d %lld\n", info->name, bad, static_cast<long long>(n));
  return bad;
}

}  // namespace

int main() {
  std::mt19937 rng(20261125);
  namespace q = platform::cuda::quant;
  int bad = 0;
  bad += check<q::kQ8_0>(rng);
  bad += check<q::kQ4_0>(rng);
  bad += check<q::kQ4_1>(rng);
  bad += check<q::kQ5_0>(rng);
  bad += check<q::kQ5_1>(rng);
  bad += check<q::kQ2_K>(rng);
  bad += check<q::kQ3_K>(rng);
  bad += check<q::kQ4_K>(rng);
  bad += check<q::kQ5_K>(rng);
  bad += check<q::kQ6_K>(rng);
  bad += check<q::kIQ4_NL>(rng);
  bad += check<q::kIQ4_XS>(rng);
  bad += check<q::kMXFP4>(rng);
  return bad == 0 ? 0 : 1;
}
