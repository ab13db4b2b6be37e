// The KV cache's budget and its block pool. The cache is a fixed number of blocks of `block_size`
// positions, shared by all sequences of a model. A sequence owns a block table (block ids in
// position order); position p lives in block table[p / block_size], slot p % block_size.
//
// Prefix caching (vLLM's automatic prefix caching): a full block is published under a hash
// chained from its parent block's hash, its token ids and the request's cache salt, so that a
// later sequence whose prompt starts with the same tokens (and salt) takes the cached blocks
// instead of computing them again. Blocks are reference-counted: a block that running sequences
// share is pinned; one that none uses but that holds a published prefix stays cached, and is
// evicted least recently used first when a new block is needed and the free list is empty. A
// match is checked token by token and salt by salt (the salt's text, not its hash), and its
// parent's hash must be the one matched just before: sharing a block across salts is impossible,
// and within a salt would need two different prefixes with equal 64-bit chained hashes.
//
// This is only the bookkeeping: the storage (K and V of every layer per block, laid out as
// KvCacheLayout says) belongs to the backend, in its own memory and element type (the CPU: f32 in
// host memory; CUDA: f16 on the device). Used only by the engine's thread, but for the counts.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
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

// The hash of a full block: chained from its parent's (0 for the first block) with its tokens and
// the salt.
uint64_t block_hash(uint64_t parent, const int32_t* tokens, int64_t n, uint64_t salt);
// The chained hashes of every full block of `tokens`.
std::vector<uint64_t> block_hashes(const std::vector<int32_t>& tokens, int64_t block_size, uint64_t salt);

class KvCache {
 public:
  KvCache(int64_t block_size, int64_t n_blocks, bool prefix_caching);

  int64_t block_size() const { return block_size_; }
  int64_t total_blocks() const { return n_blocks_; }
  bool prefix_caching() const { return prefix_caching_; }
  // Blocks some sequence holds, and blocks that hold a cached prefix nobody holds now.
  int64_t pinned_blocks() const { return pinned_.load(std::memory_order_relaxed); }
  int64_t cached_blocks() const { return cached_.load(std::memory_order_relaxed); }

  // The cached blocks that hold the first full blocks of `tokens` (at most max_blocks), in
  // order, given the tokens' block hashes (block_hashes); nothing is taken.
  void match(const std::vector<int32_t>& tokens, const std::vector<uint64_t>& hashes, const std::string& salt_text, int64_t max_blocks,
             std::vector<int32_t>& blocks) const;
  // Of those, the blocks no sequence holds (taking them pins them: they count against the budget).
  int64_t unpinned(const std::vector<int32_t>& blocks) const;
  // Pins matched blocks for a sequence.
  void take(const std::vector<int32_t>& blocks);
  // A new block, from the free list or else by evicting the least recently used cached block.
  // Throws std::runtime_error when every block is pinned (the scheduler's accounting prevents it).
  int32_t allocate();
  // Publishes a sequence's full block under `hash` (its tokens and salt kept for the checks). A
  // block already cached under that hash keeps the entry; this one stays private.
  void publish(int32_t block, uint64_t hash, uint64_t parent, const int32_t* tokens, const std::string& salt_text);
  // A sequence lets its blocks go: unpinned published blocks stay cached, the last block first in
  // line for eviction (a child is useless without its parent, so it goes before it), others
  // return to the free list.
  void release(const std::vector<int32_t>& blocks);

 private:
  struct Entry {
    uint64_t hash = 0, parent = 0;
    std::string salt;
    std::vector<int32_t> tokens;
    bool published = false;
    int32_t refs = 0;
    std::list<int32_t>::iterator lru;  // valid while cached and unpinned
  };
  void unpublish(int32_t block);

  int64_t block_size_, n_blocks_;
  bool prefix_caching_;
  std::vector<Entry> entries_;                     // [n_blocks]
  std::unordered_map<uint64_t, int32_t> by_hash_;  // published blocks
  std::list<int32_t> lru_;                         // cached, unpinned: least recently used first
  std::vector<int32_t> free_;
  std::atomic<int64_t> pinned_{0}, cached_{0};
};

}  // namespace platform::llm
