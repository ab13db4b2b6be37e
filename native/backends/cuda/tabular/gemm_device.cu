// The tabular executor's GemmDevice (backends/tabular_device.h) on a CUDA device, without cuBLAS:
// one tiled f32 SIMT kernel (64x64 output tiles, 16-deep k-steps, 4x4 outputs per thread) with a
// fused epilogue (alpha, beta * bias or beta * C, activation).
//
// Numerics: each thread accumulates in f32 in k order, so results differ from the CPU's gemm_f32
// only by summation order (a few ulps relative to the sum of |a*b|). Sigmoid and Tanh use the
// device's expf / tanhf (within 2 ulp of the C library's).
//
// Each device object owns a non-blocking stream (different models run concurrently), its uploaded
// weights and four scratch buffers that grow to the largest batch seen; a mutex serialises its calls.
#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../tabular_device.h"
#include "../device_buffer.h"
#include "../device_info.h"

namespace platform::cuda {
namespace {

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 16;
constexpr int kThreads = 256;  // 16 x 16, each computing 4 x 4 outputs
constexpr int kPad = 4;        // shared-memory row padding against bank conflicts

// What happens to each output element after the product.
struct Epilogue {
  float alpha;
  float beta;
  const float* bias;   // bias_len values (1 or N), or null
  int64_t bias_len;
  const float* c_in;   // [M, N] with row stride ldc_in, read when beta != 0 and bias is null
  int64_t ldc_in;
  int activation;      // tabular::DeviceActivation
};

__device__ __forceinline__ float activate(float v, int activation) {
  switch (activation) {
    case 1: return v > 0.0f ? v : 0.0f;  // Relu, as the CPU kernel (NaN -> 0)
    case 2: {                            // Sigmoid, the CPU kernel's stable form
      if (v >= 0.0f) return 1.0f / (1.0f + expf(-v));
      const float e = expf(v);
      return e / (1.0f + e);
    }
    case 3: return tanhf(v);  // Tanh
    default: return v;
  }
}

// C[M,N] = epilogue(op(A) op(B)), row-major with leading dimensions. Block (x: 16 column groups,
// y: 16 row groups) computes a 64 x 64 tile; thread (tx, ty) owns rows ty + 16 i and columns
// tx + 16 j (i, j < 4), so a warp's shared-memory reads are broadcasts or consecutive words.
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads) gemm_tile_kernel(int M, int N, int K, const float* __restrict__ A,
                                                             int64_t lda, const float* __restrict__ B, int64_t ldb,
                                                             float* C, int64_t ldc, Epilogue ep) {
  __shared__ float As[kTileK][kTileM + kPad];
  __shared__ float Bs[kTileK][kTileN + kPad];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int tid = ty * 16 + tx;
  const int m0 = blockIdx.x * kTileM;  // rows on x: up to 2^31 - 1 blocks
  const int n0 = blockIdx.y * kTileN;

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += kTileK) {
    // A tile: 64 rows x 16 k, four elements per thread, coalesced along A's contiguous axis.
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int e = tid + r * kThreads;
      int m, k;
      if (kTransA) {  // A stored [K, M]
        k = e / kTileM;
        m = e % kTileM;
      } else {  // A stored [M, K]
        m = e / kTileK;
        k = e % kTileK;
      }
      const int gm = m0 + m, gk = k0 + k;
      float v = 0.0f;
      if (gm < M && gk < K) v = kTransA ? A[static_cast<int64_t>(gk) * lda + gm] : A[static_cast<int64_t>(gm) * lda + gk];
      As[k][m] = v;
    }
    // B tile: 16 k x 64 columns.
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int e = tid + r * kThreads;
      int k, n;
      if (kTransB) {  // B stored [N, K]
        n = e / kTileK;
        k = e % kTileK;
      } else {  // B stored [K, N]
        k = e / kTileN;
        n = e % kTileN;
      }
      const int gn = n0 + n, gk = k0 + k;
      float v = 0.0f;
      if (gn < N && gk < K) v = kTransB ? B[static_cast<int64_t>(gn) * ldb + gk] : B[static_cast<int64_t>(gk) * ldb + gn];
      Bs[k][n] = v;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTileK; ++k) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gm = m0 + ty + 16 * i;
    if (gm >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int gn = n0 + tx + 16 * j;
      if (gn >= N) continue;
      // alpha == 0 or K == 0 ignores the product, as gemm_f32 does (it never reads A and B then):
      // no NaN from 0 * inf.
      float v = (ep.alpha != 0.0f && K > 0) ? ep.alpha * acc[i][j] : 0.0f;
      if (ep.bias != nullptr) {
        v += ep.beta * ep.bias[ep.bias_len == 1 ? 0 : gn];
      } else if (ep.c_in != nullptr) {
        v += ep.beta * ep.c_in[static_cast<int64_t>(gm) * ep.ldc_in + gn];
      }
      C[static_cast<int64_t>(gm) * ldc + gn] = activate(v, ep.activation);
    }
  }
}

