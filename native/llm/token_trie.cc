// The vocabulary's byte trie, laid out as arrays (nodes in breadth-first order, edges and tokens
// in runs per node); see token_trie.h.
#include "token_trie.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace platform::llm {

TokenTrie::TokenTrie(std::vector<uint8_t> bytes, std::vector<uint32_t> offsets) : bytes_(std::move(bytes)), offsets_(std::move(offsets)) {
  if (offsets_.empty() || offsets_.front() != 0 || offsets_.back() != bytes_.size()) {
    throw std::invalid_argument("token offsets must start at 0 and end at the length of the bytes");
  }
  for (size_t i = 1; i < offsets_.size(); ++i) {
    if (offsets_[i] < offsets_[i - 1]) throw std::invalid_argument("token offsets must ascend");
  }
  // Sort the tokens by their bytes; each node is then a run of tokens sharing a prefix, and its
  // children are the runs that share one more byte, found in order.
  const int32_t n = static_cast<int32_t>(offsets_.size() - 1);
  std::vector<int32_t> order;
  for (int32_t t = 0; t < n; ++t) {
    if (offsets_[t + 1] > offsets_[t]) order.push_back(t);
  }
  auto spelled = [&](int32_t t) { return std::string_view(reinterpret_cast<const char*>(bytes_.data()) + offsets_[t], offsets_[t + 1] - offsets_[t]); };
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return spelled(a) < spelled(b) || (spelled(a) == spelled(b) && a < b); });
  struct Pending {
    uint32_t node;
    size_t lo, hi, depth;  // order[lo, hi): the tokens under this node, all at least depth bytes long
  };
  nodes_.push_back(Node{});
  std::vector<Pending> queue{{0, 0, order.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Pending p = queue[q];
    size_t i = p.lo;
    Node& node = nodes_[p.node];
    node.first_token = static_cast<uint32_t>(tokens_.size());
    while (i < p.hi && spelled(order[i]).size() == p.depth) tokens_.push_back(order[i++]);
    nodes_[p.node].end_token = static_cast<uint32_t>(tokens_.size());
    nodes_[p.node].first_edge = static_cast<uint32_t>(edges_.size());
    while (i < p.hi) {
      const uint8_t b = static_cast<uint8_t>(spelled(order[i])[p.depth]);
      size_t j = i;
      while (j < p.hi && static_cast<uint8_t>(spelled(order[j])[p.depth]) == b) ++j;
      const uint32_t child = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(Node{});
      edges_.push_back(Edge{b, child});
      queue.push_back({child, i, j, p.depth + 1});
      i = j;
    }
    nodes_[p.node].end_edge = static_cast<uint32_t>(edges_.size());
  }
}

std::string TokenTrie::token(int32_t t) const {
  if (t < 0 || t >= n_tokens()) return {};
  return std::string(reinterpret_cast<const char*>(bytes_.data()) + offsets_[t], offsets_[t + 1] - offsets_[t]);
}

}  // namespace platform::llm
