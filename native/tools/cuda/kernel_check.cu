// Every launcher of llm_kernels.h against a plain host reference in f64 on random inputs of
// awkward sizes (see kernel_check.h; platform-cuda-check prints the results).
//
// Conventions
// - Weights are random *valid* GGML blocks (random quants, sane f16 scales); the host reference
//   dequantizes them with ggml::dequantize_row (ggml/types.h), so a launcher is checked against the
//   same decoding the CPU engine uses.
// - Device memory is the backends' DeviceBuffer (cudaMalloc); inputs are uploaded with cudaMemcpy
//   before the launch and results copied back after a stream synchronisation (the launchers
//   themselves only enqueue).
// - Outputs are surrounded by sentinels where the API promises not to write (ldy padding of
//   matmul, untouched KV cache slots), and those must come back bit-identical.
// - A CUDA error fails the check it happened in (the note says which call); a sticky error (the
//   context is lost) stops all checks and goes to KernelCheckReport::error. Nothing throws out.
//
// Tolerances (each check states its error measure next to its constant):
// - matmul / gate_up_silu: |y - ref| / sum_k |w_rk x_tk| (the error relative to the magnitude of
//   the terms; relative to |ref| is meaningless for random signs, which cancel). The vector path
//   (n <= detail::kVecMaxTokens = 4, decode) decodes weights to f32 and accumulates in f32: rounding ~ cols * 2^-24 at
//   worst, typically sqrt(cols) * 2^-24, so 1e-4 has a wide margin. The tile path (large n:
//   prefill, big batches) multiplies on the f16 tensor cores: x and the decoded weights rounded to
//   f16 (2^-11 each, bf16 would be 2^-8), f32 accumulation: 1e-2.
// - get_rows: bit-exact against dequantize_row, +0 == -0 (except Q4_1 / Q5_1 / Q2_K / Q4_K /
//   Q5_K, whose d*sc*q - dmin*m (d*q + m) may be fused into one FMA on the device where the host rounds twice: up to 1
//   ulp of the larger term).
// - rmsnorm: f32 arithmetic over <= 4096 values, rsqrt to a few ulp: 1e-5 relative per element.
// - qkv_finish: q in f32, angle in double, cos/sin to f32: 1e-5 of |a| + |b| of each rotated pair;
//   the f16 cache entries: half an f16 ulp (2^-11 relative) plus that, so 1e-3 of |a| + |b|.
// - attention: the output is a convex combination of V rows; error / max |V| over the attended
//   positions. f32 scores over f16 K/V: ~1e-5; a tensor-core prefill path that rounds q or the
//   probabilities to f16 moves it by up to ~1e-3, hence 2e-3.
// - sample: greedy must be the first argmax exactly (0 tolerance, ties planted). Sampling with
//   temperature / top-k / top-p / min-p / penalties: every drawn token must be in the reference's
//   kept set, and R rows of the same logits drawn with the stratified uniforms (i + 0.5) / R must
//   give each token a frequency within 1/R + 1e-3 of its reference probability (the inverse CDF of
//   stratified uniforms is exact to one draw per token; 1e-3 allows f32 softmax and prefix sums).
// - add: exact (the same f32 addition on both sides).
#include "kernel_check.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../backends/cuda/device_buffer.h"
#include "../../backends/cuda/llm/llm_kernels.h"
// detail::kVecMaxTokens, detail::tile_supported: which path a case takes
#include "../../backends/cuda/llm/matmul_kernels.cuh"
#include "../../ggml/types.h"

