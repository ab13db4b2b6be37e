// Block-based KV cache: a fixed budget of blocks of `block_size` positions, shared by all
// sequences of a model. A sequence owns a block table (block ids in position order); position p
// lives in block table[p / block_size], slot p % block_size. Blocks come from a free list and go
// back to it as soon as a sequence finishes or is cancelled.
//
// Storage per block and layer: K then V, each [block_size][kv_dim]. On the host (the CPU backend)
// the elements are f32 and the memory is allocated here, uninitialised (untouched pages cost
// nothing until a block is first used); a device backend keeps the same layout in its own memory
// (the CUDA backend: f16) and uses this class only for the block bookkeeping.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace platform::llm {

class KvCache {
 public:
  // element_bytes: size of one stored value; host_storage: allocate f32 storage here.
  KvCache(int64_t n_layers, int64_t kv_dim, int64_t block_size, int64_t n_blocks,
          int64_t element_bytes = sizeof(float), bool host_storage = true);

  // Bytes one block takes (all layers, K and V).
  static int64_t block_bytes(int64_t n_layers, int64_t kv_dim, int64_t block_size,
                             int64_t element_bytes = sizeof(float));

  int64_t block_size() const { return block_size_; }
  int64_t total_blocks() const { return n_blocks_; }
  int64_t used_blocks() const { return used_.load(std::memory_order_relaxed); }
  int64_t n_layers() const { return n_layers_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t bytes() const { return n_blocks_ * block_bytes(n_layers_, kv_dim_, block_size_, element_bytes_); }
  bool has_host_storage() const { return data_ != nullptr; }

  // Throws std::runtime_error when no block is free (the scheduler's reservations prevent it).
  int32_t allocate();
  void release(const std::vector<int32_t>& blocks);

  // Host storage only.
  float* k(int64_t layer, int32_t block, int64_t slot) {
    return data_.get() + ((layer * n_blocks_ + block) * 2 * block_size_ + slot) * kv_dim_;
  }
  float* v(int64_t layer, int32_t block, int64_t slot) {
    return data_.get() + (((layer * n_blocks_ + block) * 2 + 1) * block_size_ + slot) * kv_dim_;
  }

 private:
  int64_t n_layers_, kv_dim_, block_size_, n_blocks_, element_bytes_;
  std::unique_ptr<float[]> data_;
  std::vector<int32_t> free_;  // used only by the scheduler thread
  std::atomic<int64_t> used_{0};
};

}  // namespace platform::llm
