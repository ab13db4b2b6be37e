// make_backend: the backend an engine's options name. The CUDA backend exists only in the CUDA
// build (cmake-js with PLATFORM_CUDA, which defines PLATFORM_WITH_CUDA for every source).
#include <stdexcept>

#include "backend.h"
#include "cpu_backend.h"
#include "../core/thread_pool.h"
#include "scheduler.h"

#ifdef PLATFORM_WITH_CUDA
#include "../cuda/llm_backend.h"
#endif

namespace platform::llm {

std::unique_ptr<Backend> make_backend(const EngineOptions& options) {
  if (options.backend == "cpu") {
    return std::make_unique<CpuBackend>(resolve_thread_count(options.threads),
                                        clamp_simd_level(options.simd.value_or(active_simd_level())));
  }
  if (options.backend == "cuda") {
#ifdef PLATFORM_WITH_CUDA
    return cuda::make_llm_backend(options);
#else
    throw std::runtime_error("this addon was built without CUDA (build it with `npm run build:cuda`)");
#endif
  }
  throw std::invalid_argument("unknown backend '" + options.backend + "' (expected cpu or cuda)");
}

}  // namespace platform::llm
