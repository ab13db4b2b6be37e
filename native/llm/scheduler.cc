// Admission, step layout and result bookkeeping of continuous batching; see scheduler.h.
#include "scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace platform::llm {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

const uint32_t* Sequence::step_mask() {
  if (!matcher || !matcher->active()) return nullptr;
  return matcher->mask(mask) ? mask.data() : nullptr;
}

Scheduler::Scheduler(const ModelConfig& config, const EngineOptions& options, int64_t context, int64_t kv_blocks,
                     std::unique_ptr<DraftModel> draft_model)
    : config_(config), options_(options), context_(context), kv_(options.block_size, kv_blocks, options.prefix_cache),
      draft_model_(std::move(draft_model)) {}

uint64_t Scheduler::submit(GenerateRequest req) {
  const int64_t n_prompt = static_cast<int64_t>(req.prompt.size());
  if (n_prompt == 0) throw std::invalid_argument("the prompt must hold at least one token");
  for (int32_t t : req.prompt) {
    if (t < 0 || t >= config_.vocab) {
      throw std::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(config_.vocab) + ")");
    }
  }
  if (n_prompt > context_) {
    throw EngineError("context_length", "the prompt has " + std::to_string(n_prompt) + " tokens but the context holds " + std::to_string(context_));
  }
  const int64_t bs = kv_.block_size();
  if ((n_prompt + bs - 1) / bs > kv_.total_blocks()) {
    throw EngineError("kv_cache", "the prompt needs more KV cache than the model's budget (" + std::to_string(kv_.total_blocks() * bs) + " positions)");
  }
  auto s = std::make_shared<Sequence>(std::move(req), config_.vocab);
  const int64_t wanted = s->req.logits_only ? n_prompt : n_prompt + s->req.max_tokens;
  s->limit = std::min({wanted, context_, kv_.total_blocks() * bs});
  s->salt = std::hash<std::string>{}(s->req.cache_salt);
  s->t_submit = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) throw EngineError("unloaded", "the model has been unloaded");
  if (static_cast<int64_t>(waiting_.size()) >= options_.max_queued) {
    throw EngineError("overloaded", "the model is overloaded: " + std::to_string(waiting_.size()) + " requests already wait (maxQueued)");
  }
  s->id = next_id_++;
  by_id_[s->id] = s;
  waiting_.push_back(s);
  cv_.notify_one();
  return s->id;
}

void Scheduler::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  it->second->cancelled.store(true);
  cv_.notify_one();
}

void Scheduler::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  cv_.notify_one();
}

Scheduler::Counts Scheduler::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.running = static_cast<int64_t>(running_.size());
  c.waiting = static_cast<int64_t>(waiting_.size());
  c.reserved_blocks = kv_.pinned_blocks() + outstanding_.load();
  c.prefix_queries = prefix_queries_;
  c.prefix_hits = prefix_hits_;
  c.draft_tokens = draft_tokens_;
  c.accepted_tokens = accepted_tokens_;
  return c;
}

void Scheduler::finish(Sequence& s, FinishReason reason, std::vector<Event>& events, const std::string& error) {
  if (s.done) return;
  s.done = true;
  if (draft_model_) draft_model_->release(s.id);
  kv_.release(s.blocks);
  s.blocks.clear();
  outstanding_ -= s.reserved - s.allocated;  // what it reserved and never took
  s.reserved = s.allocated = 0;
  const auto now = Clock::now();
  Event e;
  e.type = Event::Type::kDone;
  e.id = s.id;
  e.reason = reason;
  e.error = error;
  e.prompt_tokens = static_cast<int64_t>(s.req.prompt.size());
  e.completion_tokens = static_cast<int64_t>(s.generated.size());
  e.cached_tokens = s.cached_tokens;
  const bool admitted = s.t_admit != Clock::time_point{};
  const bool started = s.t_first != Clock::time_point{};
  e.queued_ms = ms_between(s.t_submit, admitted ? s.t_admit : now);
  e.prefill_ms = admitted ? ms_between(s.t_admit, started ? s.t_first : now) : 0.0;
  e.decode_ms = started ? ms_between(s.t_first, now) : 0.0;
  if (s.req.logits_only && reason == FinishReason::kStop) {
    e.type = s.req.embed ? Event::Type::kEmbedding : Event::Type::kLogits;
    e.logits = std::move(s.logits);
    e.embedding = std::move(s.embedding);
  }
  events.push_back(std::move(e));
  by_id_.erase(s.id);
}

