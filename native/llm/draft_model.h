// Speculative decoding with a draft model: a smaller model of the same vocabulary guesses each
// decoding sequence's next k tokens by its own greedy decoding, and the model verifies them in one
// step as it verifies prompt-lookup drafts (scheduler.cc, engine.cc: the output is plain
// decoding's). The draft model has its own backend and KV cache; each sequence keeps its block
// table there and how many of its positions the draft model has computed, so that a step only
// feeds what is new: the tokens accepted since (catch-up, in chunks of at most max_batch_tokens),
// then one token per drafted position. Positions of rejected guesses are written over later.
// Used only by the engine's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "../backends/llm_backend.h"
#include "engine_options.h"
#include "kv_cache.h"
#include "model.h"
#include "prompt_lookup.h"

namespace platform::llm {

class DraftModel {
 public:
  // Loads the draft model at options.draft_model on the model's kind of backend, for sequences of
  // `context` positions. Throws GgufError for a bad file and std::invalid_argument when its
  // vocabulary is not the model's (`vocab` tokens).
  DraftModel(const EngineOptions& options, int64_t context, int64_t vocab);

  const Model& model() const { return *model_; }

  // One sequence's request for a draft: its tokens so far, and at most how many to guess.
  struct Want {
    uint64_t id = 0;
    TokenHistory history;
    int64_t max_tokens = 0;
  };
  // Greedy guesses for every sequence (drafts[i] for wants[i], possibly shorter than asked, or
  // empty when the draft model's cache has no room for it now).
  void propose(const std::vector<Want>& wants, std::vector<std::vector<int32_t>>& drafts);
  // After verification: the sequence's first `valid` positions hold the tokens the draft model saw.
  void keep(uint64_t id, int64_t valid);
  // The sequence is gone: its draft blocks go back.
  void release(uint64_t id);

 private:
  struct State {
    std::vector<int32_t> blocks;
    int64_t n_past = 0;  // positions whose draft K/V are valid
  };
  // Takes blocks until the state covers `positions`; false (nothing taken) when the cache is full.
  bool cover(State& st, int64_t positions);
  // One forward pass over the entries; the greedy token of each entry's last row.
  void step(const std::vector<BatchEntry>& batch, std::vector<int32_t>& next);

  EngineOptions opt_;
  int64_t context_ = 0;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<KvCache> kv_;
  std::unordered_map<uint64_t, State> states_;
};

}  // namespace platform::llm
