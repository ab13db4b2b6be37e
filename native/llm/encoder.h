// A BERT-family text encoder loaded from a GGUF file (llama.cpp's `bert` and `nomic-bert`
// architectures, its tensor names and metadata keys), and its forward pass to one pooled,
// L2-normalized embedding per input.
//
// Unlike the decoder (model.h) an encoder attends in both directions and runs each input whole,
// so there is no KV cache and no scheduler: embed() takes a batch of token lists, puts all their
// tokens through every matmul together, and runs attention per input (nothing is padded). The
// weights stay in the memory-mapped file; only norm vectors and biases are f32 copies.
//
//   bert:        token_embd + position_embd + token_types[0] -> LayerNorm -> layers -> pool
//                layer: Q,K,V (+bias) -> attention -> attn_output (+bias) -> +x -> LayerNorm
//                       -> ffn_up (+bias) -> GELU -> ffn_down (+bias) -> +x -> LayerNorm
//   nomic-bert:  no position_embd; fused attn_qkv, NeoX RoPE on Q and K; SwiGLU feed-forward
//                ffn_down(silu(ffn_gate x) * ffn_up x); the same post-norm LayerNorms.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../backends/cpu/matmul.h"
#include "../ggml/gguf.h"

namespace platform::llm {

// GGUF `<arch>.pooling_type`: how one vector is taken from an input's token vectors.
enum class Pooling : int { kMean = 1, kCls = 2, kLast = 3 };
const char* pooling_name(Pooling p);

struct EncoderConfig {
  std::string architecture;  // "bert" | "nomic-bert"
  int64_t dim = 0;           // embedding_length
  int64_t n_layers = 0;      // block_count
  int64_t n_heads = 0;       // attention.head_count
  int64_t head_dim = 0;      // dim / n_heads
  int64_t ffn_dim = 0;       // feed_forward_length
  int64_t vocab = 0;         // rows of token_embd
  int64_t context = 0;       // context_length: the longest input (rows of position_embd for bert)
  float norm_eps = 1e-12f;   // attention.layer_norm_epsilon
  Pooling pooling = Pooling::kMean;
  bool rope = false;         // nomic-bert: NeoX RoPE over the whole head
  float rope_base = 10000.0f;
  bool gated_ffn = false;    // nomic-bert: SwiGLU; bert: GELU
};

// One layer's weights. Matrices are row-major [rows = outputs, cols = inputs] views of the
// mapped file; vectors (nullptr when the file has none: biases are optional) are f32 copies.
struct EncoderLayer {
  ggml::WeightMatrix wq, wk, wv;  // [dim, dim] each (views of attn_qkv's rows when fused)
  ggml::WeightMatrix wo;          // [dim, dim]
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;  // [dim]
  const float *attn_norm_w = nullptr, *attn_norm_b = nullptr;              // [dim] attn_output_norm
  ggml::WeightMatrix up, gate, down;  // up, gate [ffn, dim]; down [dim, ffn]; gate only when gated
  const float *b_up = nullptr, *b_down = nullptr;                          // [ffn], [dim]
  const float *out_norm_w = nullptr, *out_norm_b = nullptr;                // [dim] layer_output_norm
};

class Encoder {
 public:
  // Maps and validates the file. Throws GgufError naming the key or tensor at fault.
  static std::unique_ptr<Encoder> load(const std::string& path, int threads, SimdLevel level);

  const EncoderConfig& config() const { return cfg_; }
  const ggml::GgufFile& file() const { return file_; }
  int threads() const { return mm_.threads; }
  const char* kernels() const { return mm_.kernels->name; }
  std::map<std::string, int64_t> tensor_types() const;

  // out[i * dim ...] = the pooled, L2-normalized embedding of inputs[i]. Every input must be
  // non-empty, at most `context` tokens, with ids below `vocab` (std::invalid_argument otherwise).
  // Calls are serialised (one batch at a time per encoder: the scratch buffers are shared).
  void embed(const std::vector<std::vector<int32_t>>& inputs, float* out);

 private:
  Encoder(int threads, SimdLevel level) : mm_(threads, level) {}
  void layer(const EncoderLayer& L, int64_t n);
  void attention(int64_t n);

  ggml::GgufFile file_;
  EncoderConfig cfg_;
  ggml::WeightMatrix tok_embd_;   // [vocab, dim]
  ggml::WeightMatrix pos_embd_;   // [context, dim] (bert only; rows 0 when absent)
  std::vector<float> type0_;      // [dim] token_types row 0 ("sentence A"), zeros when absent
  const float *embd_norm_w_ = nullptr, *embd_norm_b_ = nullptr;  // [dim] token_embd_norm
  std::vector<EncoderLayer> layers_;
  std::vector<std::vector<float>> vectors_;  // storage of the f32 vectors above
  std::vector<float> inv_freq_;              // [head_dim / 2] RoPE frequencies (nomic-bert)

  std::mutex mutex_;               // embed() is one batch at a time
  cpu::MatmulContext mm_;
  // The current batch: token t belongs to input seq_of_[t] at position pos_[t]; inputs start at
  // starts_[i] (starts_[n_inputs] = n).
  std::vector<int32_t> tokens_, pos_;
  std::vector<int64_t> starts_;
  // Scratch, n tokens: x, tmp [n][dim]; q, k, v, att [n][dim]; hb, hg [n][ffn].
  std::vector<float> x_, tmp_, q_, k_, v_, att_, hb_, hg_;
};

}  // namespace platform::llm
