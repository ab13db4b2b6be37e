// The LLM engine's CUDA backend (llm_backend.cu): the Backend operations on one CUDA device, with
// the weights uploaded once, the KV cache in device memory (f16), sampling on the device and decode
// steps replayed as CUDA graphs. Plain C++ header: the engine's backend factory
// (llm/backend_factory.cc) includes it in every build; in a build without CUDA, make_llm_backend
// is defined by not_built.cc and says so.
#pragma once

#include <cstdint>
#include <memory>

#include "../../llm_backend.h"

namespace platform::cuda {

// What the backend sizes its device memory for, once, at load: activations and step tables for the
// largest step the engine can build, block tables for the longest sequence.
struct LlmBackendOptions {
  int64_t max_step_tokens = 0;     // tokens in one step (decode tokens + prefill chunks)
  int64_t max_step_sequences = 0;  // sequences in one step
  int64_t max_context = 0;         // positions of one sequence
  int64_t block_size = 0;          // positions per KV block
};

// Throws std::runtime_error with a one-line reason when no CUDA device can be used.
std::unique_ptr<llm::Backend> make_llm_backend(const LlmBackendOptions& options);

}  // namespace platform::cuda
