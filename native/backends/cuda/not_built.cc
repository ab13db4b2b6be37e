// The CUDA backends' entry points in a build without CUDA (the node-gyp build, or cmake without
// nvcc): compiled instead of the .cu files, so that the engines ask for a device the same way in
// every build and get the reason here, with no #ifdef in their code. sources.json lists this file
// under "no_cuda"; both build files compile it exactly when they leave the CUDA sources out.
#include <memory>
#include <stdexcept>
#include <string>

#include "../tabular_device.h"
#include "device_info.h"
#include "llm/llm_backend.h"

namespace platform::cuda {

DeviceQuery query_devices() {
  DeviceQuery q;
  q.built = false;
  return q;
}

std::unique_ptr<llm::Backend> make_llm_backend(const LlmBackendOptions&) {
  throw std::runtime_error("this addon was built without CUDA (build it with `npm run build:cuda`)");
}

}  // namespace platform::cuda

namespace platform::tabular {

std::string gemm_device_unavailable() { return "this addon was built without CUDA (run `npm run build:cuda`)"; }

std::shared_ptr<GemmDevice> open_gemm_device(int) { throw std::runtime_error(gemm_device_unavailable()); }

}  // namespace platform::tabular
