#include "sampler.h"

#include <algorithm>
#include <cmath>

namespace platform::llm {

Sampler::Sampler(const SamplingParams& params, int64_t vocab) : p_(params), vocab_(vocab) {
  rng_.seed(params.has_seed ? params.seed : std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32));
}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void Sampler::accept(int32_t token) { ++counts_[token]; }

TokenLogprobs Sampler::logprobs(const float* logits, int32_t token, int32_t top_n) {
  std::vector<float> l(logits, logits + vocab_);
  for (const auto& [tok, count] : counts_) l[tok] -= p_.frequency_penalty * static_cast<float>(count) + p_.presence_penalty;
  const float mx = *std::max_element(l.begin(), l.end());
  double sum = 0.0;
  for (float v : l) sum += std::exp(static_cast<double>(v) - mx);
  const double lse = mx + std::log(sum);
  TokenLogprobs out;
  out.logprob = static_cast<float>(l[token] - lse);
  const int64_t n = std::min<int64_t>(top_n, vocab_);
  if (n > 0) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab_));
    for (int64_t i = 0; i < vocab_; ++i) ids[i] = static_cast<int32_t>(i);
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    for (int64_t i = 0; i < n; ++i) out.top.push_back({ids[i], static_cast<float>(l[ids[i]] - lse)});
  }
  return out;
}

int32_t Sampler::sample(const float* logits, const uint32_t* mask) {
  const float* l = logits;
  const bool penalties = (p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f) && !counts_.empty();
  if (penalties || mask != nullptr) {
    work_.assign(logits, logits + vocab_);
    l = work_.data();
  }
  if (penalties) {
    for (const auto& [tok, count] : counts_) {
      work_[tok] -= p_.frequency_penalty * static_cast<float>(count) + p_.presence_penalty;
    }
  }
  if (mask != nullptr) {
    for (int64_t i = 0; i < vocab_; ++i) {
      if (!((mask[i >> 5] >> (i & 31)) & 1u)) work_[i] = -INFINITY;
    }
  }
  if (p_.temperature <= 0.0f) {  // greedy: first maximum
    return static_cast<int32_t>(std::max_element(l, l + vocab_) - l);
  }

  const float inv_t = 1.0f / p_.temperature;
  if (mask == nullptr) {
    cand_.resize(static_cast<size_t>(vocab_));
    for (int64_t i = 0; i < vocab_; ++i) cand_[i] = {l[i] * inv_t, static_cast<int32_t>(i)};
  } else {  // only the allowed tokens are candidates (a masked token never has mass to be drawn)
    cand_.clear();
    for (int64_t i = 0; i < vocab_; ++i) {
      if ((mask[i >> 5] >> (i & 31)) & 1u) cand_.push_back({l[i] * inv_t, static_cast<int32_t>(i)});
    }
    if (cand_.empty()) return static_cast<int32_t>(std::max_element(l, l + vocab_) - l);
  }
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  if (p_.top_k > 0 && p_.top_k < static_cast<int64_t>(cand_.size())) {
    std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    cand_.resize(static_cast<size_t>(p_.top_k));
  } else if (p_.top_p < 1.0f) {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  // Softmax in place (probabilities replace the logits).
  float mx = -INFINITY;
  for (const auto& c : cand_) mx = std::max(mx, c.first);
  double sum = 0.0;
  for (auto& c : cand_) {
    c.first = std::exp(c.first - mx);
    sum += c.first;
  }
  for (auto& c : cand_) c.first = static_cast<float>(c.first / sum);
  if (p_.top_p < 1.0f) {  // candidates are sorted: keep the smallest prefix with mass >= top_p
    double cum = 0.0;
    size_t keep = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      cum += cand_[i].first;
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
    cand_.resize(keep);
  }
  if (p_.min_p > 0.0f) {
    float pmax = 0.0f;
    for (const auto& c : cand_) pmax = std::max(pmax, c.first);
    const float floor = p_.min_p * pmax;
    cand_.erase(std::remove_if(cand_.begin(), cand_.end(), [&](const auto& c) { return c.first < floor; }), cand_.end());
  }
  double total = 0.0;
  for (const auto& c : cand_) total += c.first;
  double r = uniform() * total;
  for (const auto& c : cand_) {
    r -= c.first;
    if (r < 0.0) return c.second;
  }
  return cand_.back().second;
}

}  // namespace platform::llm