// Cancelled (or, when stopping, all) sequences leave now and free their blocks. mu_ held.
void Scheduler::retire_cancelled(bool all, std::vector<Event>& events) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (all || (*it)->cancelled.load()) {
      finish(**it, FinishReason::kCancelled, events);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if (all || (*it)->cancelled.load()) {
      finish(**it, FinishReason::kCancelled, events);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

// Admits in arrival order; a head that does not fit waits (no overtaking, no starvation). The
// head's prompt is looked up in the prefix cache first: its cached full blocks (never the whole
// prompt: the last token must run to give logits) cost nothing when other sequences hold them,
// one block each when they are only cached, and spare it their prefill. The budget holds while
// pinned blocks plus reservations not yet taken fit the cache. mu_ held.
void Scheduler::admit() {
  const int64_t bs = kv_.block_size();
  std::vector<int32_t> hits;
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < options_.max_running) {
    Sequence& s = *waiting_.front();
    const int64_t n_prompt = static_cast<int64_t>(s.req.prompt.size());
    // A head that waits is looked up again at every step: its hashes are worked out once.
    if (kv_.prefix_caching() && s.prompt_hashes.empty()) s.prompt_hashes = block_hashes(s.req.prompt, bs, s.salt);
    if (!s.req.logits_only) kv_.match(s.req.prompt, s.prompt_hashes, s.req.cache_salt, (n_prompt - 1) / bs, hits);
    else hits.clear();
    const int64_t needed = (s.limit + bs - 1) / bs - static_cast<int64_t>(hits.size());
    if (kv_.pinned_blocks() + outstanding_.load() + needed + kv_.unpinned(hits) > kv_.total_blocks()) break;
    kv_.take(hits);
    s.blocks = hits;
    s.hashes.assign(s.prompt_hashes.begin(), s.prompt_hashes.begin() + static_cast<int64_t>(hits.size()));
    s.n_past = static_cast<int64_t>(hits.size()) * bs;
    s.cached_tokens = s.n_past;
    s.reserved = needed;
    outstanding_ += needed;
    if (kv_.prefix_caching() && !s.req.logits_only) {
      prefix_queries_ += static_cast<uint64_t>(n_prompt);
      prefix_hits_ += static_cast<uint64_t>(s.cached_tokens);
    }
    s.t_admit = Clock::now();
    running_.push_back(waiting_.front());
    waiting_.pop_front();
  }
}

void Scheduler::publish_full_blocks(Sequence& s) {
  const int64_t bs = kv_.block_size();
  std::vector<int32_t> tokens(static_cast<size_t>(bs));
  for (int64_t b = static_cast<int64_t>(s.hashes.size()); (b + 1) * bs <= s.n_past; ++b) {
    for (int64_t i = 0; i < bs; ++i) tokens[i] = s.token_at(b * bs + i);
    const uint64_t parent = b == 0 ? 0 : s.hashes[b - 1];
    const uint64_t h = b < static_cast<int64_t>(s.prompt_hashes.size()) ? s.prompt_hashes[b] : block_hash(parent, tokens.data(), bs, s.salt);
    kv_.publish(s.blocks[b], h, parent, tokens.data(), s.req.cache_salt);
    s.hashes.push_back(h);
  }
}

bool Scheduler::may_draft(const Sequence& s) const {
  return !s.matcher && !s.cancelled.load() && (!device_sampling_ || s.req.sampling.temperature <= 0.0f);
}

int64_t Scheduler::draft_room(const Sequence& s, int64_t budget) const {
  // The step writes K/V at n_past .. n_past + drafted, within the sequence's limit, and emits at
  // most drafted + 1 tokens, within max_tokens.
  const int64_t room = std::min<int64_t>(s.limit - s.n_past - 1, s.req.max_tokens - static_cast<int64_t>(s.generated.size()) - 1);
  return std::max<int64_t>(0, std::min({room, budget, static_cast<int64_t>(options_.speculative_tokens)}));
}

int64_t Scheduler::draft_length(Sequence& s, int64_t available, int64_t step_tokens, double& emitted) {
  if (!options_.speculative_adaptive || available <= 0) return available;
  // The length whose expected tokens per unit of step time is best: more tokens emitted by the
  // step (p + p^2 + ... + p^k on average) against its longer forward pass (step_cost.h).
  const double p = (s.draft_hits + 1.0) / (s.draft_trials + 2.0);
  double best = 1.02;  // a draft must gain 2% to be worth its risk
  int64_t k = 0;
  for (int64_t j = 1; j <= available; ++j) {
    const double gain = (emitted + expected_accepted(p, j)) / emitted / step_cost_.ratio(step_tokens + j, step_tokens);
    if (gain > best) best = gain, k = j;
  }
  if (k == 0) {  // not drafting: its record fades, so that a sequence whose text starts repeating tries again
    s.draft_hits *= 0.97;
    s.draft_trials *= 0.97;
  }
  emitted += expected_accepted(p, k);
  return k;
}

int64_t Scheduler::draft(Sequence& s, int64_t max_draft, int64_t step_tokens, double& emitted) {
  s.feed.assign(1, s.generated.back());
  const TokenHistory history{s.req.prompt.data(), static_cast<int64_t>(s.req.prompt.size()), s.generated.data(), static_cast<int64_t>(s.generated.size())};
  NgramDraftOptions opt;
  opt.max_tokens = options_.speculative_tokens;
  const int64_t proposed = propose_ngram_draft(history, opt, draft_room(s, max_draft), s.feed);
  const int64_t k = draft_length(s, proposed, step_tokens, emitted);
  s.feed.resize(static_cast<size_t>(1 + k));
  s.drafted = k;
  return k;
}

void Scheduler::draft_with_model(int64_t& budget, int64_t& step_tokens, double& emitted) {
  std::vector<DraftModel::Want> wants;
  std::vector<Sequence*> owners;
  for (auto& sp : running_) {
    Sequence& s = *sp;
    s.drafted = 0;
    if (s.prefilling() || !may_draft(s)) continue;
    const int64_t k = draft_length(s, draft_room(s, budget), step_tokens, emitted);
    if (k <= 0) continue;
    budget -= k;
    step_tokens += k;
    wants.push_back({s.id, {s.req.prompt.data(), static_cast<int64_t>(s.req.prompt.size()), s.generated.data(), static_cast<int64_t>(s.generated.size())}, k});
    owners.push_back(&s);
  }
  if (wants.empty()) return;
  std::vector<std::vector<int32_t>> drafts;
  try {
    draft_model_->propose(wants, drafts);
  } catch (const std::exception&) {
    drafts.assign(wants.size(), {});  // a failed draft pass only costs the guesses: plain decoding goes on
  }
  for (size_t i = 0; i < owners.size(); ++i) {
    Sequence& s = *owners[i];
    s.feed.assign(1, s.generated.back());
    s.feed.insert(s.feed.end(), drafts[i].begin(), drafts[i].end());
    s.drafted = static_cast<int64_t>(drafts[i].size());
  }
}

// Decoding sequences first (one token each, plus a draft to verify with speculative decoding, from
// the tokens the other decoding sequences leave), then prompt chunks within the token budget; then
// the blocks for the new positions (covered by each sequence's reservation). Only the engine's
// thread changes running_ and the free list, so this needs no lock.
Schedule Scheduler::layout_step() {
  Schedule step;
  int64_t budget = options_.max_batch_tokens;
  for (auto& sp : running_) budget -= sp->prefilling() ? 0 : 1;
  int64_t step_tokens = options_.max_batch_tokens - budget;  // the decoding sequences' tokens, then drafts
  double emitted = static_cast<double>(step_tokens);          // the tokens the step is expected to emit
  // Drafts take at most half of what is left while prompts wait for their chunks, so that
  // drafting never starves a prefill (their first token would wait without bound).
  bool prefills = false;
  for (auto& sp : running_) prefills = prefills || sp->prefilling();
  int64_t draft_budget = prefills ? budget / 2 : budget;
  budget -= draft_budget;
  if (draft_model_ && options_.speculative_tokens > 0) draft_with_model(draft_budget, step_tokens, emitted);
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (s.prefilling()) continue;
    BatchEntry e;
    e.pos0 = s.n_past;
    if (!draft_model_) {
      s.drafted = 0;
      if (options_.speculative_tokens > 0 && may_draft(s) && draft_budget > 0) {
        const int64_t drafted = draft(s, draft_budget, step_tokens, emitted);
        draft_budget -= drafted;
        step_tokens += drafted;
      }
    }
    if (s.drafted > 0) {
      e.tokens = s.feed.data();
      e.n_tokens = 1 + s.drafted;
      e.all_logits = true;  // each drafted position's logits decide whether it is kept
    } else {
      e.tokens = &s.generated.back();
      e.n_tokens = 1;
    }
    step.batch.push_back(e);
    step.seqs.push_back(&s);
  }
  budget += draft_budget;  // what drafts left goes to the prompts
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (!s.prefilling() || budget <= 0) continue;
    BatchEntry e;
    e.pos0 = s.n_past;
    e.n_tokens = std::min<int64_t>(budget, static_cast<int64_t>(s.req.prompt.size()) - s.n_past);
    e.tokens = s.req.prompt.data() + s.n_past;
    e.all_logits = s.req.logits_only && s.req.all_logits;
    step.batch.push_back(e);
    step.seqs.push_back(&s);
    budget -= e.n_tokens;
  }
  const int64_t bs = kv_.block_size();
  int64_t row = 0;
  for (size_t i = 0; i < step.batch.size(); ++i) {
    Sequence& s = *step.seqs[i];
    BatchEntry& e = step.batch[i];
    while (static_cast<int64_t>(s.blocks.size()) * bs < e.pos0 + e.n_tokens) {
      s.blocks.push_back(kv_.allocate());
      ++s.allocated;
      --outstanding_;
    }
    e.blocks = &s.blocks;
    step.first_logit.push_back(row);
    row += e.logit_rows();
  }
  return step;
}

