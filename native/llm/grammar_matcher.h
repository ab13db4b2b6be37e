// A grammar compiled against one model's vocabulary, and the constraint it puts on one sequence.
//
// CompiledGrammar interns parser states (the grammar's sorted stack sets) as it meets them and
// caches, per state, its byte transitions and its token mask: the bit set over the vocabulary
// of the tokens whose bytes the grammar can match from there (found by one walk of the token
// trie), plus the end-of-sequence tokens where the grammar may end. A sequence's state is one
// id, so a masked step after the first visit of a state is a lookup; a JSON value's states recur
// (every character inside one string property is the same state), so that is nearly every step.
// Memory is bounded: at most max_states states per grammar, and the masks are dropped (they are
// recomputed from the cached transitions) when they would take more than mask_budget_bytes.
//
// GrammarMatcher is one sequence's position: its state, or, for a lazy constraint (tool calls in
// "auto" mode), the text generated so far until it contains the trigger, after which the grammar
// applies to what follows the trigger.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar.h"
#include "token_trie.h"

namespace platform::llm {

struct GrammarLimits {
  size_t max_items = 2'000'000;        // items in the encoded grammar
  size_t max_stacks = 1024;            // live parses in one state
  size_t max_depth = 256;              // rules being parsed inside each other (nesting)
  size_t max_states = 100'000;         // interned states per grammar
  size_t state_budget_bytes = 64u << 20;  // their stacks and keys
  size_t mask_budget_bytes = 64u << 20;   // cached masks (dropped and recomputed beyond it)
};

class CompiledGrammar {
 public:
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenTrie> trie, int64_t vocab, std::vector<int32_t> eos_tokens,
                  GrammarLimits limits = {});

  static constexpr int32_t kDead = -1;
  int32_t initial_state() const { return initial_; }
  // The state after the token's bytes (kDead if the grammar cannot match them). Thread-safe.
  int32_t advance(int32_t state, int32_t token);
  // The state after `bytes`.
  int32_t advance_bytes(int32_t state, const std::string& bytes);
  bool can_end(int32_t state);
  // Nothing but the end can follow: the sequence is complete.
  bool must_end(int32_t state);
  // Copies the state's token mask ([vocab_words()] words, bit t of word t >> 5) into `out`.
  void mask(int32_t state, std::vector<uint32_t>& out);
  int64_t vocab_words() const { return (vocab_ + 31) / 32; }
  const TokenTrie& trie() const { return *trie_; }
  int64_t vocab() const { return vocab_; }
  size_t states();

 private:
  struct State {
    std::vector<Stack> stacks;
    bool accepting = false;
    std::vector<int32_t> next;    // [256], -2: not computed yet
    std::vector<uint32_t> mask;   // empty: not computed (or dropped)
  };
  int32_t intern(std::vector<Stack> stacks);  // mu_ held
  int32_t step(int32_t state, uint8_t byte);  // mu_ held
  void compute_mask(int32_t state);           // mu_ held

  Grammar grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  int64_t vocab_;
  std::vector<int32_t> eos_;
  GrammarLimits limits_;
  std::mutex mu_;
  std::vector<State> states_;
  std::unordered_map<std::string, int32_t> index_;
  size_t mask_bytes_ = 0, state_bytes_ = 0;
  int32_t initial_ = kDead;
};

// What a request asks of its output: the grammar, and for a lazy constraint, the trigger text.
struct GrammarConstraint {
  std::shared_ptr<CompiledGrammar> grammar;
  std::string trigger;  // empty: the grammar applies from the first token
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(GrammarConstraint constraint);

  // Whether the next token is constrained now (a lazy matcher is not until its trigger).
  bool active() const { return active_; }
  // The allowed tokens of the next step; false (with error()) if no token can continue.
  bool mask(std::vector<uint32_t>& out);
  // Takes the sampled token. False (with error()) if the grammar cannot match it.
  bool accept(int32_t token);
  bool must_end();
  const std::string& error() const { return error_; }

 private:
  GrammarConstraint c_;
  bool active_;
  int32_t state_;
  std::string seen_;  // lazy: the text so far (only its tail that may hold the trigger's start)
  std::string error_;
};

}  // namespace platform::llm
