// Interned parser states with cached transitions and token masks; one sequence's matcher. See
// grammar_matcher.h.
#include "grammar_matcher.h"

#include <algorithm>

namespace platform::llm {
namespace {

std::string key_of(const std::vector<Stack>& stacks) {
  std::string key;
  for (const Stack& s : stacks) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
    key.append(reinterpret_cast<const char*>(s.data()), sizeof(uint32_t) * s.size());
  }
  return key;
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenTrie> trie, int64_t vocab, std::vector<int32_t> eos_tokens,
                                 GrammarLimits limits)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), vocab_(vocab), eos_(std::move(eos_tokens)), limits_(limits) {
  std::lock_guard<std::mutex> lock(mu_);
  initial_ = intern(grammar_.initial());
}

size_t CompiledGrammar::states() {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.size();
}

int32_t CompiledGrammar::intern(std::vector<Stack> stacks) {
  if (stacks.empty()) return kDead;
  std::string key = key_of(stacks);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  if (states_.size() >= limits_.max_states || state_bytes_ + 2 * key.size() + 1024 > limits_.state_budget_bytes) {
    throw GrammarError("the grammar needed more than " + std::to_string(limits_.max_states) + " parser states or " +
                       std::to_string(limits_.state_budget_bytes >> 20) + " MiB of them; simplify the schema or nest less deeply");
  }
  for (const Stack& st : stacks) {
    if (st.size() > limits_.max_depth) throw GrammarError("the output nests more than " + std::to_string(limits_.max_depth) + " levels deep");
  }
  state_bytes_ += 2 * key.size() + 1024;  // the stacks, the key, the transition table
  State s;
  s.accepting = std::any_of(stacks.begin(), stacks.end(), [](const Stack& st) { return st.empty(); });
  s.stacks = std::move(stacks);
  s.next.assign(256, -2);
  states_.push_back(std::move(s));
  const int32_t id = static_cast<int32_t>(states_.size() - 1);
  index_.emplace(std::move(key), id);
  return id;
}

int32_t CompiledGrammar::step(int32_t state, uint8_t byte) {
  int32_t cached = states_[state].next[byte];
  if (cached != -2) return cached;
  const int32_t to = intern(grammar_.advance(states_[state].stacks, byte, limits_.max_stacks));
  states_[state].next[byte] = to;  // states_ may have grown: index again
  return to;
}

int32_t CompiledGrammar::advance_bytes(int32_t state, const std::string& bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (char c : bytes) {
    if (state == kDead) break;
    state = step(state, static_cast<uint8_t>(c));
  }
  return state;
}

int32_t CompiledGrammar::advance(int32_t state, int32_t token) {
  return advance_bytes(state, trie_->token(token));
}

bool CompiledGrammar::can_end(int32_t state) {
  std::lock_guard<std::mutex> lock(mu_);
  return state != kDead && states_[state].accepting;
}

bool CompiledGrammar::must_end(int32_t state) {
  std::lock_guard<std::mutex> lock(mu_);
  return state != kDead && states_[state].accepting && states_[state].stacks.size() == 1;
}

// One depth-first walk of the trie, carrying the parser state of each node's prefix.
void CompiledGrammar::compute_mask(int32_t state) {
  const size_t words = static_cast<size_t>(vocab_words());
  std::vector<uint32_t> mask(words, 0u);
  const auto& nodes = trie_->nodes();
  const auto& edges = trie_->edges();
  const auto& tokens = trie_->tokens();
  struct Frame {
    uint32_t node;
    int32_t state;
  };
  std::vector<Frame> todo{{0, state}};
  while (!todo.empty()) {
    const Frame f = todo.back();
    todo.pop_back();
    const TokenTrie::Node& node = nodes[f.node];
    for (uint32_t e = node.first_edge; e < node.end_edge; ++e) {
      const int32_t to = step(f.state, edges[e].byte);
      if (to == kDead) continue;
      const TokenTrie::Node& child = nodes[edges[e].child];
      for (uint32_t t = child.first_token; t < child.end_token; ++t) {
        const int32_t tok = tokens[t];
        if (tok < vocab_) mask[tok >> 5] |= 1u << (tok & 31);
      }
      if (child.end_edge > child.first_edge) todo.push_back({edges[e].child, to});
    }
  }
  if (states_[state].accepting) {
    for (int32_t eos : eos_) {
      if (eos >= 0 && eos < vocab_) mask[eos >> 5] |= 1u << (eos & 31);
    }
  }
  const size_t bytes = words * sizeof(uint32_t);
  if (mask_bytes_ + bytes > limits_.mask_budget_bytes) {  // drop every cached mask; transitions stay
    for (State& s : states_) std::vector<uint32_t>().swap(s.mask);
    mask_bytes_ = 0;
  }
  mask_bytes_ += bytes;
  states_[state].mask = std::move(mask);
}

void CompiledGrammar::mask(int32_t state, std::vector<uint32_t>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (states_[state].mask.empty()) compute_mask(state);
  out = states_[state].mask;
}

GrammarMatcher::GrammarMatcher(GrammarConstraint constraint)
    : c_(std::move(constraint)), active_(c_.trigger.empty()), state_(c_.grammar->initial_state()) {
  if (state_ == CompiledGrammar::kDead) error_ = "the grammar matches nothing";
}

bool GrammarMatcher::mask(std::vector<uint32_t>& out) {
  if (!error_.empty()) return false;
  try {
    c_.grammar->mask(state_, out);
  } catch (const std::exception& e) {
    error_ = e.what();
    return false;
  }
  if (std::all_of(out.begin(), out.end(), [](uint32_t w) { return w == 0; })) {
    error_ = "no token of the vocabulary can continue the grammar here";
    return false;
  }
  return true;
}

bool GrammarMatcher::accept(int32_t token) {
  if (!error_.empty()) return false;
  try {
    if (active_) {
      state_ = c_.grammar->advance(state_, token);
      if (state_ == CompiledGrammar::kDead) error_ = "the sampled token does not continue the grammar";
      return error_.empty();
    }
    // Lazy: look for the trigger in the text so far; the grammar takes what follows it.
    seen_ += c_.grammar->trie().token(token);
    const size_t at = seen_.find(c_.trigger);
    if (at == std::string::npos) {
      if (seen_.size() > c_.trigger.size()) seen_.erase(0, seen_.size() - c_.trigger.size());
      return true;
    }
    active_ = true;
    state_ = c_.grammar->advance_bytes(state_, seen_.substr(at + c_.trigger.size()));
    seen_.clear();
    if (state_ == CompiledGrammar::kDead) error_ = "the text after the tool-call tag does not continue its grammar";
  } catch (const std::exception& e) {
    error_ = e.what();
  }
  return error_.empty();
}

bool GrammarMatcher::must_end() {
  return active_ && error_.empty() && c_.grammar->must_end(state_);
}

}  // namespace platform::llm
