// The LLM engine for one loaded model: requests in, events out, one thread that runs the model.
// Its loop is vLLM's step:
//   schedule   the scheduler retires cancelled sequences, admits waiting ones and lays out a
//              batch: one token per decoding sequence plus prompt chunks (scheduler.h);
//   execute    one forward pass for the whole batch (each weight matrix is read once per step),
//              then the next token of every sequence whose prompt is done, sampled on the device
//              where the backend can (only token ids come back), else from host logits;
//   update     the scheduler turns the results into events (tokens, finishes, logits) and drops
//              finished sequences; the events go to the sink.
// The model's weights stay where the backend put them (backend_factory.h); the KV cache is sized
// once, at load (kv_budget_blocks, kv_cache.h), and stored by the backend.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "../backends/llm_backend.h"
#include "engine_options.h"
#include "model.h"
#include "request.h"
#include "scheduler.h"

namespace platform::llm {

struct EngineStats {
  int64_t running = 0, waiting = 0;
  int64_t kv_blocks_used = 0, kv_blocks_reserved = 0, kv_blocks_total = 0, kv_block_size = 0;
  uint64_t steps = 0, tokens_generated = 0;
  int64_t kv_blocks_cached = 0;               // cached prefix blocks no sequence holds
  uint64_t prefix_queries = 0, prefix_hits = 0;  // prompt tokens looked up / found in the prefix cache
  uint64_t draft_tokens = 0, accepted_tokens = 0; // speculative decoding: tokens drafted / accepted
};

class Engine {
 public:
  using Sink = std::function<void(std::vector<Event>&&)>;

  // Starts the engine's thread. Throws std::invalid_argument on unusable options.
  Engine(std::unique_ptr<Model> model, const EngineOptions& options, Sink sink);
  ~Engine();

  // Queues a request and returns its id; throws EngineError (the caller's input was fine but
  // cannot be served) or std::invalid_argument (bad tokens).
  uint64_t submit(GenerateRequest request);
  // Cancels a waiting or running sequence (its kDone event says kCancelled); unknown ids are ignored.
  void cancel(uint64_t id);
  EngineStats stats();
  // Cancels everything, waits for the engine's thread to exit. Idempotent.
  void stop();

  const Model& model() const { return *model_; }
  const EngineOptions& options() const { return opt_; }
  int64_t context_length() const { return context_; }
  int64_t kv_cache_bytes() const { return kv_bytes_; }
  const Backend& backend() const { return *backend_; }

 private:
  void loop();
  // The step's forward pass and sampling, on the engine's thread, without the scheduler's lock.
  StepOutput execute(const Schedule& step);
  // A drafting sequence's sampled tokens: its accepted draft, then the token after it.
  void verify_draft(Sequence& s, const float* rows, std::vector<int32_t>& tokens, std::vector<TokenLogprobs>& logprobs);

  std::unique_ptr<Model> model_;
  EngineOptions opt_;
  int64_t context_ = 0;
  int64_t kv_bytes_ = 0;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Scheduler> scheduler_;
  Sink sink_;
  std::atomic<uint64_t> steps_{0};
  std::thread thread_;
};

}  // namespace platform::llm
