// Token sampling on the device, one 1024-thread CTA per logits row, with the semantics and order
// of native/llm/sampler.cc:
//   penalties -> (temperature <= 0: first argmax) -> x = logit * (1 / temperature) -> top-k ->
//   softmax over the kept -> top-p -> min-p -> draw uniform * kept mass.
// No sort: top-k and top-p keep a prefix of the CPU's order (x desc, id asc), found by radix
// select over order-preserving 32-bit keys of x (4 passes of 8-bit digits): by count for top-k,
// by probability mass (2^-60 fixed point: exact, associative integer sums) for top-p. Ties at the
// threshold keep the lowest ids first, like the CPU's sort. min-p drops p < min_p * p_max.
// The draw walks the kept tokens in ascending token id (the CPU walks them in its candidate order:
// ascending id too when neither top-k nor top-p is on, else descending x); the distribution is
// the same. x overwrites the logits row. No workspace.
#include "llm_kernels.h"
#include "sample_select.cuh"

#include <climits>

namespace platform::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;

struct Shared {
  unsigned long long hist64[256];  // radix bins: fixed-point mass
  unsigned int hist32[256];        // radix bins: count
  double rd[kWarps];
  unsigned long long ru[kWarps];
  float rf[kWarps];
  int ri[kWarps];
  int result;
  unsigned long long win_before;
};

// Block-wide reductions: every thread gets the same result (xor butterflies are commutative at
// each step, so all lanes agree bit for bit). Leading sync: protects the scratch from the
// previous call's readers.
__device__ double block_sum(double v, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(kFull, v, off);
  if (lane == 0) sh.rd[warp] = v;
  __syncthreads();
  double r = sh.rd[lane];
  for (int off = 16; off > 0; off >>= 1) r += __shfl_xor_sync(kFull, r, off);
  return r;
}

// (value, index) with the larger value, the lower index on equal values (first maximum).
__device__ __forceinline__ void arg_better(float& v, int& i, float v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i)) {
    v = v2;
    i = i2;
  }
}
__device__ void block_argmax(float& v, int& i, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  for (int off = 16; off > 0; off >>= 1) {
    const float v2 = __shfl_xor_sync(kFull, v, off);
    const int i2 = __shfl_xor_sync(kFull, i, off);
    arg_better(v, i, v2, i2);
  }
  if (lane == 0) {
    sh.rf[warp] = v;
    sh.ri[warp] = i;
  }
  __syncthreads();
  v = sh.rf[lane];
  i = sh.ri[lane];
  for (int off = 16; off > 0; off >>= 1) {
    const float v2 = __shfl_xor_sync(kFull, v, off);
    const int i2 = __shfl_xor_sync(kFull, i, off);
    arg_better(v, i, v2, i2);
  }
}

// Exclusive prefix sum over threads (thread order); *total gets the sum of all.
__device__ unsigned long long block_excl_scan(unsigned long long v, unsigned long long* total, Shared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  unsigned long long x = v;
  for (int off = 1; off < 32; off <<= 1) {
    const unsigned long long y = __shfl_up_sync(kFull, x, off);
    if (lane >= off) x += y;
  }
  if (lane == 31) sh.ru[warp] = x;
  __syncthreads();
  unsigned long long w = sh.ru[lane];
  for (int off = 1; off < 32; off <<= 1) {
    const unsigned long long y = __shfl_up_sync(kFull, w, off);
    if (lane >= off) w += y;
  }
  *total = __shfl_sync(kFull, w, 31);
  const unsigned long long warp_excl = __shfl_sync(kFull, w, warp) - sh.ru[warp];
  return warp_excl + x - v;
}

// smp::find_digit_serial with one warp (every warp computes it, so no broadcast is needed):
// lane l owns bins 8l..8l+7, a suffix scan over lanes finds the lane where the running
// measure (from the top digit down) reaches target.
template <typename T>
__device__ bool find_digit(const T* hist, T base, T target, int* digit, T* new_base) {
  const int lane = threadIdx.x & 31;
  T local = 0;
#pragma unroll
  for (int b = 0; b < 8; ++b) local += hist[8 * lane + b];
  T s = local;  // sum over lanes >= lane
  for (int off = 1; off < 32; off <<= 1) {
    const T u = __shfl_down_sync(kFull, s, off);
    if (lane + off < 32) s += u;
  }
  const T above = s - local;
  int d = -1;
  T nb = 0;
  if (base + above < target && target <= base + s) {
    T acc = base + above;
    for (int b = 7; b >= 0; --b) {
      const T h = hist[8 * lane + b];
      if (acc + h >= target) {
        d = 8 * lane + b;
        nb = acc;
        break;
      }
      acc += h;
    }
  }
  const unsigned m = __ballot_sync(kFull, d >= 0);
  if (m == 0) return false;
  const int src = __ffs(m) - 1;
  *digit = __shfl_sync(kFull, d, src);
  *new_base = __shfl_sync(kFull, nb, src);
  return true;
}

