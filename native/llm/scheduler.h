// Continuous batching for one loaded model: which sequences run, and what each step feeds them.
//   admission  waiting sequences join the running set in arrival order while it has room
//              (max_running) and the KV budget can reserve their blocks; a head that does not
//              fit waits (no overtaking, no starvation);
//   reserve    a sequence reserves the blocks for min(prompt + max_tokens, context) positions
//              when it is admitted, so decoding can never run out of cache (no preemption
//              needed), less the full prompt blocks the prefix cache already holds (kv_cache.h),
//              which it shares; new blocks are taken as positions are written, and all go back
//              (cached when published) when it finishes or is cancelled;
//   a step     one token for every decoding sequence, plus prompt chunks of the sequences still
//              prefilling, within max_batch_tokens (so a long prompt is spread over several steps
//              and the running streams keep their pace); with speculative decoding, a decoding
//              sequence's token comes with up to k drafted ones (prompt_lookup.h), verified in the
//              same pass;
//   update     the step's tokens (several per sequence when drafts were accepted), finishes (stop,
//              length, error) and logits become events, and finished sequences leave the running
//              set.
// The engine's thread alternates schedule() and update() around each forward pass (engine.cc);
// submit, cancel, stop and the counts may come from any thread (they take the scheduler's mutex).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine_options.h"
#include "kv_cache.h"
#include "model.h"
#include "draft_model.h"
#include "prompt_lookup.h"
#include "request.h"
#include "sampler.h"
#include "step_cost.h"

namespace platform::llm {

using Clock = std::chrono::steady_clock;

// One request in the engine, from submit to its final event.
struct Sequence {
  uint64_t id = 0;
  GenerateRequest req;
  Sampler sampler;
  int64_t limit = 0;            // positions this sequence may use (prompt + generated)
  int64_t reserved = 0;         // new KV blocks reserved at admission (the blocks of its limit
                                // less those the prefix cache gave it)
  int64_t allocated = 0;        // of those, taken so far
  std::vector<int32_t> blocks;  // block table
  uint64_t salt = 0;            // the request's cache salt, hashed
  std::vector<uint64_t> hashes; // the prefix-cache hashes of its published or matched full blocks, in order
  std::vector<uint64_t> prompt_hashes;  // those of its prompt's full blocks, worked out once
  int64_t cached_tokens = 0;    // prompt positions the prefix cache gave it
  int64_t n_past = 0;           // positions written to the KV cache
  std::vector<int32_t> generated;
  std::vector<float> logits;    // logits_only + all_logits: rows gathered across chunks
  std::vector<float> embedding; // an embed request's pooled, normalized hidden state ([dim])
  std::vector<int32_t> feed;    // a drafting step's tokens: the last generated one, then the draft
  int64_t drafted = 0;          // draft tokens in this step's feed
  double draft_hits = 0.0;      // draft tokens accepted and drafted positions decided (accepted, plus
  double draft_trials = 0.0;    // the first rejected one), recent ones weighing most: the chance
                                // that a draft token is right, (hits + 1) / (trials + 2)
  std::unique_ptr<GrammarMatcher> matcher;  // a constrained sequence's grammar position
  std::vector<uint32_t> mask;   // its allowed tokens this step ([vocab / 32] words)
  std::atomic<bool> cancelled{false};
  bool done = false;
  Clock::time_point t_submit, t_admit, t_first;

  Sequence(GenerateRequest r, int64_t vocab) : req(std::move(r)), sampler(req.sampling, vocab) {
    if (req.grammar.grammar) matcher = std::make_unique<GrammarMatcher>(req.grammar);
  }
  // The token mask of this step, or null when the next token is free.
  const uint32_t* step_mask();
  bool prefilling() const { return n_past < static_cast<int64_t>(req.prompt.size()); }
  // The token at position p (prompt, then generated).
  int32_t token_at(int64_t p) const {
    const int64_t n = static_cast<int64_t>(req.prompt.size());
    return p < n ? req.prompt[p] : generated[p - n];
  }
};

// One step's work: the forward pass's batch and the sequence of each entry, in the same order.
// An empty batch: nothing to run now.
struct Schedule {
  std::vector<Sequence*> seqs;        // [entries]
  std::vector<BatchEntry> batch;      // [entries]
  std::vector<int64_t> first_logit;   // [entries]: the entry's first row in the step's logits
  bool stopping = false;              // stop() was called: every sequence is gone, the loop ends
};

// What a step's forward pass and sampling produced.
struct StepOutput {
  // [entries][tokens]: the tokens sampled, none where nothing was; more than one where a draft
  // was verified: the accepted draft tokens, then the token sampled after them.
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<TokenLogprobs>> logprobs;  // [entries][tokens], for the requests that asked
  const float* logits = nullptr;  // the step's logits rows in host memory ([rows][vocab]), if read
  const float* hidden = nullptr;  // their hidden states after the output norm ([rows][dim]), if read
  std::string error;              // non-empty: the step failed and every sequence in it ends
};

class Scheduler {
 public:
  // kv_blocks: the KV budget (kv_budget_blocks); context: positions one sequence may reach;
  // draft_model: drafts for speculative decoding instead of prompt lookup (or null).
  Scheduler(const ModelConfig& config, const EngineOptions& options, int64_t context, int64_t kv_blocks,
            std::unique_ptr<DraftModel> draft_model = nullptr);

