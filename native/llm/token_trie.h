// The vocabulary as bytes, and a trie over those bytes, for the grammar's token masks: walking
// the trie once per parser state finds every token the grammar allows there, sharing the work
// of common prefixes (most tokens of a 32k vocabulary share their first bytes with others).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace platform::llm {

class TokenTrie {
 public:
  // bytes: every token's bytes, concatenated; offsets: [n_tokens + 1], token t is
  // bytes[offsets[t], offsets[t + 1]). Tokens with no bytes (control tokens) are never in the
  // trie. Throws std::invalid_argument on offsets that are not ascending within bytes.
  TokenTrie(std::vector<uint8_t> bytes, std::vector<uint32_t> offsets);

  int64_t n_tokens() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  std::string token(int32_t t) const;

  // Node 0 is the root. The children of a node are edges [first_edge, end_edge) sorted by byte.
  struct Edge {
    uint8_t byte;
    uint32_t child;
  };
  struct Node {
    uint32_t first_edge = 0, end_edge = 0;
    uint32_t first_token = 0, end_token = 0;  // tokens_[first, end): the tokens spelled by this node
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Edge>& edges() const { return edges_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  std::vector<uint8_t> bytes_;
  std::vector<uint32_t> offsets_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<int32_t> tokens_;
};

}  // namespace platform::llm