void launch_gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float* C, int64_t ldc, const Epilogue& ep, cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) throw CudaError("tabular GEMM: dimensions above 2^31 - 1");
  const int64_t grid_m = (M + kTileM - 1) / kTileM;
  const int64_t grid_n = (N + kTileN - 1) / kTileN;
  if (grid_n > 65535) throw CudaError("tabular GEMM: more than 65535 * 64 output columns");
  const dim3 grid(static_cast<unsigned>(grid_m), static_cast<unsigned>(grid_n));
  const dim3 block(16, 16);
  const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
  if (transA) {
    if (transB) gemm_tile_kernel<true, true><<<grid, block, 0, stream>>>(m, n, k, A, lda, B, ldb, C, ldc, ep);
    else gemm_tile_kernel<true, false><<<grid, block, 0, stream>>>(m, n, k, A, lda, B, ldb, C, ldc, ep);
  } else {
    if (transB) gemm_tile_kernel<false, true><<<grid, block, 0, stream>>>(m, n, k, A, lda, B, ldb, C, ldc, ep);
    else gemm_tile_kernel<false, false><<<grid, block, 0, stream>>>(m, n, k, A, lda, B, ldb, C, ldc, ep);
  }
  PLATFORM_CUDA_CHECK(cudaGetLastError());
}

