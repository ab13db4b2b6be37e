// The backend an engine's options name: the one place that chooses between the devices.
#pragma once

#include <cstdint>
#include <memory>

#include "../backends/llm_backend.h"
#include "engine_options.h"

namespace platform::llm {

// The backend named by options.backend ("cpu" or "cuda"), sized for steps of options' shape and
// sequences of `context_length` positions. Throws std::invalid_argument for an unknown name and
// std::runtime_error when CUDA is not built in or no device can be used.
std::unique_ptr<Backend> make_backend(const EngineOptions& options, int64_t context_length);

}  // namespace platform::llm
