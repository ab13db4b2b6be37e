// Checks of every CUDA kernel launcher (backends/cuda/llm/llm_kernels.h) against a plain host f64
// reference on random inputs of awkward sizes: platform-cuda-check runs them on a GPU machine.
// Plain C++ declarations (no CUDA headers); defined in kernel_check.cu, which only the CUDA build
// of the tools compiles (never the addon).
//
// Never throws and never aborts on a CUDA error: the error is reported (in the failing check's
// note and in KernelCheckReport::error when the device became unusable) and the checks stop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace platform::cuda {

struct KernelCheckResult {
  std::string name;   // launcher (and variant), e.g. "matmul Q4_K"
  std::string shape;  // sizes and options of this case
  double max_abs_err = 0;
  double max_rel_err = 0;  // the error measure the tolerance applies to (see the check's comment)
  double tolerance = 0;
  bool passed = false;
  std::string note;  // why it failed, or extra figures
};

struct KernelCheckReport {
  std::string device;  // e.g. "NVIDIA H200 (sm_90, 139.8 GiB)"
  std::vector<KernelCheckResult> results;
  std::string error;  // a CUDA error that stopped the checks; empty otherwise
  bool all_passed() const {
    if (!error.empty()) return false;
    for (const auto& r : results) if (!r.passed) return false;
    return true;
  }
};

struct KernelCheckOptions {
  uint64_t seed = 1;
  std::string filter;  // run only checks whose name contains this
  std::function<void(const KernelCheckResult&)> log;  // called as each result comes in
};

KernelCheckReport run_kernel_checks(const KernelCheckOptions& options);

}  // namespace platform::cuda
