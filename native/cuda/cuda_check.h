// CUDA runtime errors as C++ exceptions with the call, the error's name and text, for host code
// of the CUDA backend (kernels themselves never throw).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace platform::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky non-fatal error state
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                  cudaGetErrorString(status) + ")");
}

}  // namespace platform::cuda

#define PLATFORM_CUDA_CHECK(call) ::platform::cuda::check((call), #call)
