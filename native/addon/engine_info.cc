#include "engine_info.h"

#include <string>

#include "../core/cpu_features.h"
#include "../core/thread_pool.h"
#include "../core/version.h"
#include "../backends/cuda/device_info.h"

namespace platform::addon {
namespace {

Napi::Object simd_info(Napi::Env env) {
  Napi::Object simd = Napi::Object::New(env);
  simd.Set("detected", simd_level_name(detected_simd_level()));
  simd.Set("active", simd_level_name(active_simd_level()));
  const auto levels = available_simd_levels();
  Napi::Array available = Napi::Array::New(env, levels.size());
  for (size_t i = 0; i < levels.size(); ++i) {
    available.Set(static_cast<uint32_t>(i), simd_level_name(levels[i]));
  }
  simd.Set("available", available);
  if (!simd_env_warning().empty()) simd.Set("warning", simd_env_warning());
  return simd;
}

Napi::Object cuda_info(Napi::Env env) {
  Napi::Object cuda = Napi::Object::New(env);
  Napi::Array devices = Napi::Array::New(env);
  const cuda::DeviceQuery query = cuda::query_devices();
  cuda.Set("built", query.built);
  for (size_t i = 0; i < query.devices.size(); ++i) {
    const cuda::DeviceInfo& d = query.devices[i];
    Napi::Object device = Napi::Object::New(env);
    device.Set("name", d.name);
    device.Set("totalMemory", static_cast<double>(d.total_memory));
    device.Set("computeCapability", std::to_string(d.major) + "." + std::to_string(d.minor));
    devices.Set(static_cast<uint32_t>(i), device);
  }
  cuda.Set("devices", devices);
  cuda.Set("error", query.error.empty() ? env.Null() : Napi::String::New(env, query.error));
  return cuda;
}

}  // namespace

Napi::Value EngineInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("version", PLATFORM_VERSION_STRING);
  out.Set("simd", simd_info(env));
  out.Set("threads", default_thread_count());
  out.Set("cuda", cuda_info(env));
  return out;
}

}  // namespace platform::addon
