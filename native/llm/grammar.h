// A context-free grammar over bytes, as the host encodes it (src/llm/structured/grammar.ts), and
// the pushdown recognizer's step over it.
//
// The rules are flattened into one array of items; a position is an index into it. Each
// alternative ends with an kEnd item. A parser state is a set of stacks; a stack is the return
// positions of the rules being parsed with, on top, the byte-set item the next byte must match.
// The empty stack means the whole grammar has been matched (the text may end here).
//
// Expanding a reference pushes the position after it, unless that position ends its alternative
// (a tail call: nothing is left to do there), so right-recursive repetition (R -> x R | "") keeps
// a constant depth and its states recur instead of growing.
//
// Parsing the encoding checks every count and index and refuses left recursion (a rule that can
// reach itself without consuming a byte), which would make expansion loop forever.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace platform::llm {

// A grammar the host sent that cannot be used; the message says why.
class GrammarError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

using Stack = std::vector<uint32_t>;  // return positions..., top: a byte-set position

class Grammar {
 public:
  // Reads the encoding: [1, n_rules, root, per rule: n_alts, per alt: n_items, per item:
  // 0 rule | 1 w0..w7]. Throws GrammarError on anything malformed, on more than max_items items,
  // and on left recursion.
  static Grammar parse(const int32_t* data, size_t size, size_t max_items);

  // The stacks the grammar starts with, expanded to byte-set tops (or the empty stack).
  std::vector<Stack> initial() const;
  // The stacks after `byte`, from the sorted, deduplicated set `from`; sorted and deduplicated.
  // Throws GrammarError when the expansion exceeds max_stacks (an ambiguity explosion).
  std::vector<Stack> advance(const std::vector<Stack>& from, uint8_t byte, size_t max_stacks) const;

  size_t items() const { return items_.size(); }

 private:
  enum Kind : uint8_t { kBytes, kRef, kEnd };
  struct Item {
    Kind kind = kEnd;
    uint32_t rule = 0;      // kRef
    uint32_t bytes[8] = {};  // kBytes: bit b of word b >> 5
  };

  // Resolves the top of `stack` until it is a byte set (or the stack is empty), adding each
  // result to `out`.
  void expand(Stack& stack, std::vector<Stack>& out, size_t max_stacks) const;
  void check_left_recursion() const;

  std::vector<Item> items_;
  std::vector<std::vector<uint32_t>> alts_;  // [rule]: the first position of each alternative
  uint32_t root_ = 0;
};

}  // namespace platform::llm
