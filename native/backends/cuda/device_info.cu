// CUDA device discovery through the runtime API (see device_info.h).
#include <cuda_runtime.h>

#include <string>

#include "device_info.h"

namespace platform::cuda {
namespace {

std::string describe(const char* call, cudaError_t status) {
  return std::string(call) + " failed: " + cudaGetErrorString(status) + " (" +
         cudaGetErrorName(status) + ")";
}

}  // namespace

DeviceQuery query_devices() {
  DeviceQuery result;
  try {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      result.error = describe("cudaGetDeviceCount", status);
      cudaGetLastError();  // reset the runtime's last-error state for later calls
      return result;
    }
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop;
      status = cudaGetDeviceProperties(&prop, i);
      if (status != cudaSuccess) {
        result.error = describe("cudaGetDeviceProperties", status);
        cudaGetLastError();
        return result;
      }
      DeviceInfo info;
      info.name = prop.name;
      info.total_memory = static_cast<uint64_t>(prop.totalGlobalMem);
      info.major = prop.major;
      info.minor = prop.minor;
      result.devices.push_back(std::move(info));
    }
  } catch (const std::exception& e) {
    result.error = std::string("CUDA device query failed: ") + e.what();
  }
  return result;
}

}  // namespace platform::cuda
