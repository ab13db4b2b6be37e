// Prompt-lookup drafting: see prompt_lookup.h.
#include "prompt_lookup.h"

#include <algorithm>
#include <cstddef>

namespace platform::llm {

int64_t propose_ngram_draft(const TokenHistory& h, const NgramDraftOptions& opt, int64_t limit,
                            std::vector<int32_t>& draft) {
  const int64_t len = h.size();
  const int64_t k = std::min<int64_t>(opt.max_tokens, limit);
  if (k <= 0) return 0;
  for (int64_t n = std::min<int64_t>(opt.ngram_max, len - 1); n >= std::max<int32_t>(opt.ngram_min, 1); --n) {
    // The suffix h[len-n, len) against every earlier window h[p, p+n), latest first; p + n < len so
    // that at least one token follows the match.
    const int64_t tail = len - n;
    for (int64_t p = len - n - 1; p >= 0; --p) {
      int64_t i = 0;
      while (i < n && h.at(p + i) == h.at(tail + i)) ++i;
      if (i < n) continue;
      // The tokens after the match; where they run into the suffix itself (a repeating cycle
      // shorter than k), the cycle goes on through the draft.
      const size_t start = draft.size();
      for (int64_t q = p + n; q < p + n + k; ++q) draft.push_back(q < len ? h.at(q) : draft[start + (q - len)]);
      return k;
    }
  }
  return 0;
}

}  // namespace platform::llm
