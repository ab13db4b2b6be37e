// CUDA device discovery. Declared in plain C++ so the addon can call it; defined in
// device_info.cu in the CUDA build, and in not_built.cc (built = false, no devices) otherwise.
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
  bool built = true;  // false: this build has no CUDA backend
  std::vector<DeviceInfo> devices;
  std::string error;  // empty on success; CUDA errors are reported here, never raised
};

// Never throws or aborts: a missing driver or device, or any runtime error, ends up in .error.
DeviceQuery query_devices();

}  // namespace platform::cuda
