// The LLM forward-pass operations on the CPU (backends/llm_backend.h): quantized matmuls from
// matmul.h on the shared thread pool, the KV cache in host memory as f32 (owned here, allocated
// uninitialised: untouched pages cost nothing until a block is first used); the engine samples on
// the host.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../core/cpu_features.h"
#include "../llm_backend.h"
#include "matmul.h"

namespace platform::cpu {

using llm::Backend;
using llm::KvCacheLayout;
using llm::LayerWeights;
using llm::ModelConfig;
using llm::ModelWeights;
using llm::StepLayout;

class CpuBackend final : public Backend {
 public:
  CpuBackend(int threads, SimdLevel level);

  std::string name() const override { return "cpu"; }
  std::string describe() const override;
  void bind(const ModelConfig& config, const ModelWeights& host) override;
  const ModelWeights& weights() const override { return w_; }
  int64_t kv_element_bytes() const override { return sizeof(float); }
  void allocate_kv(const KvCacheLayout& layout) override;
  int64_t weight_bytes() const override { return 0; }  // the mapped file's pages
  int64_t scratch_bytes() const override;

  void begin_step(const StepLayout& step) override;
  float* buffer(Buffer b) override { return buf_[b].data(); }
  void embed(float* x) override;
  void rmsnorm(float* out, const float* x, const float* w, bool logit_rows_only) override;
  void matmul_qkv(const LayerWeights& l, const float* x, float* q, float* k, float* v) override;
  void qkv_finish(int64_t layer, const LayerWeights& l, float* q, float* k, float* v) override;
  void attention(int64_t layer, const float* q, float* att) override;
  void matmul_add(const WeightMatrix& w, const float* x, int64_t rows, float* y) override;
  void matmul_norm_add(const WeightMatrix& w, const float* x, int64_t rows, const float* norm, float* y) override;
  void gate_up(const LayerWeights& l, const float* x, float* h) override;
  void moe_ffn(const LayerWeights& l, const float* x, float* y) override;
  void output(const float* xn, float* logits) override;
  const float* host_logits() override { return buf_[kLogits].data(); }
  const float* host_hidden() override { return buf_[kXb].data(); }

  int threads() const { return mm_.threads; }
  SimdLevel simd_level() const { return mm_.level; }

 private:
  // K or V of `slot` in `block` of `layer`: [kv_dim] f32.
  float* kv_k(int64_t layer, int32_t block, int64_t slot) {
    return kv_.get() + ((layer * kv_layout_.n_blocks + block) * 2 * kv_layout_.block_size + slot) * kv_layout_.kv_dim;
  }
  float* kv_v(int64_t layer, int32_t block, int64_t slot) {
    return kv_.get() + (((layer * kv_layout_.n_blocks + block) * 2 + 1) * kv_layout_.block_size + slot) * kv_layout_.kv_dim;
  }

  MatmulContext mm_;
  ModelConfig cfg_;
  ModelWeights w_;
  KvCacheLayout kv_layout_;
  std::unique_ptr<float[]> kv_;
  const StepLayout* step_ = nullptr;
  std::vector<float> buf_[kBufferCount];
  std::vector<float> tmp_, up_;              // [n][dim] projection output; [n][ffn] up half
  // RoPE angles of the step, one table per distinct frequency table of the layers (gemma3: local
  // and global): rope_cos_[j] / rope_sin_[j] [n][rope_dim / 2] for the frequencies rope_freqs_[j].
  std::vector<const float*> rope_freqs_;
  std::vector<std::vector<float>> rope_cos_, rope_sin_;
  size_t rope_table(const float* inv_freq) const;

  // Mixture-of-experts scratch (moe_ffn: the routing, then each chosen expert over its tokens):
  // router logits [n][n_experts]; each token's k experts and weights [n][k]; per expert its
  // tokens' slots t * k + rank, bucketed (moe_first_ [n_experts + 1] offsets into moe_slots_
  // [n * k]); the gathered rows [n][dim], their gate and up [max(n, k)][ff_exp], and every slot's
  // expert output [n * k][dim] (summed per token in rank order, so a token's sum is the same
  // whatever else the step holds).
  std::vector<float> moe_logits_, moe_weight_, moe_x_, moe_h_, moe_u_, moe_out_;
  std::vector<int32_t> moe_expert_, moe_first_, moe_slots_;
  std::vector<WeightMatrix> moe_views_;
};

}  // namespace platform::cpu
