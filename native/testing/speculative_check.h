// Test-only entry points into speculative decoding's two pure parts: prompt-lookup drafting
// (llm/prompt_lookup.h) and the step cost model (llm/step_cost.h).
#pragma once

#include <napi.h>

namespace platform::testing {

void register_speculative_check(Napi::Env env, Napi::Object exports);

}  // namespace platform::testing
