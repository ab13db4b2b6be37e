// Step cost by token count: see step_cost.h.
#include "step_cost.h"

#include <algorithm>

namespace platform::llm {
namespace {
constexpr double kAlpha = 0.1;  // weight of a new observation in its size's average
}  // namespace

void StepCost::observe(int64_t tokens, double ms) {
  if (tokens < 1 || tokens > kMaxTokens || !(ms >= 0.0)) return;
  ms_[tokens] = seen_[tokens] ? ms_[tokens] + kAlpha * (ms - ms_[tokens]) : ms;
  seen_[tokens] = true;
}

double StepCost::at(int64_t n) const {
  if (n <= kMaxTokens && seen_[n]) return ms_[n];
  int64_t lo = std::min(n - 1, kMaxTokens), hi = n + 1;
  while (lo >= 1 && !seen_[lo]) --lo;
  while (hi <= kMaxTokens && !seen_[hi]) ++hi;
  if (lo >= 1 && hi <= kMaxTokens) return ms_[lo] + (ms_[hi] - ms_[lo]) * static_cast<double>(n - lo) / static_cast<double>(hi - lo);
  if (lo >= 1) {
    // Past the largest size seen: its slope from the size seen below it, else the prior's.
    int64_t below = lo - 1;
    while (below >= 1 && !seen_[below]) --below;
    const double slope = below >= 1 ? std::max(0.0, (ms_[lo] - ms_[below]) / static_cast<double>(lo - below)) : kPriorSlope * ms_[lo] / (1.0 + kPriorSlope * static_cast<double>(lo - 1));
    return ms_[lo] + slope * static_cast<double>(n - lo);
  }
  if (hi <= kMaxTokens) return ms_[hi] * (1.0 + kPriorSlope * static_cast<double>(n - 1)) / (1.0 + kPriorSlope * static_cast<double>(hi - 1));
  return 1.0 + kPriorSlope * static_cast<double>(n - 1);  // nothing seen: in units of a 1-token step
}

double StepCost::ratio(int64_t n, int64_t n0) const {
  // Past the tracked sizes, at() extrapolates with the last slope seen (a clamp would make every
  // draft look free to a batch of 64 sequences).
  n = std::max<int64_t>(n, 1);
  n0 = std::max<int64_t>(n0, 1);
  const double base = at(n0);
  return base > 0.0 ? at(n) / base : 1.0;
}

double expected_accepted(double p, int64_t k) {
  double sum = 0.0, term = 1.0;
  for (int64_t i = 0; i < k; ++i) sum += term *= p;
  return sum;
}

}  // namespace platform::llm
