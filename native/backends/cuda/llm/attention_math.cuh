// Pure helpers of the attention kernels (host + device so that they can be unit-tested on the CPU).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace platform::cuda::attn {

constexpr int kThreads = 128;       // threads of a split CTA
constexpr int kTile = 64;           // positions per K tile (2 threads per position score it)
constexpr int kMaxSplits = 2048;    // bound on splits per token (combine kernel's shared array)
constexpr int64_t kMinChunk = 256;  // positions per split for decode-sized steps

// Positions per split for a step of n tokens: 256 while the step has at most 2048 (token, split)
// pairs, doubled until it does (prefill steps: fewer, longer splits rather than a grid of mostly
// empty CTAs). Depends only on n and max_context, so the grid is fixed for a captured graph.
__host__ __device__ inline int64_t chunk_len(int64_t n, int64_t max_context) {
  int64_t c = kMinChunk;
  while (c < max_context && n * ((max_context + c - 1) / c) > kMaxSplits) c *= 2;
  return c;
}
__host__ __device__ inline int64_t n_splits(int64_t n, int64_t max_context) {
  const int64_t c = chunk_len(n, max_context);
  const int64_t s = (max_context + c - 1) / c;
  return s < 1 ? 1 : s;
}

// Online-softmax partial of one query head over a set of positions: running max m, sum of
// exp(score - m) l, and acc = sum exp(score - m) * V (not stored here). Merging partials a and b:
// both rescale to max(m_a, m_b). Used by the combine kernel (in an equivalent two-pass form) and
// the host self-check.
struct Partial {
  float m, l;
};
__host__ __device__ inline float merge_weight(float m_part, float m_total) {
  return m_part == -INFINITY ? 0.0f : expf(m_part - m_total);
}

// Shared-memory row stride (halves) of the staged K tile: rows 16-byte aligned, padded so that
// the 2-lanes-per-row 16-byte reads of a quarter warp fall in distinct banks.
__host__ __device__ inline int k_stride(int hd, int vk) {
  if (vk == 8) return hd + (((hd / 2) / 8) % 2 == 0 ? 16 : 0);
  return hd + ((hd / 2) % 2 == 0 ? 2 : 0);
}

// Byte offsets of the split kernel's dynamic shared memory (16-byte aligned pieces):
//   q   [gm][hd] f32      the CTA's query heads
//   p   [kTile][gm] f32   the tile's exp(score - m)
//   red [4 warps][gm] f32 tile-max partials, later the final m per head
//   row [kTile] i64       cache element offset of each tile position's K row
//   k   [kTile][kstride] f16 staged K tile, reused after the loop as
//       acc [pg][gm][hd] f32 + l [pg][gm] f32 for the position-group reduction
struct SmemLayout {
  int q, p, red, row, k, total;
};
__host__ __device__ inline int round16(int x) { return (x + 15) & ~15; }
__host__ __device__ inline SmemLayout smem_layout(int gm, int hd, int vk) {
  const int cols = hd / vk, pg = kThreads / cols;
  SmemLayout s{};
  int o = 0;
  s.q = o;   o = round16(o + gm * hd * 4);
  s.p = o;   o = round16(o + kTile * gm * 4);
  s.red = o; o = round16(o + 4 * gm * 4);
  s.row = o; o = round16(o + kTile * 8);
  s.k = o;
  const int kb = kTile * k_stride(hd, vk) * 2;
  const int ab = pg * gm * hd * 4 + pg * gm * 4;
  o = round16(o + (kb > ab ? kb : ab));
  s.total = o;
  return s;
}

}  // namespace platform::cuda::attn
