#include "scheduler.h"

#include <algorithm>
#include <chrono>

#include "../core/thread_pool.h"

namespace platform::llm {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

struct Engine::Sequence {
  uint64_t id = 0;
  GenerateRequest req;
  Sampler sampler;
  int64_t limit = 0;            // positions this sequence may use (prompt + generated)
  int64_t reserved = 0;         // KV blocks reserved at admission
  std::vector<int32_t> blocks;  // block table
  int64_t n_past = 0;           // positions written to the KV cache
  std::vector<int32_t> generated;
  std::vector<float> logits;    // logits_only + all_logits: rows gathered across chunks
  std::atomic<bool> cancelled{false};
  bool done = false;
  Clock::time_point t_submit, t_admit, t_first;

  Sequence(GenerateRequest r, int64_t vocab) : req(std::move(r)), sampler(req.sampling, vocab) {}
  bool prefilling() const { return n_past < static_cast<int64_t>(req.prompt.size()); }
};

Engine::Engine(std::unique_ptr<Model> model, const EngineOptions& options, Sink sink)
    : model_(std::move(model)), opt_(options), sink_(std::move(sink)) {
  const ModelConfig& c = model_->config();
  if (opt_.max_running < 1 || opt_.max_queued < 0 || opt_.block_size < 1 || opt_.max_batch_tokens < 1) {
    throw std::invalid_argument("maxRunningSequences, blockSize and maxBatchTokens must be positive");
  }
  opt_.threads = resolve_thread_count(options.threads);
  backend_ = make_backend(opt_);
  backend_->bind(c, model_->host_weights());  // CUDA: uploads every weight once
  context_ = opt_.context_length > 0 ? opt_.context_length : c.train_context;
  const int64_t block_bytes = KvCache::block_bytes(c.n_layers, c.kv_dim(), opt_.block_size, backend_->kv_element_bytes());
  const int64_t blocks_per_context = (context_ + opt_.block_size - 1) / opt_.block_size;
  int64_t n_blocks;
  if (opt_.kv_cache_bytes > 0) {
    n_blocks = opt_.kv_cache_bytes / block_bytes;
  } else {
    n_blocks = std::min<int64_t>(blocks_per_context * opt_.max_running, (int64_t{1} << 30) / block_bytes);
    n_blocks = std::max<int64_t>(n_blocks, std::min<int64_t>(blocks_per_context, (int64_t{4} << 30) / block_bytes));
  }
  if (n_blocks < 1) {
    throw std::invalid_argument("kvCacheBytes is smaller than one KV block (" + std::to_string(block_bytes) + " bytes)");
  }
  if (n_blocks > (int64_t{1} << 31) - 1) n_blocks = (int64_t{1} << 31) - 1;
  kv_ = std::make_unique<KvCache>(c.n_layers, c.kv_dim(), opt_.block_size, n_blocks, backend_->kv_element_bytes(),
                                  backend_->kv_in_host_memory());
  backend_->bind_kv(*kv_);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

uint64_t Engine::submit(GenerateRequest req) {
  const ModelConfig& c = model_->config();
  const int64_t n_prompt = static_cast<int64_t>(req.prompt.size());
  if (n_prompt == 0) throw std::invalid_argument("the prompt must hold at least one token");
  for (int32_t t : req.prompt) {
    if (t < 0 || t >= c.vocab) {
      throw std::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(c.vocab) + ")");
    }
  }
  if (n_prompt > context_) {
    throw EngineError("context_length", "the prompt has " + std::to_string(n_prompt) + " tokens but the context holds " + std::to_string(context_));
  }
  const int64_t bs = kv_->block_size();
  if ((n_prompt + bs - 1) / bs > kv_->total_blocks()) {
    throw EngineError("kv_cache", "the prompt needs more KV cache than the model's budget (" + std::to_string(kv_->total_blocks() * bs) + " positions)");
  }
  auto s = std::make_shared<Sequence>(std::move(req), c.vocab);
  const int64_t wanted = s->req.logits_only ? n_prompt : n_prompt + s->req.max_tokens;
  s->limit = std::min({wanted, context_, kv_->total_blocks() * bs});
  s->reserved = (s->limit + bs - 1) / bs;
  s->t_submit = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) throw EngineError("unloaded", "the model has been unloaded");
  if (static_cast<int64_t>(waiting_.size()) >= opt_.max_queued) {
    throw EngineError("overloaded", "the model is overloaded: " + std::to_string(waiting_.size()) + " requests already wait (maxQueued)");
  }
  s->id = next_id_++;
  by_id_[s->id] = s;
  waiting_.push_back(s);
  cv_.notify_one();
  return s->id;
}

