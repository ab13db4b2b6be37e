// The one way CUDA code here holds memory and reports runtime errors (host code only; kernels
// never throw):
//   PLATFORM_CUDA_CHECK(call)  throws CudaError("<call> failed: <error name> (<error text>)") and
//                              clears the runtime's sticky non-fatal error state;
//   DeviceBuffer               cudaMalloc'd memory, freed on destruction (allocation failures name
//                              what the memory was for and its size);
//   PinnedBuffer               cudaMallocHost'd host memory, which asynchronous copies need.
// Both buffers are move-only and may be empty (null); get<T>() views the bytes as T.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

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

namespace platform::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  // Replaces the contents with `bytes` of new device memory (none for 0). `what` names the memory
  // in the error: "not enough GPU memory for the <what> (<n> MiB): <error text>".
  void allocate(size_t bytes, const char* what) {
    reset();
    if (bytes == 0) return;
    const cudaError_t st = cudaMalloc(&ptr_, bytes);
    if (st != cudaSuccess) {
      cudaGetLastError();
      ptr_ = nullptr;
      throw CudaError(std::string("not enough GPU memory for the ") + what + " (" + std::to_string(bytes >> 20) +
                      " MiB): " + cudaGetErrorString(st));
    }
    bytes_ = bytes;
  }
  void reset() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = uint8_t>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept { *this = std::move(other); }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
    }
    return *this;
  }
  ~PinnedBuffer() { reset(); }

  // Replaces the contents with `bytes` (at least 1) of new pinned host memory.
  void allocate(size_t bytes) {
    reset();
    PLATFORM_CUDA_CHECK(cudaMallocHost(&ptr_, bytes > 0 ? bytes : 1));
  }
  void reset() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
    ptr_ = nullptr;
  }
  template <typename T>
  T* get() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

}  // namespace platform::cuda
