#pragma once

#include <napi.h>

namespace platform::addon {

// Adds gemmF32, gemmF32Async, gemvF32 and gemvF32Async to the module exports.
void register_gemm(Napi::Env env, Napi::Object exports);

}  // namespace platform::addon
