// CUDA device discovery. Declared in plain C++ so the addon can call it; defined in
// device_info.cu, which is only compiled in the CUDA build (PLATFORM_WITH_CUDA).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace platform::cuda {

struct DeviceInfo {
  std::string name;
  uint64_t total_memory = 0;  // bytes
  int major = 0;              // compute capability major.minor
  int minor = 0;
};

struct DeviceQuery {
  std::vector<DeviceInfo> devices;
  std::string error;  // empty on success; CUDA errors are reported here, never raised
};

// Never throws or aborts: a missing driver or device, or any runtime error, ends up in .error.
DeviceQuery query_devices();

}  // namespace platform::cuda
