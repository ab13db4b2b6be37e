// GPU execution for the tabular executor: f32 GEMM layers on CUDA device 0, without cuBLAS.
//
// Plain C++ (no CUDA types), so native/tabular/*.cc can include it; defined in tabular_gemm.cu,
// which only the CUDA build compiles (callers guard their use with #ifdef PLATFORM_WITH_CUDA).
//
// A TabularDevice belongs to one compiled build: it owns a CUDA stream, the build's constant
// weights (uploaded once, at compile time, and kept on the device until the build is freed) and
// scratch buffers for activations that grow to the largest batch seen. Calls on one TabularDevice
// are serialised by its mutex (the graph may run on several libuv workers at once); different
// builds use different streams and run concurrently.
//
// Numerics: a tiled f32 SIMT kernel (64x64 output tiles, 16-deep k-steps, 4x4 outputs per thread),
// accumulating in f32 in k order within each thread: results differ from the CPU's gemm_f32 only by
// summation order (a few ulps relative to the sum of |a*b|). Sigmoid and Tanh use the device's
// expf / tanhf (within 2 ulp of the C library's).
//
// Errors: every function throws std::runtime_error (platform::cuda::CudaError in the .cu) with the
// failing CUDA call and its error name; none aborts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace platform::cuda {

// Applied to each output element after alpha * op(A) op(B) + beta * bias.
enum class TabularActivation : int { kNone = 0, kRelu = 1, kSigmoid = 2, kTanh = 3 };

// A device-resident f32 buffer of a TabularDevice (an index into its table).
using TabularBufferId = int;

// One layer of a chain: Y = act(alpha * X op(W) + beta * bias), X [M, K] from the previous layer
// (or the chain's input), Y [M, N] feeding the next.
struct TabularLayer {
  TabularBufferId weight = -1;  // W as stored: [K, N] row-major, or [N, K] when trans_b
  bool trans_b = false;
  int64_t K = 0;
  int64_t N = 0;
  float alpha = 1.0f;
  TabularBufferId bias = -1;  // -1: no bias
  int64_t bias_len = 0;       // 1 (one value for every element) or N (one per column)
  float beta = 1.0f;
  TabularActivation activation = TabularActivation::kNone;
};

class TabularDevice {
 public:
  // Opens CUDA device `device` with a new non-blocking stream. Throws when there is no usable
  // device or the runtime fails.
  static std::shared_ptr<TabularDevice> open(int device = 0);
  ~TabularDevice();
  TabularDevice(const TabularDevice&) = delete;
  TabularDevice& operator=(const TabularDevice&) = delete;

  // Copies `count` floats to a new device buffer that lives as long as this object.
  TabularBufferId upload(const float* data, int64_t count);
  // Bytes held in uploaded buffers (weights and biases).
  int64_t resident_bytes() const;
  const std::string& device_name() const;

  // Runs `count` layers on the device: x is the host matrix [M, layers[0].K] with row stride ldx;
  // y receives the host matrix [M, layers[count-1].N] (contiguous). Only x goes up and only y comes
  // back: intermediates stay on the device. Throws for inconsistent layer shapes.
  void run_layers(const TabularLayer* layers, size_t count, int64_t M, const float* x, int64_t ldx, float* y);

  // C[M,N] = alpha * op(A) op(B) + beta * C, every matrix on the host, row-major with leading
  // dimensions (BLAS style, as gemm_f32): A and B go up, C goes up when beta != 0, C comes back.
  void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
            const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

 private:
  struct Impl;
  explicit TabularDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The free-function form of TabularDevice::gemm.
inline void gemm_f32_device(TabularDevice& dev, bool transA, bool transB, int64_t M, int64_t N, int64_t K,
                            float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                            float* C, int64_t ldc) {
  dev.gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Why tabular models cannot run on CUDA device 0 here ("no CUDA device found", the runtime's
// error), or an empty string when they can. Never throws.
std::string tabular_device_unavailable();

}  // namespace platform::cuda
