// Device memory bandwidth: device-to-device copies and a read-only streaming kernel, timed with
// CUDA events. See bandwidth.h.
#include "bandwidth.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../backends/cuda/device_buffer.h"

namespace platform::cuda {
namespace {

// Every thread sums a grid-strided run of 16-byte vectors; the block's sum goes to out[block] so
// that the loads cannot be optimised away. The reduction's arithmetic is far below the memory
// time (4 adds per 16 bytes).
__global__ void read_stream_kernel(const uint4* __restrict__ p, size_t n, unsigned* __restrict__ out) {
  unsigned acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Four independent loads in flight per thread.
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride),
                d = __ldcs(p + i + 3 * stride);
    acc += a.x ^ a.y ^ a.z ^ a.w;
    acc += b.x ^ b.y ^ b.z ^ b.w;
    acc += c.x ^ c.y ^ c.z ^ c.w;
    acc += d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = __ldcs(p + i);
    acc += a.x ^ a.y ^ a.z ^ a.w;
  }
  __shared__ unsigned s[32];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned t = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) t += s[w];
    out[blockIdx.x] = t;
  }
}

// The stream and events of one measurement (the buffers are DeviceBuffers).
struct Timing {
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  cudaStream_t stream = nullptr;
  ~Timing() {
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (stream) cudaStreamDestroy(stream);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

BandwidthResult measure_bandwidth(size_t bytes, int iters) {
  BandwidthResult r;
  iters = std::max(iters, 1);
  bytes = std::max<size_t>(bytes / 256 * 256, 256);
  r.bytes = bytes;
  r.iters = iters;
  try {
    Timing c;
    DeviceBuffer a, b, sums;
    PLATFORM_CUDA_CHECK(cudaSetDevice(0));
    PLATFORM_CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    a.allocate(bytes, "copy source");
    b.allocate(bytes, "copy destination");
    PLATFORM_CUDA_CHECK(cudaMemsetAsync(a.get(), 1, bytes, c.stream));
    PLATFORM_CUDA_CHECK(cudaMemsetAsync(b.get(), 2, bytes, c.stream));
    PLATFORM_CUDA_CHECK(cudaEventCreate(&c.e0));
    PLATFORM_CUDA_CHECK(cudaEventCreate(&c.e1));

    // Milliseconds between two events around the work `enqueue` puts on the stream.
    auto time_ms = [&](const char* what, auto&& enqueue) -> double {
      cudaEventRecord(c.e0, c.stream);
      enqueue();
      cudaEventRecord(c.e1, c.stream);
      check(cudaGetLastError(), what);
      check(cudaEventSynchronize(c.e1), what);
      float ms = 0;
      cudaEventElapsedTime(&ms, c.e0, c.e1);
      return ms;
    };

    // Copies (warm-up first).
    std::vector<double> ms;
    for (int i = -2; i < iters; ++i) {
      const double t = time_ms("copy", [&] { cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, c.stream); });
      if (i >= 0) ms.push_back(t);
    }
    const double copy_s = median(ms) * 1e-3;
    r.copy_rw_gbs = 2.0 * static_cast<double>(bytes) / copy_s / 1e9;
    r.copy_read_gbs = static_cast<double>(bytes) / copy_s / 1e9;

    // Read-only stream: enough blocks to fill every SM several times.
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int threads = 512, blocks = std::max(1, sms) * 8;
    sums.allocate(sizeof(unsigned) * blocks, "block sums");
    const size_t n = bytes / sizeof(uint4);
    ms.clear();
    for (int i = -2; i < iters; ++i) {
      const double t = time_ms("read kernel", [&] {
        read_stream_kernel<<<blocks, threads, 0, c.stream>>>(a.get<const uint4>(), n, sums.get<unsigned>());
      });
      if (i >= 0) ms.push_back(t);
    }
    r.read_gbs = static_cast<double>(bytes) / (median(ms) * 1e-3) / 1e9;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

double measure_copy_bandwidth_gbs(size_t bytes, int iters) {
  const BandwidthResult r = measure_bandwidth(bytes, iters);
  return r.error.empty() ? r.copy_rw_gbs : -1.0;
}

}  // namespace platform::cuda
