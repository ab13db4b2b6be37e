// make_backend: each device's backend with its own options. The CUDA backend's entry point exists
// in every build: backends/cuda/llm/llm_backend.cu in the CUDA build, else
// backends/cuda/not_built.cc, which throws the reason.
#include "backend_factory.h"

#include <stdexcept>

#include "../backends/cpu/llm_backend.h"
#include "../backends/cuda/llm/llm_backend.h"
#include "../core/thread_pool.h"

namespace platform::llm {

std::unique_ptr<Backend> make_backend(const EngineOptions& options, int64_t context_length) {
  if (options.backend == "cpu") {
    return std::make_unique<cpu::CpuBackend>(resolve_thread_count(options.threads),
                                             clamp_simd_level(options.simd.value_or(active_simd_level())));
  }
  if (options.backend == "cuda") {
    cuda::LlmBackendOptions o;
    o.max_step_tokens = static_cast<int64_t>(options.max_running) + options.max_batch_tokens;
    o.max_step_sequences = options.max_running;
    o.max_context = context_length;
    o.block_size = options.block_size;
    return cuda::make_llm_backend(o);
  }
  throw std::invalid_argument("unknown backend '" + options.backend + "' (expected cpu or cuda)");
}

}  // namespace platform::llm
