#pragma once

#include <napi.h>

namespace platform::testing {

// Adds llmKernelCheck (the CPU kernels of one SIMD level on the caller's data) to the exports.
void register_llm_kernel_check(Napi::Env env, Napi::Object exports);

}  // namespace platform::testing
