#include "kv_cache.h"

#include <stdexcept>

namespace platform::llm {

KvCache::KvCache(int64_t n_layers, int64_t kv_dim, int64_t block_size, int64_t n_blocks,
                 int64_t element_bytes, bool host_storage)
    : n_layers_(n_layers), kv_dim_(kv_dim), block_size_(block_size), n_blocks_(n_blocks), element_bytes_(element_bytes),
      data_(host_storage ? new float[static_cast<size_t>(n_layers * n_blocks * 2 * block_size * kv_dim)] : nullptr) {
  free_.reserve(static_cast<size_t>(n_blocks));
  // Hand out low ids first (pop_back), so a lightly used cache touches few pages.
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

int64_t KvCache::block_bytes(int64_t n_layers, int64_t kv_dim, int64_t block_size, int64_t element_bytes) {
  return n_layers * 2 * block_size * kv_dim * element_bytes;
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