void Engine::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  it->second->cancelled.store(true);
  cv_.notify_one();
}

EngineStats Engine::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats st;
  st.running = static_cast<int64_t>(running_.size());
  st.waiting = static_cast<int64_t>(waiting_.size());
  st.kv_blocks_used = kv_->used_blocks();
  st.kv_blocks_reserved = reserved_blocks_;
  st.kv_blocks_total = kv_->total_blocks();
  st.kv_block_size = kv_->block_size();
  st.steps = steps_.load();
  st.tokens_generated = generated_.load();
  return st;
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

// Called by the scheduler thread with mu_ held.
void Engine::finish(Sequence& s, FinishReason reason, std::vector<Event>& events, const std::string& error) {
  if (s.done) return;
  s.done = true;
  kv_->release(s.blocks);
  s.blocks.clear();
  const auto now = Clock::now();
  Event e;
  e.type = Event::Type::kDone;
  e.id = s.id;
  e.reason = reason;
  e.error = error;
  e.prompt_tokens = static_cast<int64_t>(s.req.prompt.size());
  e.completion_tokens = static_cast<int64_t>(s.generated.size());
  const bool admitted = s.t_admit != Clock::time_point{};
  const bool started = s.t_first != Clock::time_point{};
  e.queued_ms = ms_between(s.t_submit, admitted ? s.t_admit : now);
  e.prefill_ms = admitted ? ms_between(s.t_admit, started ? s.t_first : now) : 0.0;
  e.decode_ms = started ? ms_between(s.t_first, now) : 0.0;
  if (s.req.logits_only && reason == FinishReason::kStop) {
    e.type = Event::Type::kLogits;
    e.logits = std::move(s.logits);
  }
  events.push_back(std::move(e));
  by_id_.erase(s.id);
}

void Engine::loop() {
  std::vector<Event> events;
  for (;;) {
    bool exit = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running_.empty(); });
      exit = stopping_;
      // Cancelled (or, when stopping, all) sequences leave now and free their blocks.
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (exit || (*it)->cancelled.load()) {
          finish(**it, FinishReason::kCancelled, events);
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
      for (auto it = running_.begin(); it != running_.end();) {
        if (exit || (*it)->cancelled.load()) {
          finish(**it, FinishReason::kCancelled, events);
          reserved_blocks_ -= (*it)->reserved;
          it = running_.erase(it);
        } else {
          ++it;
        }
      }
      // Admit in arrival order; a head that does not fit waits (no overtaking, no starvation).
      while (!exit && !waiting_.empty() && static_cast<int32_t>(running_.size()) < opt_.max_running &&
             reserved_blocks_ + waiting_.front()->reserved <= kv_->total_blocks()) {
        auto s = waiting_.front();
        waiting_.pop_front();
        reserved_blocks_ += s->reserved;
        s->t_admit = Clock::now();
        running_.push_back(std::move(s));
      }
    }
    if (!events.empty()) sink_(std::move(events));
    events.clear();
    if (exit) return;
    if (running_.empty()) continue;
    step(events);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = running_.begin(); it != running_.end();) {
        if ((*it)->done) {
          reserved_blocks_ -= (*it)->reserved;
          it = running_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (!events.empty()) sink_(std::move(events));
    events.clear();
  }
}

