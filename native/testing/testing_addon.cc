// Module entry point of platform_testing.node: entry points that only tests call, built beside
// platform.node from the same compiled engine (binding.gyp's platform_engine library) and never
// shipped in it. test/helpers/testing-addon.ts loads it.
#include <napi.h>

#include "ggml_types_check.h"
#include "llm_kernel_check.h"
#include "speculative_check.h"

namespace {

Napi::Object InitTesting(Napi::Env env, Napi::Object exports) {
  platform::testing::register_llm_kernel_check(env, exports);
  platform::testing::register_ggml_types(env, exports);
  platform::testing::register_speculative_check(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(platform_testing, InitTesting)