// Warp-aggregated histogram add: lanes with the same digit (dig < 0: nothing) add once.
// Masses are summed in three 21-bit parts (each part's warp sum fits in 32 bits).
__device__ __forceinline__ void hist_add(Shared& sh, int dig, unsigned long long mass, bool with_mass) {
  const int lane = threadIdx.x & 31;
  const unsigned grp = __match_any_sync(kFull, dig);
  const unsigned c = __popc(grp);
  unsigned long long m = 0;
  if (with_mass) {
    const unsigned p0 = __reduce_add_sync(grp, static_cast<unsigned>(mass & 0x1fffff));
    const unsigned p1 = __reduce_add_sync(grp, static_cast<unsigned>((mass >> 21) & 0x1fffff));
    const unsigned p2 = __reduce_add_sync(grp, static_cast<unsigned>(mass >> 42));
    m = static_cast<unsigned long long>(p0) + (static_cast<unsigned long long>(p1) << 21) +
        (static_cast<unsigned long long>(p2) << 42);
  }
  if (dig >= 0 && lane == __ffs(grp) - 1) {
    atomicAdd(&sh.hist32[dig], c);
    if (with_mass) atomicAdd(&sh.hist64[dig], m);
  }
}

// Id of the n-th (1-based, ascending id) element with key == T that passes pred. Each thread
// counts a contiguous id range, a block scan finds the range holding it, that thread walks it.
// Only used when ties straddle a top-k / top-p boundary (rare: one pass plus a short walk).
template <typename Pred>
__device__ int nth_equal_id(const float* x, int vocab, uint32_t T, unsigned n, Pred pred, Shared& sh) {
  const int seg = (vocab + kThreads - 1) / kThreads;
  const int lo = min(vocab, static_cast<int>(threadIdx.x) * seg), hi = min(vocab, lo + seg);
  unsigned cnt = 0;
  for (int i = lo; i < hi; ++i) {
    const uint32_t key = smp::float_key(x[i]);
    cnt += key == T && pred(i, key);
  }
  unsigned long long total;
  const unsigned long long before = block_excl_scan(cnt, &total, sh);
  if (before < n && n <= before + cnt) {
    unsigned long long c = before;
    for (int i = lo; i < hi; ++i) {
      const uint32_t key = smp::float_key(x[i]);
      if (key == T && pred(i, key) && ++c == n) {
        sh.result = i;
        break;
      }
    }
  }
  __syncthreads();
  return sh.result;
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(float* __restrict__ logits, int vocab, const SampleParams* __restrict__ params,
                  const int32_t* __restrict__ penalty_tokens, const int32_t* __restrict__ penalty_counts,
                  const uint32_t* __restrict__ masks, int32_t* __restrict__ tokens) {
  __shared__ Shared sh;
  const int tid = threadIdx.x, lane = tid & 31;
  const int64_t row = blockIdx.x;
  float* x = logits + row * vocab;  // [vocab]: logits, then x = logit / temperature
  const SampleParams P = params[row];

  // Penalties (the row's tokens are distinct: no two threads write the same logit).
  if (P.frequency_penalty != 0.0f || P.presence_penalty != 0.0f) {
    for (int k = tid; k < P.penalty_count; k += kThreads) {
      const int tok = penalty_tokens[P.penalty_offset + k];
      const float cnt = static_cast<float>(penalty_counts[P.penalty_offset + k]);
      if (tok >= 0 && tok < vocab) {
        x[tok] = __fsub_rn(x[tok], __fadd_rn(__fmul_rn(P.frequency_penalty, cnt), P.presence_penalty));
      }
    }
  }
  // A grammar's mask: tokens it does not allow get -inf (no mass, never the maximum). After the
  // penalties have landed: their read-modify-writes (other threads) must not undo a -inf.
  __syncthreads();
  if (masks != nullptr && P.mask_offset >= 0) {
    const uint32_t* m = masks + P.mask_offset;
    for (int i = tid; i < vocab; i += kThreads) {
      if (!((m[i >> 5] >> (i & 31)) & 1u)) x[i] = -INFINITY;
    }
  }
  __syncthreads();

  if (P.temperature <= 0.0f) {  // greedy: first maximum
    float bv = -INFINITY;
    int bi = INT_MAX;
    for (int i = tid; i < vocab; i += kThreads) arg_better(bv, bi, x[i], i);
    block_argmax(bv, bi, sh);
    if (tid == 0) tokens[row] = bi == INT_MAX ? 0 : bi;
    return;
  }

  // x = l * (1 / t) in place; its maximum (and first argmax, the fallback token).
  const float inv_t = 1.0f / P.temperature;
  float mx = -INFINITY;
  int imax = INT_MAX;
  for (int i = tid; i < vocab; i += kThreads) {
    const float v = __fmul_rn(x[i], inv_t);
    x[i] = v;
    arg_better(mx, imax, v, i);
  }
  block_argmax(mx, imax, sh);
  if (imax == INT_MAX) imax = 0;

  // --- top-k: the k-th largest key Tk; ties at Tk kept up to id idk ---
  const bool use_k = P.top_k > 0 && P.top_k < vocab;
  uint32_t Tk = 0;
  int idk = INT_MAX;
  if (use_k) {
    uint32_t prefix = 0;
    unsigned base = 0, eq = 0;
    for (int level = 0; level < 4; ++level) {
      const int shift = 24 - 8 * level;
      const uint32_t hmask = level == 0 ? 0u : (0xffffffffu << (shift + 8));
      __syncthreads();  // the previous level's readers of hist32
      if (tid < 256) sh.hist32[tid] = 0;
      __syncthreads();
      for (int i0 = 0; i0 < vocab; i0 += kThreads) {  // uniform trip count: whole warps
        const int i = i0 + tid;
        int dig = -1;
        if (i < vocab) {
          const uint32_t key = smp::float_key(x[i]);
          if ((key & hmask) == prefix) dig = static_cast<int>((key >> shift) & 255u);
        }
        hist_add(sh, dig, 0, false);
      }
      __syncthreads();
      int d = 0;
      unsigned nb = 0;
      find_digit<unsigned>(sh.hist32, base, static_cast<unsigned>(P.top_k), &d, &nb);  // count >= k: found
      prefix |= static_cast<uint32_t>(d) << shift;
      base = nb;
      eq = sh.hist32[d];
    }
    Tk = prefix;
    const unsigned need = static_cast<unsigned>(P.top_k) - base;  // 1..eq of the ties at Tk
    if (need < eq) idk = nth_equal_id(x, vocab, Tk, need, [](int, uint32_t) { return true; }, sh);
  }
  auto in_k = [&](int i, uint32_t key) { return !use_k || key > Tk || (key == Tk && i <= idk); };

  // --- softmax over the top-k set: sum of exp(x - mx) in double ---
  double part = 0.0;
  for (int i = tid; i < vocab; i += kThreads) {
    const float v = x[i];
    if (in_k(i, smp::float_key(v))) part += static_cast<double>(expf(v - mx));
  }
  const double sum = block_sum(part, sh);

  // --- top-p: the key Tp where the descending mass first reaches top_p; ties up to id idp ---
  bool use_p = P.top_p < 1.0f;
  uint32_t Tp = 0;
  int idp = INT_MAX;
  if (use_p) {
    const unsigned long long target = smp::fixed_target(P.top_p);
    uint32_t prefix = 0;
    unsigned long long base = 0;
    unsigned eq = 0;
    for (int level = 0; level < 4 && use_p; ++level) {
      const int shift = 24 - 8 * level;
      const uint32_t hmask = level == 0 ? 0u : (0xffffffffu << (shift + 8));
      __syncthreads();
      if (tid < 256) {
        sh.hist32[tid] = 0;
        sh.hist64[tid] = 0;
      }
      __syncthreads();
      for (int i0 = 0; i0 < vocab; i0 += kThreads) {
        const int i = i0 + tid;
        int dig = -1;
        unsigned long long q = 0;
        if (i < vocab) {
          const float v = x[i];
          const uint32_t key = smp::float_key(v);
          if ((key & hmask) == prefix && in_k(i, key)) {
            dig = static_cast<int>((key >> shift) & 255u);
            q = smp::to_fixed(smp::prob(v, mx, sum));
          }
        }
        hist_add(sh, dig, q, true);
      }
      __syncthreads();
      int d = 0;
      unsigned long long nb = 0;
      if (!find_digit<unsigned long long>(sh.hist64, base, target, &d, &nb)) {
        use_p = false;  // the whole kept mass is below top_p (rounding): the CPU keeps everything
      } else {
        prefix |= static_cast<uint32_t>(d) << shift;
        base = nb;
        eq = sh.hist32[d];
      }
    }
    if (use_p) {
      Tp = prefix;
      // All ties at Tp have the same probability qT: the CPU stops at the first whose running
      // mass reaches top_p.
      const unsigned long long qT = smp::to_fixed(smp::prob(smp::key_float(Tp), mx, sum));
      const unsigned long long need = (target - base + qT - 1) / qT;
      if (need < eq) idp = nth_equal_id(x, vocab, Tp, static_cast<unsigned>(need), in_k, sh);
    }
  }

  // --- min-p and the draw ---
  const bool use_min = P.min_p > 0.0f;
  const float pmax = static_cast<float>(1.0 / sum);  // probability of the maximum: exp(0) / sum
  const float floor_p = P.min_p * pmax;
  auto kept_mass = [&](int i) -> unsigned long long {
    const float v = x[i];
    const uint32_t key = smp::float_key(v);
    if (!in_k(i, key)) return 0;
    if (use_p && !(key > Tp || (key == Tp && i <= idp))) return 0;
    const float p = smp::prob(v, mx, sum);
    if (use_min && p < floor_p) return 0;
    return smp::to_fixed(p);
  };
  // Thread j sums its contiguous id range; the range holding r = uniform * total is walked by warp 0.
  const int seg = (vocab + kThreads - 1) / kThreads;
  const int lo = min(vocab, tid * seg), hi = min(vocab, lo + seg);
  unsigned long long mine = 0;
  for (int i = lo; i < hi; ++i) mine += kept_mass(i);
  unsigned long long total;
  const unsigned long long before = block_excl_scan(mine, &total, sh);
  if (total == 0) {  // nothing kept (min_p > 1): the maximum
    if (tid == 0) tokens[row] = imax;
    return;
  }
  unsigned long long r = static_cast<unsigned long long>(P.uniform * static_cast<double>(total));
  if (r >= total) r = total - 1;
  if (before <= r && r < before + mine) {  // exactly one thread (its mine > 0)
    sh.result = tid;
    sh.win_before = before;
  }
  __syncthreads();
  if (tid < 32) {
    const int w = sh.result;
    const int wlo = min(vocab, w * seg), whi = min(vocab, wlo + seg);
    unsigned long long acc = sh.win_before;
    for (int i0 = wlo; i0 < whi; i0 += 32) {  // uniform in the warp
      const int i = i0 + lane;
      unsigned long long c = i < whi ? kept_mass(i) : 0;
      for (int off = 1; off < 32; off <<= 1) {
        const unsigned long long y = __shfl_up_sync(kFull, c, off);
        if (lane >= off) c += y;
      }
      // The CPU's walk: r -= p; stop at the first token where r < 0, i.e. running mass > r.
      const unsigned hit = __ballot_sync(kFull, acc + c > r);
      if (hit != 0) {
        if (lane == __ffs(hit) - 1) tokens[row] = i;
        break;
      }
      acc += __shfl_sync(kFull, c, 31);
    }
  }
}

}  // namespace

size_t sample_workspace_bytes(int64_t, int64_t) { return 0; }

void launch_sample(float* logits, int64_t rows, int64_t vocab, const SampleParams* params,
                   const int32_t* penalty_tokens, const int32_t* penalty_counts, const uint32_t* masks, int32_t* tokens,
                   Workspace, cudaStream_t stream) {
  if (rows <= 0 || vocab <= 0) return;
  sample_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, static_cast<int>(vocab), params,
                                                                       penalty_tokens, penalty_counts, masks, tokens);
}

}  // namespace platform::cuda
