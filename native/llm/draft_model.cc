// The draft model of speculative decoding: see draft_model.h.
#include "draft_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend_factory.h"

namespace platform::llm {

DraftModel::DraftModel(const EngineOptions& options, int64_t context, int64_t vocab) : opt_(options), context_(context) {
  model_ = Model::load(options.draft_model);
  const ModelConfig& c = model_->config();
  if (c.vocab != vocab) {
    throw std::invalid_argument("the draft model's vocabulary has " + std::to_string(c.vocab) + " tokens, the model's " + std::to_string(vocab) +
                                ": a draft model must share the model's vocabulary");
  }
  model_->use_context(context_);
  backend_ = make_backend(opt_, context_);
  backend_->bind(c, model_->host_weights());
  KvCacheLayout kv;
  kv.n_layers = c.n_layers;
  kv.kv_dim = c.kv_dim();
  kv.block_size = opt_.block_size;
  EngineOptions sizing = opt_;
  sizing.kv_cache_bytes = 0;  // the model's budget is the model's; the draft's: max_running contexts within the default
  kv.n_blocks = kv_budget_blocks(sizing, context_, kv.block_bytes(backend_->kv_element_bytes()));
  backend_->allocate_kv(kv);
  kv_ = std::make_unique<KvCache>(opt_.block_size, kv.n_blocks, false);
}

bool DraftModel::cover(State& st, int64_t positions) {
  const int64_t bs = kv_->block_size();
  const int64_t need = (positions + bs - 1) / bs - static_cast<int64_t>(st.blocks.size());
  if (need <= 0) return true;
  if (kv_->pinned_blocks() + need > kv_->total_blocks()) return false;
  for (int64_t i = 0; i < need; ++i) st.blocks.push_back(kv_->allocate());
  return true;
}

void DraftModel::step(const std::vector<BatchEntry>& batch, std::vector<int32_t>& next) {
  model_->forward(batch, *backend_);
  const float* logits = backend_->host_logits();
  const int64_t vocab = model_->config().vocab;
  next.resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const float* row = logits + static_cast<int64_t>(i) * vocab;
    next[i] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  }
}

void DraftModel::propose(const std::vector<Want>& wants, std::vector<std::vector<int32_t>>& drafts) {
  drafts.assign(wants.size(), {});
  // Who drafts: room in the draft cache for its whole draft, within the draft model's context.
  std::vector<size_t> live;
  for (size_t i = 0; i < wants.size(); ++i) {
    const Want& w = wants[i];
    const int64_t k = std::min<int64_t>(w.max_tokens, context_ - w.history.size());
    if (k <= 0) continue;
    State& st = states_[w.id];
    st.n_past = std::min(st.n_past, w.history.size() - 1);  // the last token always runs, for its logits
    if (!cover(st, w.history.size() + k - 1)) continue;
    live.push_back(i);
  }
  if (live.empty()) return;
  // Catch-up: each sequence's tokens the draft model has not seen, chunked within the step's token
  // budget and the running limit; the last chunk of each gives its first guess.
  std::vector<std::vector<int32_t>> pending(wants.size());
  for (size_t i : live) {
    const Want& w = wants[i];
    const State& st = states_[w.id];
    for (int64_t p = st.n_past; p < w.history.size(); ++p) pending[i].push_back(w.history.at(p));
  }
  std::vector<size_t> offset(wants.size(), 0);
  std::vector<size_t> waiting = live;
  std::vector<BatchEntry> batch;
  std::vector<size_t> owners;
  std::vector<int32_t> next;
  while (!waiting.empty()) {
    batch.clear();
    owners.clear();
    int64_t budget = opt_.max_batch_tokens;
    for (size_t i : waiting) {
      if (budget <= 0 || static_cast<int32_t>(batch.size()) >= opt_.max_running) break;
      State& st = states_[wants[i].id];
      BatchEntry e;
      e.n_tokens = std::min<int64_t>(budget, static_cast<int64_t>(pending[i].size() - offset[i]));
      e.tokens = pending[i].data() + offset[i];
      e.pos0 = st.n_past;
      e.blocks = &st.blocks;
      batch.push_back(e);
      owners.push_back(i);
      budget -= e.n_tokens;
    }
    step(batch, next);
    std::vector<size_t> still;
    for (size_t j = 0; j < owners.size(); ++j) {
      const size_t i = owners[j];
      State& st = states_[wants[i].id];
      st.n_past += batch[j].n_tokens;
      offset[i] += static_cast<size_t>(batch[j].n_tokens);
      if (offset[i] == pending[i].size()) drafts[i].push_back(next[j]);
    }
    for (size_t i : waiting) {
      if (offset[i] < pending[i].size()) still.push_back(i);
    }
    waiting.swap(still);
  }
  // Then one token per position: feed each guess to get the next, batched across sequences.
  for (;;) {
    batch.clear();
    owners.clear();
    for (size_t i : live) {
      const int64_t k = std::min<int64_t>(wants[i].max_tokens, context_ - wants[i].history.size());
      if (static_cast<int64_t>(drafts[i].size()) >= k || static_cast<int32_t>(batch.size()) >= opt_.max_running) continue;
      State& st = states_[wants[i].id];
      BatchEntry e;
      e.tokens = &drafts[i].back();
      e.n_tokens = 1;
      e.pos0 = st.n_past;
      e.blocks = &st.blocks;
      batch.push_back(e);
      owners.push_back(i);
    }
    if (batch.empty()) break;
    step(batch, next);
    for (size_t j = 0; j < owners.size(); ++j) {
      states_[wants[owners[j]].id].n_past += 1;
      drafts[owners[j]].push_back(next[j]);
    }
  }
}

void DraftModel::keep(uint64_t id, int64_t valid) {
  auto it = states_.find(id);
  if (it != states_.end()) it->second.n_past = std::min(it->second.n_past, valid);
}

void DraftModel::release(uint64_t id) {
  auto it = states_.find(id);
  if (it == states_.end()) return;
  kv_->release(it->second.blocks);
  states_.erase(it);
}

}  // namespace platform::llm
