// What a caller hands the engine and gets back: a generation request, the events that report its
// tokens and its end, and the error that refuses it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../backends/llm_backend.h"
#include "grammar_matcher.h"

namespace platform::llm {

struct GenerateRequest {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 16;
  SamplingParams sampling;
  bool logits_only = false;  // run the prompt, return logits, generate nothing
  bool all_logits = false;   // logits_only: every position, not just the last
  bool embed = false;        // logits_only: the last position's hidden state after the output norm,
                             // L2-normalized (last-token pooling), instead of its logits
  GrammarConstraint grammar; // grammar.grammar set: the output must match it (grammar_matcher.h)
  std::string cache_salt;    // prefix caching: only requests with the same salt share cached blocks
  int32_t logprobs = -1;     // >= 0: each token event carries its log-probability and this many alternatives
};

// A generated token's log-probability and the most likely alternatives (token, log-probability),
// from the logits after the penalties, before the grammar's mask and the temperature.
struct TokenLogprobs {
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

enum class FinishReason { kStop, kLength, kCancelled, kError };

inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

struct Event {
  enum class Type { kToken, kDone, kLogits, kEmbedding };
  Type type = Type::kToken;
  uint64_t id = 0;
  int32_t token = -1;
  // kDone / kLogits:
  FinishReason reason = FinishReason::kStop;
  std::string error;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  double queued_ms = 0, prefill_ms = 0, decode_ms = 0;
  std::vector<float> logits;  // kLogits: [positions][vocab]
  std::vector<float> embedding;  // kEmbedding: [dim], unit length
  bool has_logprobs = false;  // kToken of a request that asked for them
  TokenLogprobs logprobs;
};

// A refused request. code: "overloaded", "context_length", "kv_cache", "unloaded".
class EngineError : public std::runtime_error {
 public:
  EngineError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

}  // namespace platform::llm
