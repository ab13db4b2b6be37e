#pragma once

#include <napi.h>

namespace platform::addon {

// engineInfo() -> {version, simd: {detected, active, available, warning?}, threads,
//                  cuda: {built, devices: [{name, totalMemory, computeCapability}], error}}
Napi::Value EngineInfo(const Napi::CallbackInfo& info);

}  // namespace platform::addon