Schedule Scheduler::schedule(std::vector<Event>& events) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running_.empty(); });
    retire_cancelled(stopping_, events);
    if (stopping_) {
      Schedule stop;
      stop.stopping = true;
      return stop;
    }
    admit();
  }
  return layout_step();
}

void Scheduler::update(const Schedule& step, const StepOutput& out, std::vector<Event>& events) {
  const ModelConfig& c = config_;
  std::lock_guard<std::mutex> lock(mu_);
  if (!out.error.empty()) {
    for (Sequence* s : step.seqs) finish(*s, FinishReason::kError, events, "forward pass failed: " + out.error);
  } else {
    for (size_t i = 0; i < step.batch.size(); ++i) {
      Sequence& s = *step.seqs[i];
      const BatchEntry& e = step.batch[i];
      const float* first = out.logits ? out.logits + step.first_logit[i] * c.vocab : nullptr;  // the entry's host rows
      if (s.req.logits_only && e.all_logits) s.logits.insert(s.logits.end(), first, first + e.logit_rows() * c.vocab);  // every chunk
      const std::vector<int32_t>& tokens = out.tokens[i];
      // A drafting step wrote K/V for its feed; the rejected draft positions are written over later.
      const int64_t accepted = s.drafted > 0 && !tokens.empty() ? static_cast<int64_t>(tokens.size()) - 1 : 0;
      // The draft model saw the history and its own guesses but the last: those accepted stay valid.
      if (draft_model_ && s.drafted > 0) draft_model_->keep(s.id, s.n_past + 1 + std::min(accepted, s.drafted - 1));
      s.n_past += e.n_tokens - (s.drafted - accepted);
      if (s.drafted > 0 && !tokens.empty()) {  // a draft verified (not one whose sequence was cancelled)
        draft_tokens_ += static_cast<uint64_t>(s.drafted);
        accepted_tokens_ += static_cast<uint64_t>(accepted);
        s.draft_hits = 0.8 * s.draft_hits + static_cast<double>(accepted);
        s.draft_trials = 0.8 * s.draft_trials + static_cast<double>(accepted + (accepted < s.drafted ? 1 : 0));
      }
      // A drafting sequence publishes after its accepted tokens are in `generated` (below).
      if (kv_.prefix_caching() && !s.done && s.drafted == 0) publish_full_blocks(s);
      if (s.prefilling() || s.done) continue;  // more prompt to go
      if (s.req.embed) {
        // Last-token pooling: the prompt's last position, normalized to unit length.
        const float* h = out.hidden + step.first_logit[i] * c.dim;
        double norm = 0.0;
        for (int64_t d = 0; d < c.dim; ++d) norm += static_cast<double>(h[d]) * h[d];
        const double scale = norm > 0.0 ? 1.0 / std::sqrt(norm) : 0.0;
        s.embedding.resize(static_cast<size_t>(c.dim));
        for (int64_t d = 0; d < c.dim; ++d) s.embedding[d] = static_cast<float>(h[d] * scale);
        finish(s, FinishReason::kStop, events);
        continue;
      }
      if (s.req.logits_only) {
        if (!e.all_logits) s.logits.assign(first, first + c.vocab);
        finish(s, FinishReason::kStop, events);
        continue;
      }
      if (s.matcher && !s.matcher->error().empty()) {  // no token could continue the grammar
        finish(s, FinishReason::kError, events, "structured output: " + s.matcher->error());
        continue;
      }
      if (s.cancelled.load() || tokens.empty()) continue;  // the next schedule() reports it
      for (size_t j = 0; j < tokens.size() && !s.done; ++j) {
        const int32_t token = tokens[j];
        if (s.generated.empty()) s.t_first = Clock::now();
        if (std::find(c.eos_tokens.begin(), c.eos_tokens.end(), token) != c.eos_tokens.end()) {
          finish(s, FinishReason::kStop, events);  // a grammar allows EOS only where it may end
          break;
        }
        if (s.matcher && !s.matcher->accept(token)) {
          finish(s, FinishReason::kError, events, "structured output: " + s.matcher->error());
          break;
        }
        s.generated.push_back(token);
        generated_.fetch_add(1);
        Event ev;
        ev.type = Event::Type::kToken;
        ev.id = s.id;
        ev.token = token;
        if (s.req.logprobs >= 0 && j < out.logprobs[i].size()) {
          ev.has_logprobs = true;
          ev.logprobs = out.logprobs[i][j];
        }
        events.push_back(std::move(ev));
        // A grammar that can only end now ends the sequence without another step.
        if (s.matcher && s.matcher->must_end()) {
          finish(s, FinishReason::kStop, events);
          break;
        }
        // The token is fed at this position (the accepted draft tokens already were), which must
        // fit the limit.
        const int64_t position = s.n_past - static_cast<int64_t>(tokens.size() - 1 - j);
        if (static_cast<int64_t>(s.generated.size()) >= s.req.max_tokens || position >= s.limit) {
          finish(s, FinishReason::kLength, events);
        }
      }
      if (kv_.prefix_caching() && !s.done && s.drafted > 0) publish_full_blocks(s);
    }
  }
  // Finished sequences leave the running set and give back their reservations.
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->done) {
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace platform::llm
