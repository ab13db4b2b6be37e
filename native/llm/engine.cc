// The engine's load (backend, KV budget, scheduler), its request entry points and its loop; see
// engine.h.
#include "engine.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "../core/thread_pool.h"
#include "backend_factory.h"
#include "kv_cache.h"

namespace platform::llm {

Engine::Engine(std::unique_ptr<Model> model, const EngineOptions& options, Sink sink)
    : model_(std::move(model)), opt_(options), sink_(std::move(sink)) {
  const ModelConfig& c = model_->config();
  if (opt_.max_running < 1 || opt_.max_queued < 0 || opt_.block_size < 1 || opt_.max_batch_tokens < 1) {
    throw std::invalid_argument("maxRunningSequences, blockSize and maxBatchTokens must be positive");
  }
  opt_.threads = resolve_thread_count(options.threads);
  context_ = opt_.context_length > 0 ? opt_.context_length : c.train_context;
  model_->use_context(context_);
  backend_ = make_backend(opt_, context_);
  backend_->bind(c, model_->host_weights());  // CUDA: uploads every weight once
  KvCacheLayout kv;
  kv.n_layers = c.n_layers;
  kv.kv_dim = c.kv_dim();
  kv.block_size = opt_.block_size;
  kv.n_blocks = kv_budget_blocks(opt_, context_, kv.block_bytes(backend_->kv_element_bytes()));
  kv_bytes_ = kv.bytes(backend_->kv_element_bytes());
  backend_->allocate_kv(kv);
  std::unique_ptr<DraftModel> draft;
  if (!opt_.draft_model.empty()) {
    if (opt_.speculative_tokens < 1) throw std::invalid_argument("a draft model needs speculativeTokens of at least 1");
    draft = std::make_unique<DraftModel>(opt_, context_, c.vocab);
  }
  scheduler_ = std::make_unique<Scheduler>(c, opt_, context_, kv.n_blocks, std::move(draft));
  scheduler_->set_device_sampling(backend_->samples_on_device());
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

uint64_t Engine::submit(GenerateRequest req) { return scheduler_->submit(std::move(req)); }

void Engine::cancel(uint64_t id) { scheduler_->cancel(id); }

EngineStats Engine::stats() {
  const Scheduler::Counts counts = scheduler_->counts();
  const KvCache& kv = scheduler_->kv();
  EngineStats st;
  st.running = counts.running;
  st.waiting = counts.waiting;
  st.kv_blocks_used = kv.pinned_blocks();
  st.kv_blocks_cached = kv.cached_blocks();
  st.prefix_queries = counts.prefix_queries;
  st.prefix_hits = counts.prefix_hits;
  st.draft_tokens = counts.draft_tokens;
  st.accepted_tokens = counts.accepted_tokens;
  st.kv_blocks_reserved = counts.reserved_blocks;
  st.kv_blocks_total = kv.total_blocks();
  st.kv_block_size = kv.block_size();
  st.steps = steps_.load();
  st.tokens_generated = scheduler_->tokens_generated();
  return st;
}

void Engine::stop() {
  if (scheduler_) scheduler_->stop();
  if (thread_.joinable()) thread_.join();
}

void Engine::loop() {
  std::vector<Event> events;
  auto emit = [&] {
    if (!events.empty()) sink_(std::move(events));
    events.clear();
  };
  for (;;) {
    const Schedule step = scheduler_->schedule(events);
    emit();
    if (step.stopping) return;
    if (step.batch.empty()) continue;
    const auto started = std::chrono::steady_clock::now();
    const StepOutput out = execute(step);
    int64_t tokens = 0;
    for (const BatchEntry& e : step.batch) tokens += e.n_tokens;
    scheduler_->observe_step(tokens, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    scheduler_->update(step, out, events);
    emit();
  }
}

// A drafting entry's rows, one per fed position: the token sampled at position j is kept, and
// the next position looked at, while it equals draft token j. Sampling one row after another with
// the sequence's own random stream (one draw per emitted token, as without drafts) keeps the
// output exactly what plain decoding gives, greedy or seeded.
void Engine::verify_draft(Sequence& s, const float* rows, std::vector<int32_t>& tokens, std::vector<TokenLogprobs>& logprobs) {
  const int64_t vocab = model_->config().vocab;
  for (int64_t j = 0; j <= s.drafted; ++j) {
    const float* row = rows + j * vocab;
    const int32_t t = s.sampler.sample(row);
    if (s.req.logprobs >= 0) logprobs.push_back(s.sampler.logprobs(row, t, s.req.logprobs));
    s.sampler.accept(t);
    tokens.push_back(t);
    if (j == s.drafted || t != s.feed[j + 1]) break;
  }
}

StepOutput Engine::execute(const Schedule& step) {
  const ModelConfig& c = model_->config();
  StepOutput out;
  out.tokens.resize(step.batch.size());
  out.logprobs.resize(step.batch.size());
  try {
    model_->forward(step.batch, *backend_);
    bool host_rows = !backend_->samples_on_device(), hidden = false;
    for (const Sequence* s : step.seqs) {
      host_rows = host_rows || s->req.logits_only || s->req.logprobs >= 0 || s->drafted > 0;
      hidden = hidden || s->req.embed;
    }
    if (host_rows) out.logits = backend_->host_logits();
    if (hidden) out.hidden = backend_->host_hidden();
    std::vector<SampleRequest> requests;
    std::vector<size_t> requesters;
    std::vector<size_t> single;  // entries that sampled one token, their log-probabilities and counts still to do
    for (size_t i = 0; i < step.batch.size(); ++i) {
      Sequence& s = *step.seqs[i];
      const BatchEntry& e = step.batch[i];
      const int64_t last_row = step.first_logit[i] + e.logit_rows() - 1;
      const bool prompt_done = s.n_past + e.n_tokens >= static_cast<int64_t>(s.req.prompt.size());
      if (!prompt_done || s.done || s.req.logits_only || s.cancelled.load()) continue;
      if (s.drafted > 0) {
        verify_draft(s, out.logits + step.first_logit[i] * c.vocab, out.tokens[i], out.logprobs[i]);
        continue;
      }
      const uint32_t* mask = s.step_mask();
      if (s.matcher && !s.matcher->error().empty()) continue;  // update() ends it
      if (backend_->samples_on_device()) {
        SampleRequest r;
        r.row = last_row;
        r.params = s.sampler.params();
        r.uniform = s.sampler.draw();
        r.counts = &s.sampler.counts();
        r.mask = mask;
        requests.push_back(r);
        requesters.push_back(i);
      } else {
        out.tokens[i].push_back(s.sampler.sample(out.logits + last_row * c.vocab, mask));
        single.push_back(i);
      }
    }
    if (!requests.empty()) {
      std::vector<int32_t> tokens;
      backend_->sample(requests, tokens);
      for (size_t j = 0; j < requesters.size(); ++j) out.tokens[requesters[j]].push_back(tokens[j]);
      single.insert(single.end(), requesters.begin(), requesters.end());
    }
    // Log-probabilities from the host copy of the logits (read before a device sampled in place)
    // and with the penalties before this token; then the token counts for the next step's.
    for (size_t i : single) {
      Sequence& s = *step.seqs[i];
      const int32_t token = out.tokens[i].front();
      if (s.req.logprobs >= 0) {
        const int64_t last_row = step.first_logit[i] + step.batch[i].logit_rows() - 1;
        out.logprobs[i].push_back(s.sampler.logprobs(out.logits + last_row * c.vocab, token, s.req.logprobs));
      }
      s.sampler.accept(token);
    }
  } catch (const std::exception& ex) {
    out.error = ex.what();
    if (out.error.empty()) out.error = "unknown error";
  }
  steps_.fetch_add(1);
  return out;
}

}  // namespace platform::llm
