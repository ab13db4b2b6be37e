// The interface between the LLM engine and a device: the operations of one forward step,
// implemented once per device (CpuBackend in cpu/llm_backend.cc, the CUDA backend in
// cuda/llm/llm_backend.cu). Model::forward (llm/model.cc) runs the layers by calling these, so the
// model code is the same on every device.
//
// Everything the two sides exchange is declared here as plain data (the model's shape, its
// weights, a step's token layout, sampling settings, the KV cache's layout), so that a backend
// never includes the engine: the engine includes this file, not the other way round.
//
// Activations are float buffers in the backend's memory (host memory for the CPU, device memory
// for CUDA) handed out by buffer(); the model code only passes the pointers along and never reads
// them. Weights likewise: bind() turns the host view of the model (pointers into the mapped
// GGUF) into the backend's own (the CPU keeps the mapping; CUDA uploads every tensor once).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "../ggml/weight_matrix.h"

namespace platform::llm {

using ggml::WeightMatrix;

struct ModelConfig {
  std::string architecture;  // "llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3" or "phi3"
  int64_t dim = 0;           // embedding length
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // < n_heads: grouped-query attention
  int64_t head_dim = 0;
  int64_t ffn_dim = 0;
  int64_t vocab = 0;
  int64_t train_context = 0;  // {arch}.context_length
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  int64_t rope_dim = 0;     // leading dimensions of each head that RoPE rotates
  bool rope_neox = false;   // qwen2: pairs (x[i], x[i + d/2]); llama: (x[2i], x[2i+1])
  bool tied_output = false;  // no output.weight: logits use token_embd
  bool has_qkv_bias = false;
  // The architecture's switches (llama.cpp's hparams); the defaults are llama's.
  float attn_scale = 0.0f;        // multiplies q . k: 1/sqrt(head_dim), or gemma 27B's 1/sqrt(dim/heads)
  float attn_softcap = 0.0f;      // > 0: scores = cap * tanh(scores / cap) before the softmax (gemma2)
  float final_softcap = 0.0f;     // > 0: logits = cap * tanh(logits / cap) (gemma2; gemma3 when set)
  float embed_scale = 1.0f;       // token embeddings times this (gemma: sqrt(dim))
  float rope_attn_factor = 1.0f;  // RoPE's cos and sin times this (LongRoPE's attention factor, phi3)
  enum class FfnActivation { kSilu, kGeluTanh };
  FfnActivation ffn_activation = FfnActivation::kSilu;  // h = act(gate) * up; gemma: GELU, tanh form
  bool has_qk_norm = false;     // per-head RMSNorm of q and k before RoPE (qwen3, gemma3)
  bool has_post_norms = false;  // x += norm(f(norm(x))) around attention and FFN (gemma2, gemma3)
  bool has_sliding_window = false;  // some layers attend to their last `window` positions only
  // Mixture of experts (qwen3moe, Mixtral-style llama): every layer's FFN is n_experts experts
  // of expert_ffn_dim, each token routed to n_experts_used of them (softmax over the router's
  // logits, top k, the k weights renormalized to sum 1, as llama.cpp does for both). 0: dense.
  int64_t n_experts = 0;
  int64_t n_experts_used = 0;
  int64_t expert_ffn_dim = 0;
  int32_t bos_token = -1;
  std::vector<int32_t> eos_tokens;  // eos and eot ids

  bool is_moe() const { return n_experts > 0; }

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// One layer's weights. Vectors are f32 [dim] (norms) or [q_dim] / [kv_dim] (biases), null when
// the architecture has none. Fused tensors (phi3's attn_qkv, its gate-and-up ffn_up) are row
// views into the one mapped matrix.
struct LayerWeights {
  const float* attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr;  // [head_dim], applied to every head
  const float *attn_post_norm = nullptr, *ffn_post_norm = nullptr;  // [dim] post_attention_norm, post_ffw_norm
  const float* inv_freq = nullptr;  // [rope_dim / 2] this layer's RoPE frequencies
  int64_t window = 0;               // > 0: a token at p attends to positions p - window + 1 .. p
  WeightMatrix wq, wk, wv, wo;     // [q_dim, dim] [kv_dim, dim] [kv_dim, dim] [dim, q_dim]
  WeightMatrix w_gate, w_up, w_down;  // [ffn, dim] [ffn, dim] [dim, ffn] (empty in a MoE layer)
  // A MoE layer's router and experts (config.is_moe()): the router [n_experts, dim]; each 3-D
  // GGUF tensor as one matrix of every expert's rows in turn, expert e's rows starting at
  // e * ff_exp (gate, up: [n_experts * ff_exp, dim]) or e * dim (down: [n_experts * dim, ff_exp]).
  WeightMatrix moe_router, moe_gate, moe_up, moe_down;
};

struct ModelWeights {
  WeightMatrix tok_embd, output;       // [vocab, dim] (output may be tok_embd: tied)
  const float* output_norm = nullptr;  // [dim]
  const float* inv_freq = nullptr;     // [rope_dim / 2] RoPE frequencies of the global layers
  std::vector<LayerWeights> layers;
};

// A step's tokens, flattened over its sequences: token t is tokens[t] of sequence seq_of[t] at
// position pos[t]; blocks[s] is sequence s's block table. logit_rows lists the tokens whose
// logits the step returns, in order.
struct StepLayout {
  std::vector<int32_t> tokens, pos, seq_of;         // [n]
  std::vector<const std::vector<int32_t>*> blocks;  // [n_seqs]
  std::vector<int32_t> logit_rows;                  // [n_logits]

