// The operations of one forward step, implemented once per device: CpuBackend (cpu_backend.cc)
// and the CUDA backend (../cuda/llm_backend.cu). Model::forward (model.cc) runs the layers by
// calling these, so the model code is the same on every device.
//
// Activations are float buffers in the backend's memory (host memory for the CPU, device memory
// for CUDA) handed out by buffer(); the model code only passes the pointers along and never reads
// them. Weights likewise: bind() turns the host view of the model (pointers into the mapped
// GGUF) into the backend's own (the CPU keeps the mapping; CUDA uploads every tensor once).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kv_cache.h"
#include "matmul.h"
#include "sampler.h"

namespace platform::llm {

struct ModelConfig;

// One layer's weights. Vectors are f32 [dim] (norms) or [q_dim] / [kv_dim] (biases, null when
// the architecture has none).
struct LayerWeights {
  const float* attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr;
  WeightMatrix wq, wk, wv, wo;     // [q_dim, dim] [kv_dim, dim] [kv_dim, dim] [dim, q_dim]
  WeightMatrix w_gate, w_up, w_down;  // [ffn, dim] [ffn, dim] [dim, ffn]
};

struct ModelWeights {
  WeightMatrix tok_embd, output;       // [vocab, dim] (output may be tok_embd: tied)
  const float* output_norm = nullptr;  // [dim]
  const float* inv_freq = nullptr;     // [rope_dim / 2] RoPE frequencies
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

// A sequence that samples its next token from logits row `row` (backends that sample on their
// device). uniform is the sequence's own random draw (unused when greedy); counts are the
// sequence's generated tokens, for the penalties.
struct SampleRequest {
  int64_t row = 0;
  SamplingParams params;
  double uniform = 0.0;
  const std::unordered_map<int32_t, int32_t>* counts = nullptr;
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
  // Bytes of one K or V element in the cache, and the cache's storage (all its blocks).
  virtual int64_t kv_element_bytes() const = 0;
  virtual bool kv_in_host_memory() const = 0;
  virtual void bind_kv(KvCache& kv) = 0;
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
  // h[t] = silu(W_gate x[t]) * (W_up x[t])
  virtual void gate_up_silu(const LayerWeights& l, const float* x, float* h) = 0;
  // logits[n_logits][vocab] = xn W_output^T
  virtual void output(const float* xn, float* logits) = 0;
  // After the step: the logits rows in host memory (a copy for a device).
  virtual const float* host_logits() = 0;
  // Waits for queued work (device backends); the stage profiler calls it between stages.
  virtual void synchronize() {}

  // Device-side sampling: tokens[i] for requests[i], only token ids coming back.
  virtual bool samples_on_device() const { return false; }
  virtual void sample(const std::vector<SampleRequest>& requests, std::vector<int32_t>& tokens);
};

struct EngineOptions;
// The backend named by options.backend ("cpu" or "cuda"). Throws std::invalid_argument for an
// unknown name and std::runtime_error when CUDA is not built in or no device can be used.
std::unique_ptr<Backend> make_backend(const EngineOptions& options);

}  // namespace platform::llm