void Engine::step(std::vector<Event>& events) {
  const ModelConfig& c = model_->config();
  const int64_t bs = kv_->block_size();
  // Decoding sequences first (one token each), then prompt chunks within the token budget.
  std::vector<Sequence*> seqs;
  std::vector<BatchEntry> batch;
  int64_t budget = opt_.max_batch_tokens;
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (s.prefilling()) continue;
    BatchEntry e;
    e.tokens = &s.generated.back();
    e.n_tokens = 1;
    e.pos0 = s.n_past;
    batch.push_back(e);
    seqs.push_back(&s);
    --budget;
  }
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (!s.prefilling() || budget <= 0) continue;
    BatchEntry e;
    e.pos0 = s.n_past;
    e.n_tokens = std::min<int64_t>(budget, static_cast<int64_t>(s.req.prompt.size()) - s.n_past);
    e.tokens = s.req.prompt.data() + s.n_past;
    e.all_logits = s.req.logits_only && s.req.all_logits;
    batch.push_back(e);
    seqs.push_back(&s);
    budget -= e.n_tokens;
  }
  if (batch.empty()) return;
  // Blocks for the new positions (covered by the sequence's reservation).
  for (size_t i = 0; i < batch.size(); ++i) {
    Sequence& s = *seqs[i];
    while (static_cast<int64_t>(s.blocks.size()) * bs < batch[i].pos0 + batch[i].n_tokens) s.blocks.push_back(kv_->allocate());
    batch[i].blocks = &s.blocks;
  }

  // The forward pass, then the next token of every sequence whose prompt is done: sampled on the
  // device where the backend can (only token ids come back), else from host logits.
  std::vector<int32_t> sampled(batch.size(), -1);
  const float* logits = nullptr;
  std::string error;
  try {
    model_->forward(batch, *backend_);
    bool host_rows = !backend_->samples_on_device();
    for (const Sequence* s : seqs) host_rows = host_rows || s->req.logits_only;
    if (host_rows) logits = backend_->host_logits();
    std::vector<SampleRequest> requests;
    std::vector<size_t> requesters;
    int64_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      Sequence& s = *seqs[i];
      const int64_t rows = batch[i].all_logits ? batch[i].n_tokens : 1;
      const int64_t last_row = row + rows - 1;
      row += rows;
      const bool prompt_done = s.n_past + batch[i].n_tokens >= static_cast<int64_t>(s.req.prompt.size());
      if (!prompt_done || s.done || s.req.logits_only || s.cancelled.load()) continue;
      if (backend_->samples_on_device()) {
        SampleRequest r;
        r.row = last_row;
        r.params = s.sampler.params();
        r.uniform = s.sampler.draw();
        r.counts = &s.sampler.counts();
        requests.push_back(r);
        requesters.push_back(i);
      } else {
        sampled[i] = s.sampler.sample(logits + last_row * c.vocab);
      }
    }
    if (!requests.empty()) {
      std::vector<int32_t> tokens;
      backend_->sample(requests, tokens);
      for (size_t j = 0; j < requesters.size(); ++j) sampled[requesters[j]] = tokens[j];
    }
  } catch (const std::exception& ex) {
    error = ex.what();
    if (error.empty()) error = "unknown error";
  }
  steps_.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu_);
  if (!error.empty()) {
    for (Sequence* s : seqs) finish(*s, FinishReason::kError, events, "forward pass failed: " + error);
    return;
  }
  int64_t row = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    Sequence& s = *seqs[i];
    const BatchEntry& e = batch[i];
    const int64_t rows = e.all_logits ? e.n_tokens : 1;
    const float* first = logits ? logits + row * c.vocab : nullptr;  // the entry's host rows
    row += rows;
    if (e.all_logits) s.logits.insert(s.logits.end(), first, first + rows * c.vocab);  // every chunk
    s.n_past += e.n_tokens;
    if (s.prefilling() || s.done) continue;  // more prompt to go
    if (s.req.logits_only) {
      if (!e.all_logits) s.logits.assign(first, first + c.vocab);
      finish(s, FinishReason::kStop, events);
      continue;
    }
    if (s.cancelled.load() || sampled[i] < 0) continue;  // the next loop turn reports it
    const int32_t token = sampled[i];
    if (s.generated.empty()) s.t_first = Clock::now();
    s.sampler.accept(token);
    if (std::find(c.eos_tokens.begin(), c.eos_tokens.end(), token) != c.eos_tokens.end()) {
      finish(s, FinishReason::kStop, events);
      continue;
    }
    s.generated.push_back(token);
    generated_.fetch_add(1);
    Event ev;
    ev.type = Event::Type::kToken;
    ev.id = s.id;
    ev.token = token;
    events.push_back(std::move(ev));
    // The new token is fed next step at position n_past, which must fit the limit.
    if (static_cast<int64_t>(s.generated.size()) >= s.req.max_tokens || s.n_past >= s.limit) {
      finish(s, FinishReason::kLength, events);
    }
  }
}

}  // namespace platform::llm