  int64_t n() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_logits() const { return static_cast<int64_t>(logit_rows.size()); }
};

// One sequence's sampling settings (llm/sampler.h applies them on the host; a device backend
// applies the same ones in the same order).
struct SamplingParams {
  float temperature = 0.0f;  // <= 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  bool has_seed = false;
  uint64_t seed = 0;
};

// A sequence that samples its next token from logits row `row` (backends that sample on their
// device). uniform is the sequence's own random draw (unused when greedy); counts are the
// sequence's generated tokens, for the penalties.
struct SampleRequest {
  int64_t row = 0;
  SamplingParams params;
  double uniform = 0.0;
  const std::unordered_map<int32_t, int32_t>* counts = nullptr;
  const uint32_t* mask = nullptr;  // a grammar's allowed tokens (bit t of word t >> 5), or null
};

// The KV cache's shape: n_blocks blocks of block_size positions; a block holds K and V of every
// layer, [block_size][kv_dim] each, element (layer, block, K or V, slot) at
//   (((layer * n_blocks + block) * 2 + kind) * block_size + slot) * kv_dim.
// The engine sizes it and keeps the block tables (llm/kv_cache.h); the backend stores it.
struct KvCacheLayout {
  int64_t n_layers = 0, kv_dim = 0, block_size = 0, n_blocks = 0;

  // Bytes of one block, and of the whole cache, at `element_bytes` per stored value.
  int64_t block_bytes(int64_t element_bytes) const { return n_layers * 2 * block_size * kv_dim * element_bytes; }
  int64_t bytes(int64_t element_bytes) const { return n_blocks * block_bytes(element_bytes); }
};

class Backend {
 public:
  enum Buffer { kX, kXb, kQ, kK, kV, kAtt, kHb, kLogits, kBufferCount };

  virtual ~Backend() = default;
  virtual std::string name() const = 0;      // "cpu", "cuda"
  virtual std::string describe() const = 0;  // kernels / device, for engine info

  // Takes the model's weights (host view) for this backend; called once, before any step.
  virtual void bind(const ModelConfig& config, const ModelWeights& host) = 0;
  virtual const ModelWeights& weights() const = 0;
  // Bytes of one K or V element in the cache (the engine's budget is in bytes), and the cache's
  // storage: all its blocks, allocated once, in the backend's memory.
  virtual int64_t kv_element_bytes() const = 0;
  virtual void allocate_kv(const KvCacheLayout& layout) = 0;
  // Bytes of weights (on the device) and step buffers this backend holds.
  virtual int64_t weight_bytes() const = 0;
  virtual int64_t scratch_bytes() const = 0;

  // --- one step: begin_step, the ops in layer order, then logits or sampling ---
  virtual void begin_step(const StepLayout& step) = 0;
  virtual float* buffer(Buffer b) = 0;  // sized for the step: kX/kXb [n][dim], kQ/kAtt [n][q_dim],
                                        // kK/kV [n][kv_dim], kHb [n][ffn], kLogits [n_logits][vocab]
  virtual void embed(float* x) = 0;     // x[n][dim] = token embeddings
  // out[i] = rmsnorm(x[i]) * w for the step's n tokens, or only its logit rows (out [n_logits][dim]).
  virtual void rmsnorm(float* out, const float* x, const float* w, bool logit_rows_only) = 0;
  virtual void matmul_qkv(const LayerWeights& l, const float* x, float* q, float* k, float* v) = 0;
  // Biases, RoPE on q and k, and k, v written into the layer's KV slots of every token.
  virtual void qkv_finish(int64_t layer, const LayerWeights& l, float* q, float* k, float* v) = 0;
  virtual void attention(int64_t layer, const float* q, float* att) = 0;  // att[n][q_dim]
  // y[t] += W x[t] for t < rows (the residual connection fused with the projection).
  virtual void matmul_add(const WeightMatrix& w, const float* x, int64_t rows, float* y) = 0;
  // y[t] += rmsnorm(W x[t]) * norm: a post-norm before the residual add (gemma). Backends
  // without it reject such models in bind().
  virtual void matmul_norm_add(const WeightMatrix& w, const float* x, int64_t rows, const float* norm, float* y) {
    (void)w, (void)x, (void)rows, (void)norm, (void)y;
    throw std::logic_error("this backend has no post-norms");
  }
  // h[t] = act(W_gate x[t]) * (W_up x[t]), act = config.ffn_activation
  virtual void gate_up(const LayerWeights& l, const float* x, float* h) = 0;
  // Mixture-of-experts FFN (config.is_moe()), x [n][dim] the normed input, y [n][dim] the residual:
  //   y[t] += sum over the k experts e token t chooses of w_e * down_e(silu(gate_e x[t]) * up_e x[t])
  // with the routing of ModelConfig::n_experts_used. Backends without it reject MoE models in bind().
  virtual void moe_ffn(const LayerWeights& l, const float* x, float* y) {
    (void)l, (void)x, (void)y;
    throw std::logic_error("this backend has no mixture-of-experts FFN");
  }
  // logits[n_logits][vocab] = xn W_output^T (then final_softcap, where set)
  virtual void output(const float* xn, float* logits) = 0;
  // After the step: the logits rows in host memory (a copy for a device).
  virtual const float* host_logits() = 0;
  // After the step: the logits rows' hidden states after the output norm ([n_logits][dim], the
  // rows kXb holds then), in host memory: an embedding request's last-token pooling reads them.
  virtual const float* host_hidden() = 0;
  // Waits for queued work (device backends); the stage profiler calls it between stages.
  virtual void synchronize() {}

  // Device-side sampling: tokens[i] for requests[i], only token ids coming back.
  virtual bool samples_on_device() const { return false; }
  virtual void sample(const std::vector<SampleRequest>& requests, std::vector<int32_t>& tokens) {
    (void)requests, (void)tokens;
    throw std::logic_error("this backend samples on the host");
  }
};

}  // namespace platform::llm
