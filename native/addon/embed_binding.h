#pragma once

#include <napi.h>

namespace platform::addon {

// Adds the embed* functions (BERT-family encoder: load, embed, info, unload).
void register_embed(Napi::Env env, Napi::Object exports);

}  // namespace platform::addon