  const KvCache& kv() const { return kv_; }

  // Checks the prompt (std::invalid_argument: empty, or a token outside the vocabulary;
  // EngineError "context_length" / "kv_cache": it cannot fit), sizes the sequence's reservation,
  // queues it and returns its id. Throws EngineError "unloaded" after stop() and "overloaded"
  // when max_queued sequences already wait.
  uint64_t submit(GenerateRequest req);
  // Marks a waiting or running sequence cancelled (the next schedule() retires it); unknown ids are
  // ignored.
  void cancel(uint64_t id);
  // Every sequence ends as cancelled at the next schedule(), which then reports stopping.
  void stop();

  struct Counts {
    int64_t running = 0, waiting = 0, reserved_blocks = 0;
    uint64_t prefix_queries = 0, prefix_hits = 0;  // prompt tokens looked up in / found in the prefix cache
    uint64_t draft_tokens = 0, accepted_tokens = 0; // speculative decoding: tokens drafted / accepted
  };
  Counts counts();
  uint64_t tokens_generated() const { return generated_.load(); }

  // The engine's thread. Waits until there is work (or stop()), retires cancelled sequences (all of
  // them when stopping) with their final events, admits waiting ones, and lays out the next step,
  // taking KV blocks for its new positions.
  Schedule schedule(std::vector<Event>& events);
  // The engine's thread, after the step ran: its tokens, finishes and logits as events.
  void update(const Schedule& step, const StepOutput& out, std::vector<Event>& events);

 private:
  // With mu_ held (or on the engine's thread before the sequence is visible elsewhere).
  void finish(Sequence& s, FinishReason reason, std::vector<Event>& events, const std::string& error = "");
  void retire_cancelled(bool all, std::vector<Event>& events);
  void admit();
  Schedule layout_step();
  // Publishes the sequence's blocks that its last step filled (prefix caching).
  void publish_full_blocks(Sequence& s);
  // Fills s.feed with the sequence's next token and up to max_draft drafted ones, as many as pay
  // for themselves in a step of step_tokens tokens expected to emit `emitted` (adaptive); returns
  // the number drafted.
  int64_t draft(Sequence& s, int64_t max_draft, int64_t step_tokens, double& emitted);
  // Of `available` draft tokens, how many to verify (adaptive: the most step time repays; else all).
  int64_t draft_length(Sequence& s, int64_t available, int64_t step_tokens, double& emitted);
  // With a draft model: the decoding sequences' drafts, all guessed together, into their feeds.
  void draft_with_model(int64_t& budget, int64_t& step_tokens, double& emitted);
  // The tokens the step may still draft for s (its limit, its max_tokens, the budget).
  int64_t draft_room(const Sequence& s, int64_t budget) const;
  // Whether s may draft at all (no grammar; sampled ones only where the host samples).
  bool may_draft(const Sequence& s) const;

 public:
  // The engine's thread: the last step of `tokens` tokens took `ms` (for the adaptive draft length).
  void observe_step(int64_t tokens, double ms) { step_cost_.observe(tokens, ms); }
  // Before the first step: the backend samples on its device, whose draw over the kept tokens is
  // not the host sampler's, so sampled (temperature > 0) sequences must not verify drafts, which
  // are sampled on the host: their seeded output would depend on whether a step drafted.
  void set_device_sampling(bool on) { device_sampling_ = on; }

 private:

  const ModelConfig& config_;
  const EngineOptions options_;
  const int64_t context_;
  KvCache kv_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t next_id_ = 1;
  std::deque<std::shared_ptr<Sequence>> waiting_;
  std::vector<std::shared_ptr<Sequence>> running_;  // changed only by the engine's thread, under mu_
  std::unordered_map<uint64_t, std::shared_ptr<Sequence>> by_id_;
  // Blocks reserved by running sequences and not yet taken: changed on the engine's thread (in
  // layout_step without mu_), read by counts() from any thread.
  std::atomic<int64_t> outstanding_{0};
  uint64_t prefix_queries_ = 0, prefix_hits_ = 0;
  uint64_t draft_tokens_ = 0, accepted_tokens_ = 0;
  StepCost step_cost_;  // engine's thread only
  bool device_sampling_ = false;  // the backend samples on its device (set_device_sampling)
  std::unique_ptr<DraftModel> draft_model_;  // engine's thread only
  std::atomic<uint64_t> generated_{0};
};

}  // namespace platform::llm