namespace platform::cuda {
namespace {

using GgmlType = ggml::Type;

// Waits for the launches on `s` and reports any launch or execution error (CudaError).
void sync(cudaStream_t s, const char* what) {
  check(cudaGetLastError(), what);
  check(cudaStreamSynchronize(s), what);
}

// A case's host data on the device: a DeviceBuffer of n values of T (at least one, so that no
// launcher sees a null pointer), filled from and read back into host vectors.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { memory_.allocate(std::max<size_t>(n, 1) * sizeof(T), "check data"); }
  DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (n_) PLATFORM_CUDA_CHECK(cudaMemcpy(get(), host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    if (n_) PLATFORM_CUDA_CHECK(cudaMemcpy(h.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  T* get() const { return memory_.get<T>(); }
  size_t size() const { return n_; }

 private:
  DeviceBuffer memory_;
  size_t n_ = 0;
};

// ---- host helpers ---------------------------------------------------------------------------------
uint16_t f32_to_f16_bits(float f) {
  const __half h = __float2half_rn(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float f16_bits_to_f32(uint16_t b) { return ggml::fp16_to_f32(b); }
uint16_t f32_to_bf16_bits(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::string type_label(GgmlType t) { return ggml::type_name(t); }

double silu(double a) { return a / (1.0 + std::exp(-a)); }

// Random valid blocks of `type` for a rows x cols matrix (host bytes, row-major rows).
std::vector<uint8_t> random_matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937_64& rng) {
  const int64_t rb = ggml::row_bytes(type, cols);
  std::vector<uint8_t> m(static_cast<size_t>(rows * rb));
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.002f, 0.05f);
  auto put16 = [](uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); };
  auto signed_scale = [&]() { return (byte(rng) & 1) ? scale(rng) : -scale(rng); };
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = m.data() + r * rb;
    switch (type) {
      case GgmlType::kF32:
        for (int64_t i = 0; i < cols; ++i) {
          const float v = normal(rng) * 0.05f;
          std::memcpy(row + 4 * i, &v, 4);
        }
        break;
      case GgmlType::kF16:
        for (int64_t i = 0; i < cols; ++i) put16(row + 2 * i, f32_to_f16_bits(normal(rng) * 0.05f));
        break;
      case GgmlType::kBF16:
        for (int64_t i = 0; i < cols; ++i) put16(row + 2 * i, f32_to_bf16_bits(normal(rng) * 0.05f));
        break;
      case GgmlType::kQ8_0:
        for (int64_t b = 0; b < cols / 32; ++b) {
          uint8_t* p = row + b * 34;
          put16(p, f32_to_f16_bits(signed_scale() * 0.1f));
          for (int i = 0; i < 32; ++i) p[2 + i] = static_cast<uint8_t>(std::max(-127, byte(rng) - 128));
        }
        break;
      case GgmlType::kQ4_0:
        for (int64_t b = 0; b < cols / 32; ++b) {
          uint8_t* p = row + b * 18;
          put16(p, f32_to_f16_bits(signed_scale()));
          for (int i = 0; i < 16; ++i) p[2 + i] = static_cast<uint8_t>(byte(rng));
        }
        break;
      case GgmlType::kQ4_K:
        for (int64_t b = 0; b < cols / 256; ++b) {
          uint8_t* p = row + b * 144;
          put16(p, f32_to_f16_bits(scale(rng) * 0.01f));
          put16(p + 2, f32_to_f16_bits(scale(rng) * 0.01f));
          for (int i = 4; i < 144; ++i) p[i] = static_cast<uint8_t>(byte(rng));
        }
        break;
      case GgmlType::kQ6_K:
        for (int64_t b = 0; b < cols / 256; ++b) {
          uint8_t* p = row + b * 210;
          for (int i = 0; i < 208; ++i) p[i] = static_cast<uint8_t>(byte(rng));
          put16(p + 208, f32_to_f16_bits(signed_scale() * 0.002f));
        }
        break;
      case GgmlType::kQ5_0:
        for (int64_t b = 0; b < cols / 32; ++b) {
          uint8_t* p = row + b * 22;
          put16(p, f32_to_f16_bits(signed_scale() * 0.5f));
          for (int i = 2; i < 22; ++i) p[i] = static_cast<uint8_t>(byte(rng));
        }
        break;
      case GgmlType::kQ4_1:
      case GgmlType::kQ5_1: {
        const int bb = type == GgmlType::kQ4_1 ? 20 : 24;
        for (int64_t b = 0; b < cols / 32; ++b) {
          uint8_t* p = row + b * bb;
          put16(p, f32_to_f16_bits(scale(rng) * 0.2f));
          put16(p + 2, f32_to_f16_bits(signed_scale() * 2.0f));
          for (int i = 4; i < bb; ++i) p[i] = static_cast<uint8_t>(byte(rng));
        }
        break;
      }
      case GgmlType::kIQ4_NL:
        for (int64_t b = 0; b < cols / 32; ++b) {
          uint8_t* p = row + b * 18;
          put16(p, f32_to_f16_bits(signed_scale() * 0.05f));
          for (int i = 2; i < 18; ++i) p[i] = static_cast<uint8_t>(byte(rng));
        }
        break;
      case GgmlType::kMXFP4:
        for (int64_t b = 0; b < cols / 32; ++b) {
          uint8_t* p = row + b * 17;
          p[0] = static_cast<uint8_t>(118 + byte(rng) % 8);  // scales 2^-10 .. 2^-3
          for (int i = 1; i < 17; ++i) p[i] = static_cast<uint8_t>(byte(rng));
        }
        break;
      case GgmlType::kIQ4_XS:
        for (int64_t b = 0; b < cols / 256; ++b) {
          uint8_t* p = row + b * 136;
          put16(p, f32_to_f16_bits(signed_scale() * 0.002f));
          for (int i = 2; i < 136; ++i) p[i] = static_cast<uint8_t>(byte(rng));
        }
        break;
      case GgmlType::kQ2_K:
        for (int64_t b = 0; b < cols / 256; ++b) {
          uint8_t* p = row + b * 84;
          for (int i = 0; i < 80; ++i) p[i] = static_cast<uint8_t>(byte(rng));
          put16(p + 80, f32_to_f16_bits(scale(rng) * 0.1f));
          put16(p + 82, f32_to_f16_bits(scale(rng) * 0.1f));
        }
        break;
      case GgmlType::kQ3_K:
        for (int64_t b = 0; b < cols / 256; ++b) {
          uint8_t* p = row + b * 110;
          for (int i = 0; i < 108; ++i) p[i] = static_cast<uint8_t>(byte(rng));
          put16(p + 108, f32_to_f16_bits(signed_scale() * 0.01f));
        }
        break;
      case GgmlType::kQ5_K:
        for (int64_t b = 0; b < cols / 256; ++b) {
          uint8_t* p = row + b * 176;
          put16(p, f32_to_f16_bits(scale(rng) * 0.005f));
          put16(p + 2, f32_to_f16_bits(scale(rng) * 0.01f));
          for (int i = 4; i < 176; ++i) p[i] = static_cast<uint8_t>(byte(rng));
        }
        break;
    }
  }
  return m;
}

// The matrix decoded by the CPU reference, as doubles.
std::vector<double> dequantize(GgmlType type, const std::vector<uint8_t>& m, int64_t rows, int64_t cols) {
  const int64_t rb = ggml::row_bytes(type, cols);
  std::vector<float> tmp(static_cast<size_t>(cols));
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    ggml::dequantize_row(type, m.data() + r * rb, tmp.data(), cols);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = tmp[c];
  }
  return out;
}

std::vector<float> random_floats(size_t n, std::mt19937_64& rng, float sd = 1.0f) {
  std::normal_distribution<float> normal(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

std::string dims(std::initializer_list<std::pair<const char*, int64_t>> kv) {
  std::string s;
  for (const auto& [k, v] : kv) s += (s.empty() ? "" : " ") + std::string(k) + "=" + std::to_string(v);
  return s;
}

// launch_matmul takes the tile (tensor-core) path when n > detail::kVecMaxTokens and the matrix
// suits the tiles (matmul.cu's dispatch), else the vector (f32) path: the tolerance follows.
constexpr double kTolVec = 1e-4;
constexpr double kTolTile = 1e-2;
bool takes_tile_path(const DeviceMatrix& m, int64_t n) { return n > detail::kVecMaxTokens && detail::tile_supported(m); }

// ==================================================================================================
class Checker {
 public:
  explicit Checker(const KernelCheckOptions& opt) : opt_(opt), rng_(opt.seed) {}

  KernelCheckReport run() {
    int count = 0;
    try {
      PLATFORM_CUDA_CHECK(cudaGetDeviceCount(&count));
      if (count == 0) throw CudaError("no CUDA device");
    } catch (const CudaError& e) {
      rep_.error = e.what();
      rep_.device = "none";
      return rep_;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
                  static_cast<double>(prop.totalGlobalMem) / (1 << 30));
    rep_.device = buf;
    try {
      PLATFORM_CUDA_CHECK(cudaSetDevice(0));
      PLATFORM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    } catch (const CudaError& e) {
      rep_.error = std::string("CUDA setup: ") + e.what();
      return rep_;
    }
    section("matmul", [&] { check_matmul_all(); });
    section("gate_up_silu", [&] { check_gate_up_all(); });
    section("get_rows", [&] { check_get_rows_all(); });
    section("rmsnorm", [&] { check_rmsnorm_all(); });
    section("qkv_finish", [&] { check_qkv_all(); });
    section("attention", [&] { check_attention_all(); });
    section("sample", [&] { check_sample_all(); });
    section("add", [&] { check_add_all(); });
    cudaStreamDestroy(stream_);
    return rep_;
  }

 private:
  bool want(const std::string& name) const { return opt_.filter.empty() || name.find(opt_.filter) != std::string::npos; }

  void add(KernelCheckResult r) {
    if (!std::isfinite(r.max_rel_err) || !std::isfinite(r.max_abs_err)) r.passed = false;
    if (opt_.log) opt_.log(r);
    rep_.results.push_back(std::move(r));
  }

  // Runs one case; a CUDA error or exception fails it, and a sticky one stops every later case.
  template <typename F>
  void run_case(const std::string& name, const std::string& shape, F&& body) {
    if (stopped_ || !want(name)) return;
    try {
      body();
    } catch (const std::exception& ex) {
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      r.max_abs_err = r.max_rel_err = INFINITY;
      r.passed = false;
      r.note = std::string("error: ") + ex.what();
      add(r);
      // A sticky error leaves the context unusable: stop everything.
      const cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) {
        rep_.error = name + " [" + shape + "]: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
        stopped_ = true;
      }
      cudaGetLastError();
    }
  }

  template <typename F>
  void section(const char* name, F&& body) {
    if (stopped_) return;
    try {
      body();
    } catch (const std::exception& ex) {  // outside any case (should not happen)
      rep_.error = std::string(name) + ": " + ex.what();
      stopped_ = true;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // matmul
  // ---------------------------------------------------------------------------------------------
  static std::vector<int64_t> cols_for(GgmlType t) {
    switch (t) {
      case GgmlType::kF32:
      case GgmlType::kF16:
      case GgmlType::kBF16:
        return {36, 96, 4128};  // 36: rows that are not a multiple of 16 bytes (per-element path)
      case GgmlType::kQ8_0:
      case GgmlType::kQ4_0:
      case GgmlType::kQ4_1:
      case GgmlType::kQ5_0:
      case GgmlType::kQ5_1:
      case GgmlType::kIQ4_NL:
      case GgmlType::kMXFP4:
        return {32, 96, 4128};  // 1, 3 and 129 blocks
      default:
        return {256, 768, 4352};  // 1, 3 and 17 super-blocks
    }
  }

  void check_matmul(GgmlType type, int64_t n, int64_t rows, int64_t cols, bool accumulate, int64_t ldy) {
    const std::string name = "matmul " + type_label(type);
    const std::string shape = dims({{"n", n}, {"rows", rows}, {"cols", cols}, {"ldy", ldy}}) + (accumulate ? " acc" : "");
    run_case(name, shape, [&] {
      const auto w = random_matrix(type, rows, cols, rng_);
      const auto wd = dequantize(type, w, rows, cols);
      const auto x = random_floats(static_cast<size_t>(n * cols), rng_);
      // y: random where accumulated, a sentinel in the ldy padding (must stay untouched).
      const float kSentinel = -12345.678f;
      std::vector<float> y0(static_cast<size_t>(n * ldy), kSentinel);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < rows; ++r) y0[t * ldy + r] = accumulate ? u(rng_) : std::nanf("");
      DeviceArray<uint8_t> dw(w);
      DeviceArray<float> dx(x), dy(y0);
      DeviceArray<uint8_t> ws(std::max<size_t>(1, matmul_workspace_bytes(n, cols)));
      DeviceMatrix m;
      m.type = static_cast<int>(type);
      m.rows = rows;
      m.cols = cols;
      m.row_bytes = ggml::row_bytes(type, cols);
      m.data = dw.get();
      launch_matmul(m, dx.get(), n, dy.get(), ldy, accumulate, Workspace{ws.get(), ws.size()}, stream_);
      sync(stream_, "launch_matmul");
      const auto y = dy.download();
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      r.tolerance = takes_tile_path(m, n) ? kTolTile : kTolVec;
      r.note = takes_tile_path(m, n) ? "tile path" : "vector path";
      int64_t pad_bad = 0;
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t row = 0; row < rows; ++row) {
          double ref = accumulate ? y0[t * ldy + row] : 0.0, mag = accumulate ? std::fabs(ref) : 0.0;
          const double* wr = wd.data() + row * cols;
          const float* xr = x.data() + t * cols;
          for (int64_t k = 0; k < cols; ++k) {
            ref += wr[k] * xr[k];
            mag += std::fabs(wr[k] * xr[k]);
          }
          const double err = std::fabs(static_cast<double>(y[t * ldy + row]) - ref);
          r.max_abs_err = std::max(r.max_abs_err, err);
          r.max_rel_err = std::max(r.max_rel_err, std::isfinite(err) ? err / std::max(mag, 1e-30) : INFINITY);
        }
        for (int64_t row = rows; row < ldy; ++row) pad_bad += f32_bits(y[t * ldy + row]) != f32_bits(kSentinel);
      }
      r.passed = r.max_rel_err <= r.tolerance && pad_bad == 0;
      if (pad_bad) r.note += ", " + std::to_string(pad_bad) + " values written in the ldy padding";
      add(r);
    });
  }

  void check_matmul_all() {
    const GgmlType types[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                              GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                              GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                              GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4};
    const int64_t ns[] = {1, 2, 3, 5, 8, 9, 17, 64, 100, 256};
    const int64_t rows_set[] = {1, 31, 257};
    for (GgmlType t : types) {
      if (!matmul_supports(static_cast<int>(t))) {
        add({"matmul " + type_label(t), "-", 0, 0, 0, false, "matmul_supports() says no"});
        continue;
      }
      const auto cols = cols_for(t);
      int i = 0;
      for (int64_t n : ns) {
        const int64_t rows = rows_set[i % 3], c = cols[(i / 3 + i) % 3];
        const bool acc = i % 2 == 1;
        const int64_t ldy = rows + (i % 3 == 0 ? 0 : 3 + i);
        check_matmul(t, n, rows, c, acc, ldy);
        ++i;
      }
      // A model-sized row length with many rows, at decode and prefill sizes.
      check_matmul(t, 1, 1024, 4096, false, 1024);
      check_matmul(t, 100, 1024, 4096, true, 1030);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // gate_up_silu
  // ---------------------------------------------------------------------------------------------
  void check_gate_up(GgmlType type, int64_t n, int64_t rows, int64_t cols) {
    const std::string name = "gate_up_silu " + type_label(type);
    const std::string shape = dims({{"n", n}, {"rows", rows}, {"cols", cols}});
    run_case(name, shape, [&] {
      const auto g = random_matrix(type, rows, cols, rng_), u = random_matrix(type, rows, cols, rng_);
      const auto gd = dequantize(type, g, rows, cols), ud = dequantize(type, u, rows, cols);
      const auto x = random_floats(static_cast<size_t>(n * cols), rng_);
      DeviceArray<uint8_t> dg(g), du(u), ws(std::max<size_t>(1, matmul_workspace_bytes(n, cols)));
      DeviceArray<float> dx(x), dh(static_cast<size_t>(n * rows));
      DeviceMatrix mg, mu;
      mg.type = mu.type = static_cast<int>(type);
      mg.rows = mu.rows = rows;
      mg.cols = mu.cols = cols;
      mg.row_bytes = mu.row_bytes = ggml::row_bytes(type, cols);
      mg.data = dg.get();
      mu.data = du.get();
      launch_gate_up_silu(mg, mu, dx.get(), n, dh.get(), Workspace{ws.get(), ws.size()}, stream_);
      sync(stream_, "launch_gate_up_silu");
      const auto h = dh.download();
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      r.tolerance = takes_tile_path(mg, n) ? kTolTile : kTolVec;
      r.note = takes_tile_path(mg, n) ? "tile path" : "vector path";
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t row = 0; row < rows; ++row) {
          double a = 0, b = 0, ma = 0, mb = 0;
          for (int64_t k = 0; k < cols; ++k) {
            const double xv = x[t * cols + k];
            a += gd[row * cols + k] * xv;
            b += ud[row * cols + k] * xv;
            ma += std::fabs(gd[row * cols + k] * xv);
            mb += std::fabs(ud[row * cols + k] * xv);
          }
          const double ref = silu(a) * b;
          // First-order error bound for errors e_a <= tol*ma, e_b <= tol*mb (|silu'| <= 1.1).
          const double mag = 1.1 * ma * std::fabs(b) + std::fabs(silu(a)) * mb;
          const double err = std::fabs(static_cast<double>(h[t * rows + row]) - ref);
          r.max_abs_err = std::max(r.max_abs_err, err);
          r.max_rel_err = std::max(r.max_rel_err, std::isfinite(err) ? err / std::max(mag, 1e-30) : INFINITY);
        }
      }
      r.passed = r.max_rel_err <= r.tolerance;
      add(r);
    });
  }

  void check_gate_up_all() {
    const GgmlType types[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                              GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                              GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                              GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4};
    const int64_t ns[] = {1, 3, 9, 100};
    for (GgmlType t : types) {
      if (!matmul_supports(static_cast<int>(t))) continue;
      const auto cols = cols_for(t);
      int i = 0;
      for (int64_t n : ns) {
        check_gate_up(t, n, i % 2 ? 257 : 33, cols[i % 3]);
        ++i;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // get_rows
  // ---------------------------------------------------------------------------------------------
  void check_get_rows(GgmlType type, int64_t vocab, int64_t cols, int64_t n) {
    const std::string name = "get_rows " + type_label(type);
    const std::string shape = dims({{"n", n}, {"vocab", vocab}, {"cols", cols}});
    run_case(name, shape, [&] {
      const auto w = random_matrix(type, vocab, cols, rng_);
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
      std::vector<int32_t> ids(static_cast<size_t>(n));
      for (auto& id : ids) id = pick(rng_);
      ids[0] = static_cast<int32_t>(vocab - 1);  // the last row
      if (n > 2) ids[1] = ids[2];                // a repeated id
      DeviceArray<uint8_t> dw(w);
      DeviceArray<int32_t> di(ids);
      DeviceArray<float> dout(static_cast<size_t>(n * cols));
      DeviceMatrix m;
      m.type = static_cast<int>(type);
      m.rows = vocab;
      m.cols = cols;
      m.row_bytes = ggml::row_bytes(type, cols);
      m.data = dw.get();
      launch_get_rows(m, di.get(), n, dout.get(), stream_);
      sync(stream_, "launch_get_rows");
      const auto out = dout.download();
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      // Exact, except the types with a min (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K): 1 ulp of the larger of
      // d*sc*q and dmin*m (a fused multiply-add).
      const bool fused_ok = type == GgmlType::kQ4_K || type == GgmlType::kQ5_K || type == GgmlType::kQ2_K ||
                            type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1;
      r.tolerance = fused_ok ? 1.0 : 0.0;  // in ulps (see above); max_rel_err holds ulps here
      std::vector<float> ref(static_cast<size_t>(cols));
      // Bit-identical, except that +0 and -0 count as equal: the host computes d * q (-0 for q = 0
      // and d < 0, the signed scales random_matrix makes), the device q * d + o with o = +0.
      auto same = [](float got, float want) { return f32_bits(got) == f32_bits(want) || (got == 0.0f && want == 0.0f); };
      int64_t inexact = 0;
      for (int64_t i = 0; i < n; ++i) {
        ggml::dequantize_row(type, w.data() + ids[i] * m.row_bytes, ref.data(), cols);
        for (int64_t c = 0; c < cols; ++c) {
          const float got = out[i * cols + c];
          if (same(got, ref[c])) continue;
          ++inexact;
          const double err = std::fabs(static_cast<double>(got) - ref[c]);
          r.max_abs_err = std::max(r.max_abs_err, err);
          // An ulp of the magnitude involved (|ref| + 2 * dmin * 63 bounds both Q4_K terms; for the
          // other types this only reports the size, the tolerance is 0).
          const double scale = std::max(std::fabs(static_cast<double>(ref[c])), 1e-30);
          r.max_rel_err = std::max(r.max_rel_err, std::isfinite(err) ? err / (scale * 0x1p-23) : INFINITY);
        }
      }
      if (fused_ok && inexact > 0) {
        // Recompute the allowance per element against the Q4_K terms' magnitude.
        r.max_rel_err = 0;
        for (int64_t i = 0; i < n; ++i) {
          const uint8_t* row = w.data() + ids[i] * m.row_bytes;
          ggml::dequantize_row(type, row, ref.data(), cols);
          for (int64_t c = 0; c < cols; ++c) {
            const float got = out[i * cols + c];
            if (same(got, ref[c])) continue;
            const double term = min_term_magnitude(type, row, c);
            const double err = std::fabs(static_cast<double>(got) - ref[c]);
            r.max_rel_err = std::max(r.max_rel_err, std::isfinite(err) ? err / (std::max(term, 1e-30) * 0x1p-23) : INFINITY);
          }
        }
      }
      r.passed = fused_ok ? r.max_rel_err <= r.tolerance : inexact == 0;
      r.note = inexact ? std::to_string(inexact) + " values not bit-identical (error in ulps)" : "bit-exact";
      add(r);
    });
  }

  // max(|d * sc * q_max|, |dmin * m|) of element c of a row of a type with mins.
  static double min_term_magnitude(GgmlType type, const uint8_t* row, int64_t c) {
    uint8_t sc, mm;
    uint16_t d, dmin;
    int q_max;
    if (type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1) {
      // d at byte 0 and m at byte 2 of a 20- or 24-byte block; q up to 15 or 31, no sub-scale
      const int64_t bb = type == GgmlType::kQ4_1 ? 20 : 24;
      std::memcpy(&d, row + (c / 32) * bb, 2);
      std::memcpy(&dmin, row + (c / 32) * bb + 2, 2);
      sc = 1;
      mm = 1;
      q_max = type == GgmlType::kQ4_1 ? 15 : 31;
    } else if (type == GgmlType::kQ2_K) {
      const ggml::BlockQ2_K* b = reinterpret_cast<const ggml::BlockQ2_K*>(row) + c / 256;
      sc = b->scales[(c % 256) / 16] & 0xF;
      mm = b->scales[(c % 256) / 16] >> 4;
      d = b->d;
      dmin = b->dmin;
      q_max = 3;
    } else if (type == GgmlType::kQ5_K) {
      const ggml::BlockQ5_K* b = reinterpret_cast<const ggml::BlockQ5_K*>(row) + c / 256;
      ggml::q4_k_scale_min(static_cast<int>((c % 256) / 32), b->scales, &sc, &mm);
      d = b->d;
      dmin = b->dmin;
      q_max = 31;
    } else {
      const ggml::BlockQ4_K* b = reinterpret_cast<const ggml::BlockQ4_K*>(row) + c / 256;
      ggml::q4_k_scale_min(static_cast<int>((c % 256) / 32), b->scales, &sc, &mm);
      d = b->d;
      dmin = b->dmin;
      q_max = 15;
    }
    return std::max(std::fabs(static_cast<double>(ggml::fp16_to_f32(d)) * sc * q_max),
                    std::fabs(static_cast<double>(ggml::fp16_to_f32(dmin)) * mm));
  }

  void check_get_rows_all() {
    const GgmlType types[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                              GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                              GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                              GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4};
    for (GgmlType t : types) {
      if (!matmul_supports(static_cast<int>(t))) continue;
      const auto cols = cols_for(t);
      check_get_rows(t, 1, cols[0], 1);
      check_get_rows(t, 1000, cols[1], 7);
      check_get_rows(t, 300, cols[2], 65);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // rmsnorm
  // ---------------------------------------------------------------------------------------------
  void check_rmsnorm(int64_t n_src, int64_t n, int64_t dim, bool gather) {
    const std::string name = "rmsnorm";
    const std::string shape = dims({{"n", n}, {"dim", dim}}) + (gather ? " rows=gather" : "");
    run_case(name, shape, [&] {
      const auto x = random_floats(static_cast<size_t>(n_src * dim), rng_, 3.0f);
      const auto w = random_floats(static_cast<size_t>(dim), rng_);
      std::vector<int32_t> rows(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) rows[i] = static_cast<int32_t>(gather ? (n_src - 1 - 2 * i) % n_src : i);
      const float eps = 1e-5f;
      DeviceArray<float> dx(x), dw(w), dout(static_cast<size_t>(n * dim));
      DeviceArray<int32_t> drows(rows);
      launch_rmsnorm(dout.get(), dx.get(), gather ? drows.get() : nullptr, dw.get(), n, dim, eps, stream_);
      sync(stream_, "launch_rmsnorm");
      const auto out = dout.download();
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      r.tolerance = 1e-5;  // f32 sum of squares and scaling, rsqrt within a few ulp
      for (int64_t i = 0; i < n; ++i) {
        const float* xi = x.data() + static_cast<int64_t>(rows[i]) * dim;
        double ss = 0;
        for (int64_t c = 0; c < dim; ++c) ss += static_cast<double>(xi[c]) * xi[c];
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
        for (int64_t c = 0; c < dim; ++c) {
          const double ref = xi[c] * inv * w[c];
          const double err = std::fabs(static_cast<double>(out[i * dim + c]) - ref);
          r.max_abs_err = std::max(r.max_abs_err, err);
          r.max_rel_err = std::max(r.max_rel_err, std::isfinite(err) ? err / std::max(std::fabs(ref), 1e-30) : INFINITY);
        }
      }
      r.passed = r.max_rel_err <= r.tolerance;
      add(r);
    });
  }

  void check_rmsnorm_all() {
    check_rmsnorm(1, 1, 8, false);
    check_rmsnorm(5, 5, 100, false);
    check_rmsnorm(37, 37, 4096, false);
    check_rmsnorm(300, 3, 288, true);
    check_rmsnorm(64, 17, 4096, true);
    check_rmsnorm(2, 1, 5120, true);
  }

  // ---------------------------------------------------------------------------------------------
  // KV cache helpers (attention, qkv_finish)
  // ---------------------------------------------------------------------------------------------
  struct Seqs {
    std::vector<int64_t> lengths;            // positions each sequence holds after this step
    std::vector<std::vector<int32_t>> tabs;  // block tables
    int64_t max_blocks = 0, n_blocks = 0;
    std::vector<int32_t> flat;  // [n_seqs][max_blocks]
  };

  // Block tables for the sequences over a shuffled pool of blocks (plus spare blocks).
  Seqs make_tables(const std::vector<int64_t>& lengths, int64_t bs) {
    Seqs s;
    s.lengths = lengths;
    int64_t need = 0;
    for (int64_t L : lengths) {
      const int64_t b = (L + bs - 1) / bs;
      need += b;
      s.max_blocks = std::max(s.max_blocks, b);
    }
    s.n_blocks = need + 3;
    std::vector<int32_t> pool(static_cast<size_t>(s.n_blocks));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng_);
    size_t next = 0;
    s.max_blocks += 1;  // a spare column: the table width need not be tight
    s.flat.assign(lengths.size() * static_cast<size_t>(s.max_blocks), -1);
    for (size_t i = 0; i < lengths.size(); ++i) {
      const int64_t b = (lengths[i] + bs - 1) / bs;
      s.tabs.emplace_back();
      for (int64_t j = 0; j < b; ++j) {
        s.tabs.back().push_back(pool[next]);
        s.flat[i * s.max_blocks + j] = pool[next++];
      }
    }
    return s;
  }

  static size_t kv_index(int64_t layer, int64_t n_blocks, int64_t block, int64_t kind, int64_t bs, int64_t slot,
                         int64_t kv_dim) {
    return static_cast<size_t>((((layer * n_blocks + block) * 2 + kind) * bs + slot) * kv_dim);
  }

  // The launch arguments that describe the step's tokens and the cache, from device arrays.
  static StepTables step_tables(const Seqs& s, const int32_t* pos, const int32_t* seq_of, const int32_t* blocks, int64_t n) {
    StepTables st;
    st.pos = pos;
    st.seq_of = seq_of;
    st.blocks = blocks;
    st.n = n;
    st.n_seqs = static_cast<int64_t>(s.lengths.size());
    st.max_blocks = s.max_blocks;
    return st;
  }
  static KvLayout kv_layout(const Seqs& s, void* cache, int64_t bs, int64_t kv_dim) {
    KvLayout kv;
    kv.base = reinterpret_cast<__half*>(cache);
    kv.n_blocks = s.n_blocks;
    kv.block_size = bs;
    kv.kv_dim = kv_dim;
    return kv;
  }

  // ---------------------------------------------------------------------------------------------
  // qkv_finish
  // ---------------------------------------------------------------------------------------------
  void check_qkv(int64_t n_heads, int64_t n_kv, int64_t hd, int64_t rope_dim, bool neox, bool bias,
                 const std::vector<int64_t>& lengths, const std::vector<int64_t>& new_tokens, float base) {
    const std::string name = std::string("qkv_finish ") + (neox ? "neox" : "llama");
    const std::string shape = dims({{"heads", n_heads}, {"kv", n_kv}, {"hd", hd}, {"rope_dim", rope_dim}}) +
                              (bias ? " bias" : "") + " seqs=" + std::to_string(lengths.size());
    run_case(name, shape, [&] {
      const int64_t bs = 16, layers = 3, layer = 1, q_dim = n_heads * hd, kv_dim = n_kv * hd;
      Seqs s = make_tables(lengths, bs);
      // Tokens: the last new_tokens[i] positions of sequence i.
      std::vector<int32_t> pos, seq_of;
      for (size_t i = 0; i < lengths.size(); ++i)
        for (int64_t p = lengths[i] - new_tokens[i]; p < lengths[i]; ++p) {
          pos.push_back(static_cast<int32_t>(p));
          seq_of.push_back(static_cast<int32_t>(i));
        }
      const int64_t n = static_cast<int64_t>(pos.size());
      const auto q = random_floats(static_cast<size_t>(n * q_dim), rng_);
      const auto k = random_floats(static_cast<size_t>(n * kv_dim), rng_);
      const auto v = random_floats(static_cast<size_t>(n * kv_dim), rng_);
      const auto bq = random_floats(static_cast<size_t>(q_dim), rng_, 0.5f);
      const auto bk = random_floats(static_cast<size_t>(kv_dim), rng_, 0.5f);
      const auto bv = random_floats(static_cast<size_t>(kv_dim), rng_, 0.5f);
      std::vector<float> inv_freq(static_cast<size_t>(rope_dim / 2));
      for (int64_t i = 0; i < rope_dim / 2; ++i) inv_freq[i] = static_cast<float>(std::pow(base, -2.0 * i / rope_dim));
      // The cache starts with a sentinel pattern that must survive outside the written slots.
      const size_t kv_elems = static_cast<size_t>(layers * s.n_blocks * 2 * bs * kv_dim);
      std::vector<uint16_t> cache0(kv_elems);
      for (size_t i = 0; i < kv_elems; ++i) cache0[i] = static_cast<uint16_t>(0x3c00u + (i * 2654435761u >> 22) % 512);
      DeviceArray<float> dq(q), dk(k), dv(v), dbq(bq), dbk(bk), dbv(bv), dinv(inv_freq);
      DeviceArray<int32_t> dpos(pos), dseq(seq_of), dblk(s.flat);
      DeviceArray<uint16_t> dcache(cache0);
      RopeParams rope;
      rope.n_heads = n_heads;
      rope.n_kv_heads = n_kv;
      rope.head_dim = hd;
      rope.rope_dim = rope_dim;
      rope.neox = neox;
      rope.inv_freq = dinv.get();
      const StepTables st = step_tables(s, dpos.get(), dseq.get(), dblk.get(), n);
      const KvLayout kv = kv_layout(s, dcache.get(), bs, kv_dim);
      launch_qkv_finish(dq.get(), dk.get(), dv.get(), bias ? dbq.get() : nullptr, bias ? dbk.get() : nullptr,
                        bias ? dbv.get() : nullptr, rope, st, kv, layer, stream_);
      sync(stream_, "launch_qkv_finish");
      const auto qo = dq.download();
      const auto cache = dcache.download();

      // Reference rotation of one head vector (in place, double).
      auto rotate = [&](std::vector<double>& h, int64_t p) {
        const int64_t half = rope_dim / 2;
        for (int64_t i = 0; i < half; ++i) {
          const double ang = static_cast<double>(p) * static_cast<double>(inv_freq[i]);
          const double c = std::cos(ang), sn = std::sin(ang);
          const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
          const double a = h[i0], b = h[i1];
          h[i0] = a * c - b * sn;
          h[i1] = a * sn + b * c;
        }
      };
      // Magnitude of the pair an element belongs to (its error scale).
      auto pair_mag = [&](const std::vector<double>& h, int64_t i) {
        const int64_t half = rope_dim / 2;
        if (i >= rope_dim) return std::fabs(h[i]);
        const int64_t j = neox ? (i < half ? i + half : i - half) : (i ^ 1);
        return std::fabs(h[i]) + std::fabs(h[j]);
      };
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      r.tolerance = 1e-5;  // q; the f16 cache check uses kCacheTol
      const double kCacheTol = 1e-3;
      double cache_err = 0;
      std::vector<char> written(kv_elems, 0);
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < n_heads; ++h) {
          std::vector<double> in(static_cast<size_t>(hd));
          for (int64_t i = 0; i < hd; ++i) in[i] = static_cast<double>(q[t * q_dim + h * hd + i]) + (bias ? bq[h * hd + i] : 0.0);
          std::vector<double> out = in;
          rotate(out, pos[t]);
          for (int64_t i = 0; i < hd; ++i) {
            const double err = std::fabs(static_cast<double>(qo[t * q_dim + h * hd + i]) - out[i]);
            r.max_abs_err = std::max(r.max_abs_err, err);
            r.max_rel_err = std::max(r.max_rel_err, std::isfinite(err) ? err / std::max(pair_mag(in, i), 1e-30) : INFINITY);
          }
        }
        const int64_t seq = seq_of[t], p = pos[t];
        const int64_t block = s.tabs[seq][p / bs], slot = p % bs;
        for (int64_t kind = 0; kind < 2; ++kind) {
          const size_t base = kv_index(layer, s.n_blocks, block, kind, bs, slot, kv_dim);
          for (int64_t h = 0; h < n_kv; ++h) {
            std::vector<double> in(static_cast<size_t>(hd));
            const auto& src = kind == 0 ? k : v;
            const auto& b = kind == 0 ? bk : bv;
            for (int64_t i = 0; i < hd; ++i) in[i] = static_cast<double>(src[t * kv_dim + h * hd + i]) + (bias ? b[h * hd + i] : 0.0);
            std::vector<double> out = in;
            if (kind == 0) rotate(out, p);
            for (int64_t i = 0; i < hd; ++i) {
              const size_t at = base + static_cast<size_t>(h * hd + i);
              written[at] = 1;
              const double got = f16_bits_to_f32(cache[at]);
              const double err = std::fabs(got - out[i]);
              const double mag = kind == 0 ? pair_mag(in, i) : std::fabs(in[i]);
              cache_err = std::max(cache_err, std::isfinite(err) ? err / std::max(mag, 1e-30) : INFINITY);
            }
          }
        }
      }
      int64_t stray = 0;
      for (size_t i = 0; i < kv_elems; ++i) stray += !written[i] && cache[i] != cache0[i];
      r.passed = r.max_rel_err <= r.tolerance && cache_err <= kCacheTol && stray == 0;
      char buf[160];
      std::snprintf(buf, sizeof buf, "cache err %.2e (tol %.0e)%s", cache_err, kCacheTol,
                    stray ? (", " + std::to_string(stray) + " cache values written outside the step's slots").c_str() : "");
      r.note = buf;
      add(r);
    });
  }

  void check_qkv_all() {
    // llama form, full rotation, no bias, decode tokens of three sequences (one long).
    check_qkv(8, 4, 64, 64, false, false, {1, 40, 3000}, {1, 1, 1}, 10000.0f);
    // neox (qwen2) with biases, a prefill chunk of 19 tokens next to decode tokens.
    check_qkv(8, 2, 64, 64, true, true, {19, 700, 5}, {19, 1, 1}, 1000000.0f);
    // partial rotation (rope_dim < head_dim), both forms, GQA 4, head_dim 128.
    check_qkv(32, 8, 128, 64, false, true, {33, 2}, {17, 1}, 500000.0f);
    check_qkv(32, 8, 128, 32, true, false, {2049}, {1}, 500000.0f);
    // tiny heads (head_dim 8) as in the small test models.
    check_qkv(4, 1, 8, 8, false, false, {5, 1, 17}, {5, 1, 2}, 10000.0f);
  }

  // ---------------------------------------------------------------------------------------------
  // attention
  // ---------------------------------------------------------------------------------------------
  // lengths: positions of each sequence after the step; new_tokens: how many of its last positions
  // are this step's tokens (1: decode; more: a prefill chunk).
  // sized_for > 0: as the CUDA backend does, the workspace is sized once for that context and the
  // launch passes the power-of-two span (>= 256) covering the step's longest sequence.
  void check_attention(int64_t n_heads, int64_t n_kv, int64_t hd, int64_t bs, const std::vector<int64_t>& lengths,
                       const std::vector<int64_t>& new_tokens, float q_scale, const char* what, int64_t sized_for = 0) {
    const std::string name = "attention";
    const std::string shape = dims({{"heads", n_heads}, {"kv", n_kv}, {"hd", hd}, {"bs", bs}}) + " " + what;
    run_case(name, shape, [&] {
      const int64_t layers = 2, layer = 1, q_dim = n_heads * hd, kv_dim = n_kv * hd;
      Seqs s = make_tables(lengths, bs);
      std::vector<int32_t> pos, seq_of;
      int64_t max_context = 0;
      // Decode tokens first, then the chunks, as the scheduler orders them.
      for (int pass = 0; pass < 2; ++pass)
        for (size_t i = 0; i < lengths.size(); ++i) {
          if ((new_tokens[i] == 1) != (pass == 0)) continue;
          for (int64_t p = lengths[i] - new_tokens[i]; p < lengths[i]; ++p) {
            pos.push_back(static_cast<int32_t>(p));
            seq_of.push_back(static_cast<int32_t>(i));
          }
          max_context = std::max(max_context, lengths[i]);
        }
      const int64_t n = static_cast<int64_t>(pos.size());
      const auto q = random_floats(static_cast<size_t>(n * q_dim), rng_, q_scale);
      // The cache: random f16 values everywhere (other layers and spare blocks too).
      const size_t kv_elems = static_cast<size_t>(layers * s.n_blocks * 2 * bs * kv_dim);
      std::vector<uint16_t> cache(kv_elems);
      {
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (auto& c : cache) c = f32_to_f16_bits(nd(rng_));
      }
      DeviceArray<float> dq(q), datt(static_cast<size_t>(n * q_dim));
      DeviceArray<int32_t> dpos(pos), dseq(seq_of), dblk(s.flat);
      DeviceArray<uint16_t> dcache(cache);
      int64_t ws_context = max_context;
      if (sized_for > 0) {
        ws_context = sized_for;
        int64_t span = 256;
        while (span < max_context) span *= 2;
        max_context = std::min(span, std::max(sized_for, max_context));
      }
      DeviceArray<uint8_t> ws(std::max<size_t>(1, attention_workspace_bytes(n, n_heads, hd, ws_context)));
      const StepTables st = step_tables(s, dpos.get(), dseq.get(), dblk.get(), n);
      const KvLayout kv = kv_layout(s, dcache.get(), bs, kv_dim);
      launch_attention(dq.get(), datt.get(), st, kv, layer, n_heads, n_kv, hd, max_context, Workspace{ws.get(), ws.size()},
                       stream_);
      sync(stream_, "launch_attention");
      const auto att = datt.download();
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      r.tolerance = 2e-3;  // error / max|V| (see the top of the file)
      const double inv_sqrt = 1.0 / std::sqrt(static_cast<double>(hd));
      const int64_t group = n_heads / n_kv;
      std::vector<double> sc;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t seq = seq_of[t], P = pos[t] + 1;
        for (int64_t h = 0; h < n_heads; ++h) {
          const int64_t kh = h / group;
          sc.assign(static_cast<size_t>(P), 0.0);
          double mx = -INFINITY;
          for (int64_t p = 0; p < P; ++p) {
            const size_t kb = kv_index(layer, s.n_blocks, s.tabs[seq][p / bs], 0, bs, p % bs, kv_dim) + kh * hd;
            double d = 0;
            for (int64_t i = 0; i < hd; ++i) d += static_cast<double>(q[t * q_dim + h * hd + i]) * f16_bits_to_f32(cache[kb + i]);
            sc[p] = d * inv_sqrt;
            mx = std::max(mx, sc[p]);
          }
          double sum = 0;
          for (auto& x : sc) sum += (x = std::exp(x - mx));
          for (int64_t i = 0; i < hd; ++i) {
            double o = 0, vmax = 0;
            for (int64_t p = 0; p < P; ++p) {
              const size_t vb = kv_index(layer, s.n_blocks, s.tabs[seq][p / bs], 1, bs, p % bs, kv_dim) + kh * hd;
              const double vv = f16_bits_to_f32(cache[vb + i]);
              o += sc[p] * vv;
              vmax = std::max(vmax, std::fabs(vv));
            }
            o /= sum;
            const double err = std::fabs(static_cast<double>(att[t * q_dim + h * hd + i]) - o);
            r.max_abs_err = std::max(r.max_abs_err, err);
            r.max_rel_err = std::max(r.max_rel_err, std::isfinite(err) ? err / std::max(vmax, 1e-30) : INFINITY);
          }
        }
      }
      r.passed = r.max_rel_err <= r.tolerance;
      add(r);
    });
  }

  void check_attention_all() {
    // Decode only: group 1, head_dim 64, lengths 1 .. 1100 (beyond a split-K chunk).
    check_attention(8, 8, 64, 16, {1, 17, 300, 1100}, {1, 1, 1, 1}, 1.0f, "decode lens=1,17,300,1100");
    // GQA 4, head_dim 128 (Llama 3 8B), decode tokens and a 7-token chunk and a 33-token prompt.
    check_attention(32, 8, 128, 16, {1, 5, 1500, 64, 33}, {1, 1, 1, 7, 33}, 1.0f, "mixed lens=1,5,1500,64+7,33+33");
    // GQA 8 with tiny heads (head_dim 8) and a long context.
    check_attention(8, 1, 8, 16, {3, 1000, 2049}, {1, 1, 1}, 1.0f, "decode lens=3,1000,2049");
    // A sharp softmax (scores of std ~8): the running max must be handled.
    check_attention(8, 1, 128, 16, {700, 2}, {1, 2}, 8.0f, "peaky lens=700,2+2");
    // A prompt of 200 tokens from position 0 (the prefill path), block size 32.
    check_attention(16, 4, 64, 32, {200}, {200}, 1.0f, "prefill len=200");
    // Many decoding sequences at once (a big batch), head_dim 128.
    {
      std::vector<int64_t> lens, toks;
      std::uniform_int_distribution<int> len(1, 600);
      for (int i = 0; i < 64; ++i) {
        lens.push_back(len(rng_));
        toks.push_back(1);
      }
      check_attention(32, 8, 128, 16, lens, toks, 1.0f, "decode 64 seqs lens 1..600");
      // The same batch with the workspace sized for a 3000-token context and the span 1024
      // passed at launch, as llm_backend.cu does (a shorter span splits into more partials).
      check_attention(32, 8, 128, 16, lens, toks, 1.0f, "decode 64 seqs, span 1024 of context 3000", 3000);
    }
    // Head dims that are not a multiple of 8 (the 4-byte load path) and a group of 3.
    check_attention(6, 2, 6, 16, {1, 40, 700}, {1, 1, 1}, 1.0f, "hd 6, group 3, lens=1,40,700");
    check_attention(4, 4, 10, 8, {300, 9}, {1, 9}, 1.0f, "hd 10, lens=300,9+9");
    check_attention(12, 1, 24, 16, {513}, {1}, 1.0f, "hd 24, group 12, len=513");
  }

  // ---------------------------------------------------------------------------------------------
  // sample
  // ---------------------------------------------------------------------------------------------
  struct RefSample {
    std::vector<int32_t> kept;       // kept token ids
    std::vector<double> prob;        // their normalised probabilities
    double margin = INFINITY;        // distance of the nearest top-p / min-p / top-k decision
    int32_t greedy = -1;
  };

  // sampler.cc's algorithm on one row (penalties in float as there; probabilities in double).
  static RefSample reference_sample(const std::vector<float>& logits, const SampleParams& p,
                                    const std::vector<int32_t>& ptok, const std::vector<int32_t>& pcnt) {
    RefSample out;
    std::vector<float> l = logits;
    for (int32_t i = 0; i < p.penalty_count; ++i) {
      const int32_t tok = ptok[p.penalty_offset + i], cnt = pcnt[p.penalty_offset + i];
      l[tok] -= p.frequency_penalty * static_cast<float>(cnt) + p.presence_penalty;
    }
    const int64_t V = static_cast<int64_t>(l.size());
    if (p.temperature <= 0.0f) {
      out.greedy = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      return out;
    }
    std::vector<std::pair<double, int32_t>> c(static_cast<size_t>(V));
    const float inv_t = 1.0f / p.temperature;
    for (int64_t i = 0; i < V; ++i) c[i] = {static_cast<double>(l[i] * inv_t), static_cast<int32_t>(i)};
    auto by = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
    std::sort(c.begin(), c.end(), by);
    if (p.top_k > 0 && p.top_k < V) {
      out.margin = std::min(out.margin, std::fabs(c[p.top_k - 1].first - c[p.top_k].first));
      c.resize(static_cast<size_t>(p.top_k));
    }
    const double mx = c[0].first;
    double sum = 0;
    for (auto& e : c) sum += (e.first = std::exp(e.first - mx));
    for (auto& e : c) e.first /= sum;
    if (p.top_p < 1.0f) {
      double cum = 0;
      size_t keep = c.size();
      for (size_t i = 0; i < c.size(); ++i) {
        cum += c[i].first;
        out.margin = std::min(out.margin, std::fabs(cum - p.top_p));
        if (cum >= p.top_p) {
          keep = i + 1;
          break;
        }
      }
      c.resize(keep);
    }
    if (p.min_p > 0.0f) {
      double pmax = 0;
      for (const auto& e : c) pmax = std::max(pmax, e.first);
      const double floor = static_cast<double>(p.min_p) * pmax;
      for (const auto& e : c) out.margin = std::min(out.margin, std::fabs(e.first - floor) / pmax);
      c.erase(std::remove_if(c.begin(), c.end(), [&](const auto& e) { return e.first < floor; }), c.end());
    }
    double total = 0;
    for (const auto& e : c) total += e.first;
    for (const auto& e : c) {
      out.kept.push_back(e.second);
      out.prob.push_back(e.first / total);
    }
    return out;
  }

  void check_sample(const char* what, int64_t vocab, SampleParams p, int64_t n_penalties, bool plant_ties) {
    const std::string name = p.temperature <= 0 ? "sample greedy" : "sample";
    const std::string shape = dims({{"vocab", vocab}}) + " " + what;
    run_case(name, shape, [&] {
      // Logits (regenerated until no top-k / top-p / min-p decision is within 1e-4 of its edge,
      // where f32 and f64 may legitimately disagree).
      std::vector<float> logits;
      std::vector<int32_t> ptok, pcnt;
      RefSample ref;
      for (int attempt = 0; attempt < 50; ++attempt) {
        logits = random_floats(static_cast<size_t>(vocab), rng_, 2.0f);
        ptok.clear();
        pcnt.clear();
        std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(vocab - 1));
        std::uniform_int_distribution<int32_t> cnt(1, 5);
        for (int64_t i = 0; i < n_penalties; ++i) {
          int32_t t = tok(rng_);
          if (std::find(ptok.begin(), ptok.end(), t) != ptok.end()) continue;
          ptok.push_back(t);
          pcnt.push_back(cnt(rng_));
        }
        if (plant_ties && vocab >= 8) {
          // The maximum appears three times: greedy must return the first one.
          float mx = *std::max_element(logits.begin(), logits.end()) + 1.0f;
          logits[vocab / 2] = logits[vocab / 3] = logits[vocab - 1] = mx;
          // A penalised token would otherwise win: check the penalty comes first.
          if (!ptok.empty()) logits[ptok[0]] = mx + 0.5f;
        }
        p.penalty_offset = 0;
        p.penalty_count = static_cast<int32_t>(ptok.size());
        ref = reference_sample(logits, p, ptok, pcnt);
        if (ref.margin > 1e-4) break;
      }
      // R rows of the same logits with stratified uniforms.
      const int64_t R = p.temperature <= 0 ? 3 : std::min<int64_t>(4096, std::max<int64_t>(64, (int64_t{1} << 26) / vocab));
      std::vector<float> all(static_cast<size_t>(R * vocab));
      for (int64_t i = 0; i < R; ++i) std::copy(logits.begin(), logits.end(), all.begin() + i * vocab);
      std::vector<SampleParams> ps(static_cast<size_t>(R), p);
      for (int64_t i = 0; i < R; ++i) ps[i].uniform = (static_cast<double>(i) + 0.5) / static_cast<double>(R);
      if (ptok.empty()) {
        ptok.push_back(0);
        pcnt.push_back(0);
      }
      DeviceArray<float> dl(all);
      DeviceArray<SampleParams> dp(ps);
      DeviceArray<int32_t> dpt(ptok), dpc(pcnt), dtok(static_cast<size_t>(R));
      DeviceArray<uint8_t> ws(std::max<size_t>(1, sample_workspace_bytes(R, vocab)));
      launch_sample(dl.get(), R, vocab, dp.get(), dpt.get(), dpc.get(), nullptr, dtok.get(), Workspace{ws.get(), ws.size()}, stream_);
      sync(stream_, "launch_sample");
      const auto toks = dtok.download();
      KernelCheckResult r;
      r.name = name;
      r.shape = shape;
      if (p.temperature <= 0) {
        r.tolerance = 0;
        int64_t wrong = 0;
        for (int64_t i = 0; i < R; ++i) wrong += toks[i] != ref.greedy;
        r.max_abs_err = r.max_rel_err = static_cast<double>(wrong);
        r.passed = wrong == 0;
        r.note = "want " + std::to_string(ref.greedy) + ", got " + std::to_string(toks[0]);
        add(r);
        return;
      }
      r.tolerance = 1.0 / static_cast<double>(R) + 1e-3;
      std::vector<double> freq(static_cast<size_t>(vocab), 0.0);
      int64_t outside = 0, bad_id = 0;
      std::vector<char> kept(static_cast<size_t>(vocab), 0);
      for (int32_t t : ref.kept) kept[t] = 1;
      for (int64_t i = 0; i < R; ++i) {
        const int32_t t = toks[i];
        if (t < 0 || t >= vocab) {
          ++bad_id;
          continue;
        }
        outside += !kept[t];
        freq[t] += 1.0 / static_cast<double>(R);
      }
      double tv = 0;
      for (size_t j = 0; j < ref.kept.size(); ++j) {
        const double e = std::fabs(freq[ref.kept[j]] - ref.prob[j]);
        r.max_abs_err = std::max(r.max_abs_err, e);
        tv += e;
      }
      r.max_rel_err = r.max_abs_err;  // per-token |frequency - probability|
      r.passed = outside == 0 && bad_id == 0 && r.max_abs_err <= r.tolerance;
      char buf[200];
      std::snprintf(buf, sizeof buf, "R=%lld rows, kept %zu tokens, %lld draws outside the kept set, %lld bad ids, "
                    "sum |freq - p| %.3f", static_cast<long long>(R), ref.kept.size(), static_cast<long long>(outside),
                    static_cast<long long>(bad_id), tv);
      r.note = buf;
      add(r);
    });
  }

  void check_sample_all() {
    SampleParams g;  // greedy
    check_sample("greedy, ties", 1000, g, 0, true);
    check_sample("greedy, ties, vocab 128256", 128256, g, 0, true);
    {
      SampleParams p = g;
      p.frequency_penalty = 0.7f;
      p.presence_penalty = 0.5f;
      check_sample("greedy, ties, penalties", 32000, p, 20, true);
    }
    check_sample("greedy, vocab 1", 1, g, 0, false);
    check_sample("greedy, vocab 7", 7, g, 0, true);
    SampleParams t;
    t.temperature = 0.7f;
    check_sample("temperature 0.7", 1000, t, 0, false);
    {
      SampleParams p = t;
      p.temperature = 1.0f;
      p.top_k = 40;
      check_sample("top_k 40", 32000, p, 0, false);
    }
    {
      SampleParams p = t;
      p.temperature = 0.8f;
      p.top_p = 0.9f;
      check_sample("top_p 0.9", 4096, p, 0, false);
    }
    {
      SampleParams p = t;
      p.temperature = 1.0f;
      p.min_p = 0.05f;
      check_sample("min_p 0.05", 128256, p, 0, false);
    }
    {
      SampleParams p = t;
      p.temperature = 1.3f;
      p.top_k = 50;
      p.top_p = 0.95f;
      p.min_p = 0.02f;
      p.frequency_penalty = 0.3f;
      p.presence_penalty = 0.4f;
      check_sample("top_k 50 top_p 0.95 min_p 0.02 penalties", 32000, p, 30, false);
    }
    {
      SampleParams p = t;
      p.top_k = 1;
      check_sample("top_k 1", 4096, p, 0, false);
    }
    {
      SampleParams p = t;
      p.top_k = 5000;  // >= vocab: off
      p.top_p = 0.5f;
      check_sample("top_k >= vocab, top_p 0.5", 777, p, 0, false);
    }
    {
      SampleParams p = t;
      p.temperature = 0.5f;
      check_sample("temperature 0.5, vocab 7", 7, p, 0, false);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // add
  // ---------------------------------------------------------------------------------------------
  void check_add_all() {
    for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{4096 * 3 + 5}, (int64_t{1} << 20) + 3}) {
      run_case("add", dims({{"count", count}}), [&] {
        const auto x = random_floats(static_cast<size_t>(count), rng_), y = random_floats(static_cast<size_t>(count), rng_);
        DeviceArray<float> dx(x), dy(y);
        launch_add(dx.get(), dy.get(), count, stream_);
        sync(stream_, "launch_add");
        const auto got = dx.download();
        KernelCheckResult r;
        r.name = "add";
        r.shape = dims({{"count", count}});
        r.tolerance = 0;  // the same f32 addition
        int64_t diff = 0;
        for (int64_t i = 0; i < count; ++i) {
          const float ref = x[i] + y[i];
          if (f32_bits(got[i]) != f32_bits(ref)) {
            ++diff;
            r.max_abs_err = std::max(r.max_abs_err, std::fabs(static_cast<double>(got[i]) - ref));
          }
        }
        r.max_rel_err = static_cast<double>(diff);
        r.passed = diff == 0;
        if (diff) r.note = std::to_string(diff) + " values differ";
        add(r);
      });
    }
  }

  KernelCheckOptions opt_;
  std::mt19937_64 rng_;
  KernelCheckReport rep_;
  cudaStream_t stream_ = nullptr;
  bool stopped_ = false;
};

}  // namespace

KernelCheckReport run_kernel_checks(const KernelCheckOptions& options) {
  try {
    Checker c(options);
    return c.run();
  } catch (const std::exception& e) {
    KernelCheckReport r;
    r.error = e.what();
    return r;
  }
}

}  // namespace platform::cuda
