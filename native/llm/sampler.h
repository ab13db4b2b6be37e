// Token sampling for one sequence. The order follows Hugging Face / vLLM:
//   penalties -> (temperature 0: argmax) -> temperature -> top-k -> softmax -> top-p -> min-p
//   -> draw.
// Frequency and presence penalties count the tokens this sequence has generated (OpenAI
// semantics: logit -= frequency * count + presence * (count > 0)). A grammar's token mask, when
// given, comes right after the penalties: a token outside it gets -inf, so greedy decoding picks
// the best allowed token and the other filters see only allowed ones. The random stream is a
// 64-bit Mersenne twister seeded per request, so a given seed reproduces the same tokens.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../backends/llm_backend.h"
#include "request.h"

namespace platform::llm {

class Sampler {
 public:
  Sampler(const SamplingParams& params, int64_t vocab);

  // Picks the next token from logits[vocab]; mask (bit t of word t >> 5), when not null, holds
  // the tokens allowed.
  int32_t sample(const float* logits, const uint32_t* mask = nullptr);
  // Records a generated token (for the penalties).
  void accept(int32_t token);
  // The log-probability of `token` and the top_n most likely tokens (ties: lower id first), from
  // logits[vocab] after this sequence's penalties (log-softmax in double precision).
  TokenLogprobs logprobs(const float* logits, int32_t token, int32_t top_n);

  // For sampling on a device: the settings, the counts of generated tokens, and the draw that
  // sample() would make (one uniform when not greedy), so that seeds keep their meaning.
  const SamplingParams& params() const { return p_; }
  const std::unordered_map<int32_t, int32_t>& counts() const { return counts_; }
  double draw() { return p_.temperature > 0.0f ? uniform() : 0.0; }

 private:
  double uniform();  // [0, 1), platform-independent

  SamplingParams p_;
  int64_t vocab_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> counts_;
  std::vector<float> work_;
  std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace platform::llm
