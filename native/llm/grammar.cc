// The byte grammar's encoding and its pushdown step; see grammar.h.
#include "grammar.h"

#include <algorithm>

namespace platform::llm {
namespace {

class Reader {
 public:
  Reader(const int32_t* data, size_t size) : data_(data), size_(size) {}
  int32_t next(const char* what) {
    if (at_ >= size_) throw GrammarError(std::string("the grammar's encoding ends early, in ") + what);
    return data_[at_++];
  }
  int32_t count(const char* what, int32_t max) {
    const int32_t n = next(what);
    if (n < 0 || n > max) throw GrammarError(std::string("the grammar's ") + what + " is out of range: " + std::to_string(n));
    return n;
  }
  bool done() const { return at_ == size_; }

 private:
  const int32_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace

Grammar Grammar::parse(const int32_t* data, size_t size, size_t max_items) {
  Reader r(data, size);
  if (r.next("version") != 1) throw GrammarError("the grammar's encoding version must be 1");
  const int32_t n_rules = r.count("rule count", 1 << 24);
  if (n_rules == 0) throw GrammarError("the grammar has no rules");
  // Each rule takes at least two words (its alternative count, an item count): a count beyond that
  // is refused before anything is allocated for it.
  if (static_cast<size_t>(n_rules) > size / 2) throw GrammarError("the grammar's rule count is larger than its encoding can hold");
  const int32_t root = r.count("root", n_rules - 1);
  Grammar g;
  g.root_ = static_cast<uint32_t>(root);
  g.alts_.resize(static_cast<size_t>(n_rules));
  for (int32_t rule = 0; rule < n_rules; ++rule) {
    const int32_t n_alts = r.count("alternative count", 1 << 24);
    if (n_alts == 0) throw GrammarError("rule " + std::to_string(rule) + " has no alternatives");
    for (int32_t a = 0; a < n_alts; ++a) {
      g.alts_[rule].push_back(static_cast<uint32_t>(g.items_.size()));
      const int32_t n_items = r.count("item count", 1 << 24);
      for (int32_t i = 0; i <= n_items; ++i) {
        if (g.items_.size() >= max_items) throw GrammarError("the grammar has more than " + std::to_string(max_items) + " items");
        Item item;
        if (i == n_items) {
          item.kind = kEnd;
        } else if (const int32_t tag = r.next("item tag"); tag == 0) {
          item.kind = kRef;
          item.rule = static_cast<uint32_t>(r.count("rule reference", n_rules - 1));
        } else if (tag == 1) {
          item.kind = kBytes;
          bool any = false;
          for (uint32_t& w : item.bytes) {
            w = static_cast<uint32_t>(r.next("byte set"));
            any = any || w != 0;
          }
          if (!any) throw GrammarError("rule " + std::to_string(rule) + " has an empty byte set");
        } else {
          throw GrammarError("unknown item tag " + std::to_string(tag));
        }
        g.items_.push_back(item);
      }
    }
  }
  if (!r.done()) throw GrammarError("the grammar's encoding has bytes after its last rule");
  g.check_left_recursion();
  return g;
}

// A rule reaches another at its start if some alternative can get to a reference to it having
// matched only nullable rules before; a cycle among those edges is left recursion.
void Grammar::check_left_recursion() const {
  const size_t n = alts_.size();
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t rule = 0; rule < n; ++rule) {
      if (nullable[rule]) continue;
      for (uint32_t p : alts_[rule]) {
        while (items_[p].kind == kRef && nullable[items_[p].rule]) ++p;
        if (items_[p].kind == kEnd) {
          nullable[rule] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> starts(n);
  for (size_t rule = 0; rule < n; ++rule) {
    for (uint32_t p : alts_[rule]) {
      for (; items_[p].kind == kRef; ++p) {
        starts[rule].push_back(items_[p].rule);
        if (!nullable[items_[p].rule]) break;
      }
    }
  }
  // Iterative depth-first search for a cycle (0 unvisited, 1 on the path, 2 done).
  std::vector<char> mark(n, 0);
  std::vector<std::pair<uint32_t, size_t>> path;
  for (uint32_t s = 0; s < n; ++s) {
    if (mark[s]) continue;
    path.push_back({s, 0});
    mark[s] = 1;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      if (next < starts[rule].size()) {
        const uint32_t to = starts[rule][next++];
        if (mark[to] == 1) throw GrammarError("the grammar is left-recursive (rule " + std::to_string(to) + " can reach itself without matching a byte)");
        if (mark[to] == 0) {
          mark[to] = 1;
          path.push_back({to, 0});
        }
      } else {
        mark[rule] = 2;
        path.pop_back();
      }
    }
  }
}

void Grammar::expand(Stack& stack, std::vector<Stack>& out, size_t max_stacks) const {
  for (;;) {
    if (stack.empty()) {
      out.push_back(stack);
      break;
    }
    const uint32_t p = stack.back();
    const Item& item = items_[p];
    if (item.kind == kBytes) {
      out.push_back(stack);
      break;
    }
    if (item.kind == kEnd) {
      stack.pop_back();
      continue;
    }
    // A reference: continue after it (or not at all: a tail call), then into each alternative.
    if (items_[p + 1].kind == kEnd) {
      stack.pop_back();
    } else {
      stack.back() = p + 1;
    }
    const std::vector<uint32_t>& alts = alts_[item.rule];
    for (size_t a = 0; a + 1 < alts.size(); ++a) {
      Stack branch = stack;
      branch.push_back(alts[a]);
      expand(branch, out, max_stacks);
    }
    stack.push_back(alts.back());
    if (out.size() > max_stacks) break;
  }
  if (out.size() > max_stacks) {
    throw GrammarError("the grammar is too ambiguous: more than " + std::to_string(max_stacks) + " parses are alive at once");
  }
}

std::vector<Stack> Grammar::initial() const {
  std::vector<Stack> out;
  const std::vector<uint32_t>& alts = alts_[root_];
  for (uint32_t start : alts) {
    Stack s{start};
    expand(s, out, 1 << 16);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Stack> Grammar::advance(const std::vector<Stack>& from, uint8_t byte, size_t max_stacks) const {
  std::vector<Stack> out;
  for (const Stack& s : from) {
    if (s.empty()) continue;
    const Item& top = items_[s.back()];
    if (!((top.bytes[byte >> 5] >> (byte & 31)) & 1u)) continue;
    Stack next = s;
    next.back() += 1;
    expand(next, out, max_stacks);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace platform::llm
