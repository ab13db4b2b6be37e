// The KV budget and the block pool with prefix caching; see kv_cache.h.
#include "kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace platform::llm {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t block_hash(uint64_t parent, const int32_t* tokens, int64_t n, uint64_t salt) {
  uint64_t h = mix(parent ^ mix(salt));
  for (int64_t i = 0; i < n; ++i) h = mix(h ^ static_cast<uint32_t>(tokens[i]));
  return h;
}

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

KvCache::KvCache(int64_t block_size, int64_t n_blocks, bool prefix_caching)
    : block_size_(block_size), n_blocks_(n_blocks), prefix_caching_(prefix_caching), entries_(static_cast<size_t>(n_blocks)) {
  free_.reserve(static_cast<size_t>(n_blocks));
  // Hand out low ids first (pop_back), so a lightly used cache touches few pages.
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

std::vector<uint64_t> block_hashes(const std::vector<int32_t>& tokens, int64_t block_size, uint64_t salt) {
  std::vector<uint64_t> out;
  uint64_t parent = 0;
  for (int64_t i = 0; (i + 1) * block_size <= static_cast<int64_t>(tokens.size()); ++i) {
    parent = block_hash(parent, tokens.data() + i * block_size, block_size, salt);
    out.push_back(parent);
  }
  return out;
}

void KvCache::match(const std::vector<int32_t>& tokens, const std::vector<uint64_t>& hashes, const std::string& salt_text, int64_t max_blocks,
                    std::vector<int32_t>& blocks) const {
  blocks.clear();
  if (!prefix_caching_) return;
  const int64_t n = std::min<int64_t>(max_blocks, static_cast<int64_t>(hashes.size()));
  uint64_t parent = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t* t = tokens.data() + i * block_size_;
    const uint64_t h = hashes[i];
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    const Entry& e = entries_[it->second];
    if (e.salt != salt_text || e.parent != parent || !std::equal(e.tokens.begin(), e.tokens.end(), t)) break;
    blocks.push_back(it->second);
    parent = h;
  }
}

int64_t KvCache::unpinned(const std::vector<int32_t>& blocks) const {
  int64_t n = 0;
  for (int32_t b : blocks) n += entries_[b].refs == 0;
  return n;
}

void KvCache::take(const std::vector<int32_t>& blocks) {
  for (int32_t b : blocks) {
    Entry& e = entries_[b];
    if (e.refs++ == 0) {
      lru_.erase(e.lru);
      cached_.fetch_sub(1, std::memory_order_relaxed);
      pinned_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void KvCache::unpublish(int32_t block) {
  Entry& e = entries_[block];
  if (!e.published) return;
  auto it = by_hash_.find(e.hash);
  if (it != by_hash_.end() && it->second == block) by_hash_.erase(it);
  e.published = false;
  e.tokens.clear();
  e.salt.clear();
}

int32_t KvCache::allocate() {
  int32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {  // evict the least recently used cached prefix block
    b = lru_.front();
    lru_.pop_front();
    cached_.fetch_sub(1, std::memory_order_relaxed);
    unpublish(b);
  } else {
    throw std::runtime_error("KV cache exhausted");
  }
  entries_[b].refs = 1;
  pinned_.fetch_add(1, std::memory_order_relaxed);
  return b;
}

void KvCache::publish(int32_t block, uint64_t hash, uint64_t parent, const int32_t* tokens, const std::string& salt_text) {
  if (!prefix_caching_ || by_hash_.count(hash) > 0) return;
  Entry& e = entries_[block];
  e.hash = hash;
  e.parent = parent;
  e.salt = salt_text;
  e.tokens.assign(tokens, tokens + block_size_);
  e.published = true;
  by_hash_.emplace(hash, block);
}

void KvCache::release(const std::vector<int32_t>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {  // the last block first into the LRU
    const int32_t b = *it;
    Entry& e = entries_[b];
    if (--e.refs > 0) continue;
    pinned_.fetch_sub(1, std::memory_order_relaxed);
    if (e.published) {
      e.lru = lru_.insert(lru_.end(), b);
      cached_.fetch_add(1, std::memory_order_relaxed);
    } else {
      free_.push_back(b);
    }
  }
}

}  // namespace platform::llm