class CudaGemmDevice final : public tabular::GemmDevice {
 public:
  explicit CudaGemmDevice(int device) : device_(device) {
    int count = 0;
    PLATFORM_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count) {
      throw CudaError("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                      " device" + (count == 1 ? "" : "s") + " found)");
    }
    PLATFORM_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop;
    PLATFORM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    name_ = prop.name;
    PLATFORM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }

  ~CudaGemmDevice() override {
    // No throwing here: a failed free at teardown is not actionable.
    cudaSetDevice(device_);
    if (stream_) cudaStreamSynchronize(stream_);
    buffers_.clear();
    for (Scratch& s : scratch_) s.memory.reset();
    if (stream_) cudaStreamDestroy(stream_);
    cudaGetLastError();
  }

  tabular::DeviceBufferId upload(const float* data, int64_t count) override {
    std::lock_guard<std::mutex> lock(mu_);
    PLATFORM_CUDA_CHECK(cudaSetDevice(device_));
    DeviceBuffer b;
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float);
    b.allocate(bytes, "tabular weights");
    if (count > 0) {
      // On this object's stream, then waited for: a plain cudaMemcpy from pageable memory may return
      // before its DMA lands, and it runs on the legacy default stream, which does not order against
      // the non-blocking stream the kernels run on.
      PLATFORM_CUDA_CHECK(cudaMemcpyAsync(b.get(), data, static_cast<size_t>(count) * sizeof(float),
                                          cudaMemcpyHostToDevice, stream_));
      PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    buffers_.push_back(std::move(b));
    buffer_sizes_.push_back(count);
    resident_ += static_cast<int64_t>(bytes);
    return static_cast<tabular::DeviceBufferId>(buffers_.size() - 1);
  }

  int64_t resident_bytes() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return resident_;
  }

  const std::string& name() const override { return name_; }

  void run_layers(const tabular::DeviceLayer* layers, size_t count, int64_t M, const float* x, int64_t ldx,
                  float* y) override {
    if (count == 0) throw CudaError("tabular device: run_layers needs at least one layer");
    for (size_t i = 1; i < count; ++i) {
      if (layers[i].K != layers[i - 1].N) {
        throw CudaError("tabular device: layer " + std::to_string(i) + " takes " + std::to_string(layers[i].K) +
                        " columns but layer " + std::to_string(i - 1) + " gives " + std::to_string(layers[i - 1].N));
      }
    }
    if (M <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    // Every layer's buffers and epilogue checked before anything is queued, so a bad layer throws
    // with no work in flight.
    std::vector<const float*> weights(count);
    std::vector<Epilogue> eps(count);
    for (size_t i = 0; i < count; ++i) {
      const tabular::DeviceLayer& L = layers[i];
      weights[i] = buffer(L.weight, L.K * L.N, "weight");
      Epilogue& ep = eps[i];
      ep = Epilogue{};
      ep.alpha = L.alpha;
      ep.beta = L.beta;
      if (L.bias >= 0 && L.beta != 0.0f) {
        if (L.bias_len != 1 && L.bias_len != L.N) {
          throw CudaError("tabular device: a bias of " + std::to_string(L.bias_len) + " values for " +
                          std::to_string(L.N) + " columns");
        }
        ep.bias = buffer(L.bias, L.bias_len, "bias");
        ep.bias_len = L.bias_len;
      }
      ep.activation = static_cast<int>(L.activation);
    }
    PLATFORM_CUDA_CHECK(cudaSetDevice(device_));
    int64_t widest = 0;
    for (size_t i = 0; i < count; ++i) widest = std::max(widest, layers[i].N);
    const int64_t K0 = layers[0].K;
    float* in = ensure(0, M * K0);
    float* ping = ensure(1, M * widest);
    float* pong = count > 1 ? ensure(2, M * widest) : nullptr;
    upload_matrix(in, x, M, K0, ldx);
    const float* cur = in;
    for (size_t i = 0; i < count; ++i) {
      const tabular::DeviceLayer& L = layers[i];
      float* out = (i % 2 == 0) ? ping : pong;
      launch_gemm(false, L.trans_b, M, L.N, L.K, cur, L.K, weights[i], L.trans_b ? L.K : L.N, out, L.N, eps[i],
                  stream_);
      cur = out;
    }
    download_matrix(y, layers[count - 1].N, cur, M, layers[count - 1].N);
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
            const float* B, int64_t ldb, float beta, float* C, int64_t ldc) override {
    if (M <= 0 || N <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    PLATFORM_CUDA_CHECK(cudaSetDevice(device_));
    // op(A) is [M, K]: A is stored [M, K] (or [K, M] transposed); likewise B [K, N] or [N, K].
    const int64_t a_rows = transA ? K : M, a_cols = transA ? M : K;
    const int64_t b_rows = transB ? N : K, b_cols = transB ? K : N;
    float* da = ensure(0, a_rows * a_cols);
    float* db = ensure(1, b_rows * b_cols);
    float* dc = ensure(2, M * N);
    upload_matrix(da, A, a_rows, a_cols, lda);
    upload_matrix(db, B, b_rows, b_cols, ldb);
    Epilogue ep{};
    ep.alpha = alpha;
    ep.beta = beta;
    if (beta != 0.0f) {
      upload_matrix(dc, C, M, N, ldc);
      ep.c_in = dc;
      ep.ldc_in = N;
    }
    ep.activation = 0;
    // K == 0 needs no special case: the k loop is empty and the result is beta * C.
    launch_gemm(transA, transB, M, N, K, da, a_cols, db, b_cols, dc, N, ep, stream_);
    download_matrix(C, ldc, dc, M, N);
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  // A device buffer that only grows.
  struct Scratch {
    DeviceBuffer memory;
    size_t capacity = 0;  // floats
  };

  float* ensure(int slot, int64_t floats) {
    Scratch& s = scratch_[slot];
    const size_t want = static_cast<size_t>(std::max<int64_t>(floats, 1));
    if (s.capacity < want) {
      // Work queued earlier in this call may still read the old buffer: wait for it.
      PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
      // Grow by 1.5x so a slowly rising batch size does not reallocate every time.
      const size_t grown = std::max(want, s.capacity + s.capacity / 2);
      s.capacity = 0;
      s.memory.allocate(grown * sizeof(float), "tabular activations");
      s.capacity = grown;
    }
    return s.memory.get<float>();
  }

  const float* buffer(tabular::DeviceBufferId id, int64_t at_least, const char* what) const {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size()) {
      throw CudaError(std::string("tabular device: unknown ") + what + " buffer " + std::to_string(id));
    }
    if (buffer_sizes_[id] < at_least) {
      throw CudaError(std::string("tabular device: ") + what + " buffer holds " + std::to_string(buffer_sizes_[id]) +
                      " floats, the layer needs " + std::to_string(at_least));
    }
    return buffers_[id].get<float>();
  }

  // Copies a host matrix [rows, cols] with row stride ld into contiguous device memory.
  void upload_matrix(float* dst, const float* src, int64_t rows, int64_t cols, int64_t ld) {
    if (rows <= 0 || cols <= 0) return;
    if (ld == cols) {
      PLATFORM_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(rows * cols) * sizeof(float),
                                          cudaMemcpyHostToDevice, stream_));
    } else {
      PLATFORM_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(cols) * sizeof(float), src,
                                            static_cast<size_t>(ld) * sizeof(float),
                                            static_cast<size_t>(cols) * sizeof(float), static_cast<size_t>(rows),
                                            cudaMemcpyHostToDevice, stream_));
    }
  }

  void download_matrix(float* dst, int64_t ld, const float* src, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    if (ld == cols) {
      PLATFORM_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(rows * cols) * sizeof(float),
                                          cudaMemcpyDeviceToHost, stream_));
    } else {
      PLATFORM_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(ld) * sizeof(float), src,
                                            static_cast<size_t>(cols) * sizeof(float),
                                            static_cast<size_t>(cols) * sizeof(float), static_cast<size_t>(rows),
                                            cudaMemcpyDeviceToHost, stream_));
    }
  }

  int device_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  mutable std::mutex mu_;
  std::vector<DeviceBuffer> buffers_;  // uploaded, by DeviceBufferId
  std::vector<int64_t> buffer_sizes_;
  int64_t resident_ = 0;
  Scratch scratch_[4];
};

}  // namespace
}  // namespace platform::cuda

namespace platform::tabular {

std::string gemm_device_unavailable() {
  const cuda::DeviceQuery q = cuda::query_devices();
  if (!q.error.empty()) return q.error;
  if (q.devices.empty()) return "no CUDA device found";
  return "";
}

std::shared_ptr<GemmDevice> open_gemm_device(int index) { return std::make_shared<cuda::CudaGemmDevice>(index); }

}  // namespace platform::tabular
