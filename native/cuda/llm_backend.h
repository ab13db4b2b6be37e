// The LLM engine's CUDA backend (llm_backend.cu): the Backend operations on device 0, with the
// weights uploaded once, the KV cache in device memory (f16), sampling on the device and decode
// steps replayed as CUDA graphs. Plain C++ header: the factory (native/llm/backend_factory.cc)
// includes it in the CUDA build only.
#pragma once

#include <memory>

#include "../llm/backend.h"

namespace platform::llm {
struct EngineOptions;
}

namespace platform::cuda {

// Throws std::runtime_error with a one-line reason when no CUDA device can be used.
std::unique_ptr<llm::Backend> make_llm_backend(const llm::EngineOptions& options);

}  // namespace platform::cuda
