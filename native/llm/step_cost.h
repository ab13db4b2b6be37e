// What a forward step costs by its token count, measured by the engine on its own steps, so that
// speculative decoding drafts only as many tokens as pay for themselves here. Where reading the
// weights bounds a step (a GPU, a large model on a CPU), a step of 5 tokens costs little more than
// one of 1 and drafting gains almost all it accepts; where computing them bounds it (a small model,
// attention over a long context on a CPU), 5 tokens cost up to 5 times 1 and a draft must nearly
// always be right to gain anything.
#pragma once

#include <array>
#include <cstdint>

namespace platform::llm {

class StepCost {
 public:
  static constexpr int64_t kMaxTokens = 64;  // steps of more tokens (prompt chunks) are not tracked

  // A step of `tokens` tokens took `ms` (its forward pass and sampling).
  void observe(int64_t tokens, double ms);
  // The expected time of a step of n tokens over that of a step of n0 (n >= n0 >= 1): from the
  // steps seen, interpolated between sizes seen, extrapolated past the largest with its last
  // slope; before a size above n0 has been seen, each token adds kPriorSlope of a 1-token step
  // (an optimistic guess, so that drafting starts and the first drafting steps measure it).
  // Sizes past kMaxTokens are extrapolated from the largest ones seen.
  double ratio(int64_t n, int64_t n0) const;

  static constexpr double kPriorSlope = 0.05;

 private:
  double at(int64_t n) const;  // the expected ms of a step of n >= 1 tokens

  std::array<double, kMaxTokens + 1> ms_{};  // an exponential moving average per size
  std::array<bool, kMaxTokens + 1> seen_{};
};

// The tokens a sequence's draft of k tokens adds to its step on average, when each draft token
// is right with probability p given the ones before it: p + p^2 + ... + p^k.
double expected_accepted(double p, int64_t k);

}  // namespace platform::llm
