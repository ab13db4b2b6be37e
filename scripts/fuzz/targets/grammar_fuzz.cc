// libFuzzer target: the structured-output grammar as llmCompileGrammar receives it (an Int32Array
// the host builds, src/llm/structured/grammar.ts encodeGrammar), parsed by Grammar::parse with the
// engine's limits, compiled against a small vocabulary (CompiledGrammar: every byte as a token,
// a few multi-byte tokens and an end-of-sequence token), then walked: the initial state's token
// mask, and a few tokens accepted with the mask and end checks after each.
//
// Input: u8 k, then k token picks (a byte b is token b, bytes >= 252 the multi-byte tokens and the
// end token), then the grammar's int32 words (little-endian; a trailing partial word is dropped).
// scripts/fuzz/seeds.ts writes seeds from the host's own JSON-schema grammars. A GrammarError
// (std::invalid_argument) is the expected refusal; a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "llm/grammar.h"
#include "llm/grammar_matcher.h"
#include "llm/token_trie.h"

namespace {

using platform::llm::CompiledGrammar;
using platform::llm::Grammar;
using platform::llm::GrammarLimits;
using platform::llm::TokenTrie;

constexpr int32_t kByteTokens = 256;
const char* const kMultiByte[] = {"true", "{\"", "\":", "null"};
constexpr int32_t kEos = kByteTokens + 4;
constexpr int64_t kVocab = kEos + 1;

std::shared_ptr<const TokenTrie> trie() {
  static const std::shared_ptr<const TokenTrie> t = [] {
    std::vector<uint8_t> bytes;
    std::vector<uint32_t> offsets{0};
    for (int b = 0; b < kByteTokens; ++b) {
      bytes.push_back(static_cast<uint8_t>(b));
      offsets.push_back(static_cast<uint32_t>(bytes.size()));
    }
    for (const char* s : kMultiByte) {
      bytes.insert(bytes.end(), s, s + std::strlen(s));
      offsets.push_back(static_cast<uint32_t>(bytes.size()));
    }
    offsets.push_back(static_cast<uint32_t>(bytes.size()));  // the end token: no bytes
    return std::make_shared<const TokenTrie>(std::move(bytes), std::move(offsets));
  }();
  return t;
}

volatile uint32_t g_sink;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return -1;
  const size_t k = data[0] % 16;
  if (size < 1 + k) return -1;
  const uint8_t* picks = data + 1;
  const size_t words = (size - 1 - k) / 4;
  std::vector<int32_t> encoded(words);
  if (words) std::memcpy(encoded.data(), data + 1 + k, words * 4);

  const GrammarLimits limits;
  try {
    Grammar g = Grammar::parse(encoded.data(), encoded.size(), limits.max_items);
    CompiledGrammar c(std::move(g), trie(), kVocab, {kEos}, limits);
    int32_t state = c.initial_state();
    std::vector<uint32_t> mask;
    for (size_t i = 0; i <= k && state != CompiledGrammar::kDead; ++i) {
      c.mask(state, mask);
      uint32_t h = mask.size();
      for (uint32_t w : mask) h ^= w;
      h += c.can_end(state) + 2 * c.must_end(state);
      g_sink = h;
      if (i == k) break;
      const uint8_t b = picks[i];
      const int32_t token = b < 252 ? b : kByteTokens + (b - 252);  // 252..255: the multi-byte tokens, 255 is "null"
      state = c.advance(state, b == 255 && (i & 1) ? kEos : token);
    }
    (void)c.states();
  } catch (const std::invalid_argument&) {
    return 0;  // GrammarError: the addon's RangeError
  }
  return 0;
}
