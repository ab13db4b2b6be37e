#pragma once

#include <napi.h>

namespace platform::addon {

// Adds tabularCompile (and the TabularModel class it returns) to the module exports.
void register_tabular(Napi::Env env, Napi::Object exports);

}  // namespace platform::addon
