#pragma once

#include <napi.h>

namespace platform::testing {

// Adds ggmlTypes() (the engine's own GGML type table) to the exports.
void register_ggml_types(Napi::Env env, Napi::Object exports);

}  // namespace platform::testing
