// The interface between the tabular executor and an accelerator, as backends/llm_backend.h is for
// the LLM engine: a GemmDevice runs f32 GEMM layers, Y = act(alpha * X op(W) + beta * bias), for
// the graph (tabular/graph.cc), which hands it whole chains of Gemm / MatMul nodes with their bias
// Adds and activations and never sees how the device does it. The CUDA build implements it on a
// CUDA device (cuda/tabular/gemm_device.cu); a build without CUDA has none (cuda/not_built.cc
// says why).
//
// A GemmDevice belongs to one compiled model: it keeps the model's constant weights (uploaded once,
// at compile time, and held until the model is freed) and scratch for activations. Calls may come
// from several threads at once (the graph runs on several libuv workers); the device serialises
// them. Errors are std::runtime_error with a one-line message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace platform::tabular {

// Applied to each output element after alpha * op(A) op(B) + beta * bias.
enum class DeviceActivation : int { kNone = 0, kRelu = 1, kSigmoid = 2, kTanh = 3 };

// A buffer uploaded to a GemmDevice (an index into its table).
using DeviceBufferId = int;

// One layer of a chain: Y = act(alpha * X op(W) + beta * bias), X [M, K] from the previous layer
// (or the chain's input), Y [M, N] feeding the next.
struct DeviceLayer {
  DeviceBufferId weight = -1;  // W as stored: [K, N] row-major, or [N, K] when trans_b
  bool trans_b = false;
  int64_t K = 0;
  int64_t N = 0;
  float alpha = 1.0f;
  DeviceBufferId bias = -1;  // -1: no bias
  int64_t bias_len = 0;      // 1 (one value for every element) or N (one per column)
  float beta = 1.0f;
  DeviceActivation activation = DeviceActivation::kNone;
};

class GemmDevice {
 public:
  virtual ~GemmDevice() = default;

  // Copies `count` floats to a new device buffer that lives as long as this object.
  virtual DeviceBufferId upload(const float* data, int64_t count) = 0;
  // Bytes held in uploaded buffers (weights and biases).
  virtual int64_t resident_bytes() const = 0;
  virtual const std::string& name() const = 0;

  // Runs `count` layers: x is the host matrix [M, layers[0].K] with row stride ldx; y receives the
  // host matrix [M, layers[count-1].N] (contiguous). Only x goes to the device and only y comes
  // back: intermediates stay there. Throws for inconsistent layer shapes.
  virtual void run_layers(const DeviceLayer* layers, size_t count, int64_t M, const float* x, int64_t ldx,
                          float* y) = 0;

  // C[M,N] = alpha * op(A) op(B) + beta * C, every matrix on the host, row-major with leading
  // dimensions (BLAS style, as gemm_f32): A and B go up, C goes up when beta != 0, C comes back.
  virtual void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) = 0;
};

// Why no GemmDevice can be opened here (this build has no accelerator, there is no device, the
// runtime's error), or an empty string when open_gemm_device can work. Never throws.
std::string gemm_device_unavailable();
// Opens accelerator `index` (a CUDA device) for one compiled model. Throws when it cannot.
std::shared_ptr<GemmDevice> open_gemm_device(int index = 0);

}  // namespace platform::tabular
