#pragma once

#include <napi.h>

namespace platform::addon {

// Adds the llm* functions (GGUF model load, generate, logits, cancel, stats, info, unload).
void register_llm(Napi::Env env, Napi::Object exports);

}  // namespace platform::addon
