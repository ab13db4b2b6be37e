// The KV budget and the block pool; see kv_cache.h.
#include "kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace platform::llm {

int64_t kv_budget_blocks(const EngineOptions& options, int64_t context, int64_t block_bytes) {
  const int64_t blocks_per_context = (context + options.block_size - 1) / options.block_size;
  int64_t n_blocks;
  if (options.kv_cache_bytes > 0) {
    n_blocks = options.kv_cache_bytes / block_bytes;
  } else {
    n_blocks = std::min<int64_t>(blocks_per_context * options.max_running, kDefaultKvBudgetBytes / block_bytes);
    n_blocks = std::max<int64_t>(n_blocks, std::min<int64_t>(blocks_per_context, kOneContextKvFloorBytes / block_bytes));
  }
  if (n_blocks < 1) {
    throw std::invalid_argument("kvCacheBytes is smaller than one KV block (" + std::to_string(block_bytes) + " bytes)");
  }
  return std::min<int64_t>(n_blocks, (int64_t{1} << 31) - 1);
}

KvCache::KvCache(int64_t block_size, int64_t n_blocks) : block_size_(block_size), n_blocks_(n_blocks) {
  free_.reserve(static_cast<size_t>(n_blocks));
  // Hand out low ids first (pop_back), so a lightly used cache touches few pages.
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

int32_t KvCache::allocate() {
  if (free_.empty()) throw std::runtime_error("KV cache exhausted");
  const int32_t b = free_.back();
  free_.pop_back();
  used_.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void KvCache::release(const std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) free_.push_back(b);
  used_.fetch_sub(static_cast<int64_t>(blocks.size()), std::memory_order_relaxed);
}

}  // namespace platform::llm
