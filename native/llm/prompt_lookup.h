// Prompt-lookup drafting for speculative decoding (no draft model): a sequence's next tokens are
// guessed from its own context. Text that quotes, edits or summarizes its input repeats runs of
// it, so the tokens that followed the most recent earlier occurrence of the sequence's last n
// tokens are a good guess for what follows now. The engine feeds the guesses with the sequence's
// next token in one step and keeps the longest prefix that sampling agrees with (scheduler.cc), so
// the output is the one decoding without drafts gives.
#pragma once

#include <cstdint>
#include <vector>

namespace platform::llm {

// A sequence's tokens so far: its prompt, then what it generated (two arrays, read as one).
struct TokenHistory {
  const int32_t* prompt = nullptr;
  int64_t n_prompt = 0;
  const int32_t* generated = nullptr;
  int64_t n_generated = 0;

  int64_t size() const { return n_prompt + n_generated; }
  int32_t at(int64_t i) const { return i < n_prompt ? prompt[i] : generated[i - n_prompt]; }
};

struct NgramDraftOptions {
  int32_t max_tokens = 0;  // k: tokens proposed at most (0: no drafting)
  int32_t ngram_max = 3;   // the longest suffix looked up first...
  int32_t ngram_min = 2;   // ...down to this length
};

// Appends to `draft` the min(opt.max_tokens, limit) tokens that followed the most recent earlier
// occurrence of the history's last n tokens, for the largest n in [ngram_min, ngram_max] that
// occurs earlier (a match close to the end repeats its cycle); nothing when none does. Returns
// the number appended.
int64_t propose_ngram_draft(const TokenHistory& history, const NgramDraftOptions& opt, int64_t limit,
                            std::vector<int32_t>& draft);

}  // namespace platform::llm
