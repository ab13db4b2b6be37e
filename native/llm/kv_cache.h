// The KV cache's budget and its block pool. The cache is a fixed number of blocks of `block_size`
// positions, shared by all sequences of a model. A sequence owns a block table (block ids in
// position order); position p lives in block table[p / block_size], slot p % block_size. Blocks
// come from a free list and go back to it as soon as a sequence finishes or is cancelled.
//
// This is only the bookkeeping: the storage (K and V of every layer per block, laid out as
// KvCacheLayout says) belongs to the backend, in its own memory and element type (the CPU: f32 in
// host memory; CUDA: f16 on the device).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "engine_options.h"

namespace platform::llm {

// Without EngineOptions::kv_cache_bytes the cache gets room for max_running full contexts, at
// most kDefaultKvBudgetBytes; but never less than one full context, up to kOneContextKvFloorBytes,
// so that a model with a long context can still serve one sequence at full length.
constexpr int64_t kDefaultKvBudgetBytes = int64_t{1} << 30;    // 1 GiB
constexpr int64_t kOneContextKvFloorBytes = int64_t{4} << 30;  // 4 GiB

// The number of blocks of `block_bytes` each (KvCacheLayout::block_bytes) the cache gets for
// sequences of `context` positions: kv_cache_bytes / block_bytes when the options set it, else
// the default above; at most 2^31 - 1. Throws std::invalid_argument when that is not one block.
int64_t kv_budget_blocks(const EngineOptions& options, int64_t context, int64_t block_bytes);

class KvCache {
 public:
  KvCache(int64_t block_size, int64_t n_blocks);

  int64_t block_size() const { return block_size_; }
  int64_t total_blocks() const { return n_blocks_; }
  int64_t used_blocks() const { return used_.load(std::memory_order_relaxed); }

  // Throws std::runtime_error when no block is free (the scheduler's reservations prevent it).
  int32_t allocate();
  void release(const std::vector<int32_t>& blocks);

 private:
  int64_t block_size_, n_blocks_;
  std::vector<int32_t> free_;  // used only by the engine's thread
  std::atomic<int64_t> used_{0};
};

}  // namespace platform::llm
