// Element-wise kernels of the LLM engine (the residual add).
#include "llm_kernels.h"

namespace platform::cuda {
namespace {

// x[i] += y[i], grid-stride (x, y: [count] f32).
__global__ void add_kernel(float* __restrict__ x, const float* __restrict__ y, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) x[i] += y[i];
}

}  // namespace

void launch_add(float* x, const float* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int kThreads = 256;
  // Enough blocks to fill any GPU several times over; the loop covers the rest.
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
  add_kernel<<<grid, kThreads, 0, stream>>>(x, y, count);
}

}  // namespace platform::cuda
