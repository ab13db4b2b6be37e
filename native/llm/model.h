// A decoder loaded from a GGUF file (llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3: one forward pass,
// the architectures' differences are switches in ModelConfig and LayerWeights), and its forward
// pass.
//
// The weights stay in the memory-mapped file (only the small norm vectors and biases are
// converted to f32 copies). forward() runs one step for a batch of sequences: every sequence
// contributes a run of consecutive tokens (a prefill chunk, or one token when decoding), all
// tokens go through the matmuls together, and attention reads each sequence's own KV blocks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../backends/llm_backend.h"
#include "../ggml/gguf.h"

namespace platform::llm {

using ggml::GgufFile;

// One sequence's share of a forward step: tokens[0..n) at positions pos0..pos0+n, its block
// table already covering those positions. Logits come back for the last token, or for every
// token when all_logits is set.
struct BatchEntry {
  const int32_t* tokens = nullptr;
  int64_t n_tokens = 0;
  int64_t pos0 = 0;
  const std::vector<int32_t>* blocks = nullptr;
  bool all_logits = false;

  // Rows of the step's logits this entry gets: every token's, or its last token's.
  int64_t logit_rows() const { return all_logits ? n_tokens : 1; }
};

// Wall time per stage of the forward pass, by batch size (env PLATFORM_LLM_PROFILE=1: printed to
// stderr when the model is destroyed). Off, it costs one branch per stage.
class StageProfile {
 public:
  enum Stage { kEmbed, kNorm, kQkv, kRopeKv, kAttention, kWo, kGateUp, kDown, kOutput, kMoe, kCount };
  static constexpr int kClasses = 3;  // 1 token, 2..32 tokens, more

  StageProfile();
  ~StageProfile();
  bool enabled() const { return enabled_; }
  void begin(int64_t n);        // a forward step of n tokens starts
  void mark(Stage s);           // the time since the previous mark goes to s

 private:
  bool enabled_ = false;
  int cls_ = 0;
  int64_t last_ns_ = 0;
  double seconds_[kClasses][kCount] = {};
  int64_t steps_[kClasses] = {}, tokens_[kClasses] = {};
};

class Model {
 public:
  // Maps, validates and wires up the weights. Throws GgufError with a one-line message.
  static std::unique_ptr<Model> load(const std::string& path);

  // Settles what depends on the engine's context per sequence (phi3's LongRoPE: the long
  // factors when it exceeds rope.scaling.original_context_length); call before binding a backend.
  void use_context(int64_t context);

  const ModelConfig& config() const { return cfg_; }
  const GgufFile& file() const { return file_; }
  // Tensor count per type name, e.g. {"Q4_K": 120, "F32": 45}.
  std::map<std::string, int64_t> tensor_types() const;
  // The weights as the host sees them: matrices in the mapped file, vectors as f32 copies.
  const ModelWeights& host_weights() const { return host_; }

  // Runs the batch on `backend` (bound to this model's weights and to the KV cache whose blocks
  // the entries' tables name), writing K/V for its tokens into the cache; the step's logits rows
  // ([rows][vocab], entries in order) are then in backend.buffer(kLogits) / host_logits(). Only
  // one thread may call forward at a time.
  void forward(const std::vector<BatchEntry>& batch, Backend& backend);

 private:
  GgufFile file_;
  ModelConfig cfg_;
  ModelWeights host_;
  // Storage of the f32 vectors host_ points at: norms, biases, RoPE frequencies.
  std::vector<std::vector<float>> vectors_;
  float* global_freq_ = nullptr;  // host_.inv_freq, writable
  std::vector<float> rope_long_, rope_short_;  // phi3 LongRoPE frequencies, empty otherwise
  int64_t rope_long_after_ = 0;
  StepLayout step_;
  StageProfile profile_;
};

}  // namespace platform::llm
