// Continuous batching for one loaded model: a scheduler thread that, step after step,
//   1. drops cancelled sequences (their KV blocks go back to the free list at once),
//   2. admits waiting sequences (FIFO) while the running set has room and the KV budget can
//      reserve their blocks,
//   3. builds one batch: one token for every decoding sequence, plus prompt chunks of the
//      sequences still prefilling, within max_batch_tokens (so a long prompt is spread over
//      several steps and the running streams keep their pace),
//   4. runs one forward pass for the batch (each weight matrix is read once per step),
//   5. samples, and hands the step's events (tokens, finishes, logits) to the sink.
// A sequence reserves the blocks for min(prompt + max_tokens, context) positions when it is
// admitted, so decoding can never run out of cache (no preemption needed); the blocks
// themselves are taken from the free list as positions are written.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "kv_cache.h"
#include "model.h"
#include "sampler.h"

namespace platform::llm {

// A refused request. code: "overloaded", "context_length", "kv_cache", "unloaded".
class EngineError : public std::runtime_error {
 public:
  EngineError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

struct EngineOptions {
  std::string backend = "cpu";     // "cpu" or "cuda" (device 0; needs the CUDA build)
  int threads = 0;                 // <= 0: default_thread_count()
  int64_t context_length = 0;      // <= 0: the model's training context
  int64_t kv_cache_bytes = 0;      // <= 0: room for max_running full contexts, at most 1 GiB
  int32_t max_running = 8;         // sequences decoded together
  int32_t max_queued = 64;         // sequences waiting for admission
  int32_t block_size = 16;         // positions per KV block
  int32_t max_batch_tokens = 256;  // tokens per forward step (decode tokens + prefill chunks)
  std::optional<SimdLevel> simd;   // kernels at or below this level (default: the process level)
};

struct GenerateRequest {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 16;
  SamplingParams sampling;
  bool logits_only = false;  // run the prompt, return logits, generate nothing
  bool all_logits = false;   // logits_only: every position, not just the last
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason r);

struct Event {
  enum class Type { kToken, kDone, kLogits };
  Type type = Type::kToken;
  uint64_t id = 0;
  int32_t token = -1;
  // kDone / kLogits:
  FinishReason reason = FinishReason::kStop;
  std::string error;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double queued_ms = 0, prefill_ms = 0, decode_ms = 0;
  std::vector<float> logits;  // kLogits: [positions][vocab]
};

struct EngineStats {
  int64_t running = 0, waiting = 0;
  int64_t kv_blocks_used = 0, kv_blocks_reserved = 0, kv_blocks_total = 0, kv_block_size = 0;
  uint64_t steps = 0, tokens_generated = 0;
};

class Engine {
 public:
  using Sink = std::function<void(std::vector<Event>&&)>;

  // Starts the scheduler thread. Throws std::invalid_argument on unusable options.
  Engine(std::unique_ptr<Model> model, const EngineOptions& options, Sink sink);
  ~Engine();

  // Queues a request and returns its id; throws EngineError (the caller's input was fine but
  // cannot be served) or std::invalid_argument (bad tokens).
  uint64_t submit(GenerateRequest request);
  // Cancels a waiting or running sequence (its kDone event says kCancelled); unknown ids are ignored.
  void cancel(uint64_t id);
  EngineStats stats();
  // Cancels everything, waits for the scheduler thread to exit. Idempotent.
  void stop();

  const Model& model() const { return *model_; }
  const EngineOptions& options() const { return opt_; }
  int64_t context_length() const { return context_; }
  int64_t kv_cache_bytes() const { return kv_->bytes(); }
  const Backend& backend() const { return *backend_; }

 private:
  struct Sequence;
  void loop();
  void step(std::vector<Event>& events);
  void finish(Sequence& s, FinishReason reason, std::vector<Event>& events, const std::string& error = "");

  std::unique_ptr<Model> model_;
  EngineOptions opt_;
  int64_t context_ = 0;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<KvCache> kv_;
  Sink sink_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t next_id_ = 1;
  std::deque<std::shared_ptr<Sequence>> waiting_;
  std::vector<std::shared_ptr<Sequence>> running_;  // changed only by the scheduler, under mu_
  std::unordered_map<uint64_t, std::shared_ptr<Sequence>> by_id_;
  int64_t reserved_blocks_ = 0;
  std::atomic<uint64_t> steps_{0}, generated_{0};
  std::thread thread_;
};

}  // namespace platform::llm
