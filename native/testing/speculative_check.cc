// See speculative_check.h. Arguments come from tests only: checked loosely, never trusted to be
// huge.
#include "speculative_check.h"

#include <cstdint>
#include <vector>

#include "../llm/prompt_lookup.h"
#include "../llm/step_cost.h"

namespace platform::testing {
namespace {

std::vector<int32_t> ints(const Napi::Value& v) {
  std::vector<int32_t> out;
  if (!v.IsArray()) return out;
  const Napi::Array a = v.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(a.Get(i).As<Napi::Number>().Int32Value());
  return out;
}

// ngramDraft(prompt, generated, {maxTokens, ngramMax, ngramMin}, limit) -> the draft.
Napi::Value NgramDraft(const Napi::CallbackInfo& info) {
  const std::vector<int32_t> prompt = ints(info[0]), generated = ints(info[1]);
  const Napi::Object o = info[2].As<Napi::Object>();
  llm::NgramDraftOptions opt;
  opt.max_tokens = o.Get("maxTokens").As<Napi::Number>().Int32Value();
  opt.ngram_max = o.Get("ngramMax").As<Napi::Number>().Int32Value();
  opt.ngram_min = o.Get("ngramMin").As<Napi::Number>().Int32Value();
  const llm::TokenHistory h{prompt.data(), static_cast<int64_t>(prompt.size()), generated.data(), static_cast<int64_t>(generated.size())};
  std::vector<int32_t> draft;
  llm::propose_ngram_draft(h, opt, info[3].As<Napi::Number>().Int64Value(), draft);
  Napi::Array out = Napi::Array::New(info.Env(), draft.size());
  for (size_t i = 0; i < draft.size(); ++i) out.Set(static_cast<uint32_t>(i), draft[i]);
  return out;
}

// stepCostRatios(observations [[tokens, ms]...], queries [[n, n0]...]) -> ratios.
Napi::Value StepCostRatios(const Napi::CallbackInfo& info) {
  llm::StepCost cost;
  const Napi::Array obs = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < obs.Length(); ++i) {
    const Napi::Array p = obs.Get(i).As<Napi::Array>();
    cost.observe(p.Get(0u).As<Napi::Number>().Int64Value(), p.Get(1u).As<Napi::Number>().DoubleValue());
  }
  const Napi::Array q = info[1].As<Napi::Array>();
  Napi::Array out = Napi::Array::New(info.Env(), q.Length());
  for (uint32_t i = 0; i < q.Length(); ++i) {
    const Napi::Array p = q.Get(i).As<Napi::Array>();
    out.Set(i, cost.ratio(p.Get(0u).As<Napi::Number>().Int64Value(), p.Get(1u).As<Napi::Number>().Int64Value()));
  }
  return out;
}

Napi::Value ExpectedAccepted(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), llm::expected_accepted(info[0].As<Napi::Number>().DoubleValue(), info[1].As<Napi::Number>().Int64Value()));
}

}  // namespace

void register_speculative_check(Napi::Env env, Napi::Object exports) {
  exports.Set("ngramDraft", Napi::Function::New(env, NgramDraft, "ngramDraft"));
  exports.Set("stepCostRatios", Napi::Function::New(env, StepCostRatios, "stepCostRatios"));
  exports.Set("expectedAccepted", Napi::Function::New(env, ExpectedAccepted, "expectedAccepted"));
}

}  // namespace platform::testing
