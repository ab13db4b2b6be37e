// Module entry point: the N-API surface of the native engine. Files in addon/ only check
// arguments and move work off the JavaScript thread; the engines and backends below do the work.
#include <napi.h>

#include "embed_binding.h"
#include "engine_info.h"
#include "gemm_binding.h"
#include "llm_binding.h"
#include "tabular_binding.h"

namespace {

Napi::Object InitPlatform(Napi::Env env, Napi::Object exports) {
  exports.Set("engineInfo", Napi::Function::New(env, platform::addon::EngineInfo, "engineInfo"));
  platform::addon::register_gemm(env, exports);
  platform::addon::register_tabular(env, exports);
  platform::addon::register_llm(env, exports);
  platform::addon::register_embed(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(platform, InitPlatform)
