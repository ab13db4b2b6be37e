// Loading (metadata -> EncoderConfig, tensors -> EncoderLayer) and the encoder's forward pass.
// The graph follows llama.cpp's llm_build_bert for the two architectures it names `bert` and
// `nomic-bert`; the tensor names and metadata keys are the ones its GGUF converter writes.
#include "encoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "../backends/cpu/gemm.h"
#include "../core/thread_pool.h"
#include "gguf_tensors.h"

namespace platform::llm {
namespace {

using ggml::GgufError;
using ggml::GgufFile;
using ggml::GgufTensor;
using ggml::WeightMatrix;

// Rows [r0, r0 + rows) of a matrix: a view, no copy (attn_qkv holds Q, K and V one after another).
WeightMatrix row_slice(const WeightMatrix& w, int64_t r0, int64_t rows) {
  WeightMatrix s = w;
  s.rows = rows;
  s.data = w.data + r0 * w.row_bytes;
  return s;
}

// out[t] = (in[t] - mean) / sqrt(var + eps) * w + b, per row of `dim` (ggml_norm, then scale and
// shift). Sums in double: the rows are short and the f64 reference is held to ~1e-5. Rows are
// split across the threads when there are many.
void layer_norm(float* out, const float* in, const float* w, const float* b, int64_t n, int64_t dim, float eps, int threads) {
  parallel_for(0, n, n >= 64 ? threads : 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* x = in + t * dim;
      float* y = out + t * dim;
      double mean = 0;
      for (int64_t i = 0; i < dim; ++i) mean += x[i];
      mean /= static_cast<double>(dim);
      double var = 0;
      for (int64_t i = 0; i < dim; ++i) var += (x[i] - mean) * (x[i] - mean);
      var /= static_cast<double>(dim);
      const double scale = 1.0 / std::sqrt(var + static_cast<double>(eps));
      for (int64_t i = 0; i < dim; ++i) y[i] = static_cast<float>((x[i] - mean) * scale) * w[i] + b[i];
    }
  });
}

// f(x) over n elements, split across the threads when there are many.
template <typename F>
void map_elements(float* x, int64_t n, int threads, F f) {
  parallel_for(0, n, n >= (int64_t{1} << 16) ? threads : 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) f(x[i], i);
  });
}

void add_bias(float* y, const float* b, int64_t n, int64_t cols) {
  if (b == nullptr) return;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < cols; ++i) y[t * cols + i] += b[i];
  }
}

// ggml_gelu: the tanh approximation BERT's GGUF conversions are run with.
inline float gelu(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
  }
  return "?";
}

std::unique_ptr<Encoder> Encoder::load(const std::string& path, int threads, SimdLevel level) {
  auto e = std::unique_ptr<Encoder>(new Encoder(threads, level));
  e->file_ = GgufFile::open(path);
  const GgufFile& f = e->file_;
  EncoderConfig& c = e->cfg_;

  const auto arch = f.get_string("general.architecture");
  if (!arch) throw GgufError("missing metadata key 'general.architecture'");
  if (*arch != "bert" && *arch != "nomic-bert") {
    throw GgufError("architecture '" + *arch + "' is not an embedding model (supported: bert, nomic-bert)");
  }
  c.architecture = *arch;
  const bool nomic = *arch == "nomic-bert";
  const std::string p = *arch + ".";
  c.dim = require_uint(f, p + "embedding_length");
  c.n_layers = require_uint(f, p + "block_count");
  c.ffn_dim = require_uint(f, p + "feed_forward_length");
  c.n_heads = require_uint(f, p + "attention.head_count");
  if (f.find(p + "attention.head_count_kv") && require_uint(f, p + "attention.head_count_kv") != c.n_heads) {
    throw GgufError("metadata key '" + p + "attention.head_count_kv' differs from attention.head_count (unsupported in an encoder)");
  }
  if (c.dim % c.n_heads != 0) throw GgufError("'" + p + "embedding_length' is not a multiple of '" + p + "attention.head_count'");
  c.head_dim = c.dim / c.n_heads;
  c.context = f.find(p + "context_length") ? require_uint(f, p + "context_length") : 512;
  c.norm_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_epsilon").value_or(1e-12));
  if (!(c.norm_eps >= 0.0f) || !std::isfinite(c.norm_eps)) throw GgufError("metadata key '" + p + "attention.layer_norm_epsilon' is not a finite non-negative number");
  // Absent: mean, what sentence-transformers models mostly use (llama.cpp would give per-token vectors).
  const uint64_t pooling = f.get_uint(p + "pooling_type").value_or(1);
  if (pooling < 1 || pooling > 3) {
    throw GgufError("metadata key '" + p + "pooling_type' is " + std::to_string(pooling) +
                    (pooling == 0 ? " (none: per-token vectors)" : pooling == 4 ? " (rank: a reranker)" : "") +
                    "; supported: 1 (mean), 2 (cls), 3 (last)");
  }
  c.pooling = static_cast<Pooling>(pooling);
  c.rope = nomic;
  c.gated_ffn = nomic;
  if (nomic) {
    c.rope_base = static_cast<float>(f.get_float(p + "rope.freq_base").value_or(1000.0));
    if (!(c.rope_base > 0.0f)) throw GgufError("metadata key '" + p + "rope.freq_base' must be positive");
    if (c.head_dim % 2 != 0) throw GgufError("head dimension must be even for RoPE");
    const int64_t half = c.head_dim / 2;
    e->inv_freq_.resize(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
      e->inv_freq_[i] = static_cast<float>(std::pow(static_cast<double>(c.rope_base), -2.0 * static_cast<double>(i) / static_cast<double>(c.head_dim)));
    }
  }

  const GgufTensor* embd = f.tensor("token_embd.weight");
  if (embd == nullptr) throw GgufError("missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != c.dim) {
    throw GgufError("tensor 'token_embd.weight' has shape " + shape_string(embd->dims) + ", expected [" + std::to_string(c.dim) + ", n_vocab]");
  }
  c.vocab = embd->dims[1];
  if (c.vocab > (int64_t{1} << 31) - 1) throw GgufError("vocabulary too large");
  e->tok_embd_ = matrix(f, "token_embd.weight", c.vocab, c.dim);
  if (!nomic) e->pos_embd_ = matrix(f, "position_embd.weight", c.context, c.dim);
  e->type0_.assign(static_cast<size_t>(c.dim), 0.0f);
  if (const GgufTensor* types = f.tensor("token_types.weight")) {
    if (types->dims.size() != 2 || types->dims[0] != c.dim || types->dims[1] < 1) {
      throw GgufError("tensor 'token_types.weight' has shape " + shape_string(types->dims) + ", expected [" + std::to_string(c.dim) + ", n_token_types]");
    }
    e->type0_ = vector_f32(*types, c.dim);  // row 0: every token is "sentence A", as in llama.cpp
  }

  // Every layer has at least 8 tensors: bounds block_count before anything is sized by it.
  if (static_cast<uint64_t>(c.n_layers) > f.tensors().size() / 8) {
    throw GgufError("block_count " + std::to_string(c.n_layers) + " is more layers than the file's " + std::to_string(f.tensors().size()) + " tensors hold");
  }
  // vectors_ must not reallocate while the layers point into it.
  e->vectors_.reserve(static_cast<size_t>(2 + c.n_layers * 12));
  auto keep = [&](const std::string& name, int64_t n) { return e->vectors_.emplace_back(vector_f32(require_tensor(f, name, {n}), n)).data(); };
  auto keep_opt = [&](const std::string& name, int64_t n) -> const float* { return f.tensor(name) ? keep(name, n) : nullptr; };
  e->embd_norm_w_ = keep("token_embd_norm.weight", c.dim);
  e->embd_norm_b_ = keep("token_embd_norm.bias", c.dim);

  e->layers_.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    EncoderLayer& L = e->layers_[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    // Q, K and V: one fused attn_qkv [dim, 3 dim] (nomic-bert's converter writes this) or three
    // matrices (bert's), as llama.cpp's create_tensor_qkv takes either for both architectures.
    if (f.tensor(b + "attn_qkv.weight") != nullptr) {
      const WeightMatrix qkv = matrix(f, b + "attn_qkv.weight", 3 * c.dim, c.dim);
      L.wq = row_slice(qkv, 0, c.dim);
      L.wk = row_slice(qkv, c.dim, c.dim);
      L.wv = row_slice(qkv, 2 * c.dim, c.dim);
      if (const float* bqkv = keep_opt(b + "attn_qkv.bias", 3 * c.dim)) {
        L.bq = bqkv;
        L.bk = bqkv + c.dim;
        L.bv = bqkv + 2 * c.dim;
      }
    } else {
      L.wq = matrix(f, b + "attn_q.weight", c.dim, c.dim);
      L.wk = matrix(f, b + "attn_k.weight", c.dim, c.dim);
      L.wv = matrix(f, b + "attn_v.weight", c.dim, c.dim);
    }
    if (L.bq == nullptr) {
      L.bq = keep_opt(b + "attn_q.bias", c.dim);
      L.bk = keep_opt(b + "attn_k.bias", c.dim);
      L.bv = keep_opt(b + "attn_v.bias", c.dim);
    }
    L.wo = matrix(f, b + "attn_output.weight", c.dim, c.dim);
    L.bo = keep_opt(b + "attn_output.bias", c.dim);
    L.attn_norm_w = keep(b + "attn_output_norm.weight", c.dim);
    L.attn_norm_b = keep(b + "attn_output_norm.bias", c.dim);
    L.up = matrix(f, b + "ffn_up.weight", c.ffn_dim, c.dim);
    L.b_up = keep_opt(b + "ffn_up.bias", c.ffn_dim);
    if (c.gated_ffn) L.gate = matrix(f, b + "ffn_gate.weight", c.ffn_dim, c.dim);
    L.down = matrix(f, b + "ffn_down.weight", c.dim, c.ffn_dim);
    L.b_down = keep_opt(b + "ffn_down.bias", c.dim);
    L.out_norm_w = keep(b + "layer_output_norm.weight", c.dim);
    L.out_norm_b = keep(b + "layer_output_norm.bias", c.dim);
  }
  return e;
}

std::map<std::string, int64_t> Encoder::tensor_types() const {
  std::map<std::string, int64_t> counts;
  for (const GgufTensor& t : file_.tensors()) ++counts[ggml::type_name(t.type)];
  return counts;
}

void Encoder::embed(const std::vector<std::vector<int32_t>>& inputs, float* out) {
  const EncoderConfig& c = cfg_;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i];
    const std::string name = "inputs[" + std::to_string(i) + "]";
    if (in.empty()) throw std::invalid_argument(name + " is empty");
    if (static_cast<int64_t>(in.size()) > c.context) {
      throw std::invalid_argument(name + " has " + std::to_string(in.size()) + " tokens, more than the model's context of " + std::to_string(c.context));
    }
    for (size_t j = 0; j < in.size(); ++j) {
      if (in[j] < 0 || in[j] >= c.vocab) {
        throw std::invalid_argument(name + "[" + std::to_string(j) + "] = " + std::to_string(in[j]) + " is not a token id (vocabulary of " + std::to_string(c.vocab) + ")");
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);

  // Flatten: every input's tokens one after another, positions restarting at 0 per input.
  tokens_.clear();
  pos_.clear();
  starts_.assign(1, 0);
  for (const auto& in : inputs) {
    for (size_t j = 0; j < in.size(); ++j) {
      tokens_.push_back(in[j]);
      pos_.push_back(static_cast<int32_t>(j));
    }
    starts_.push_back(static_cast<int64_t>(tokens_.size()));
  }
  const int64_t n = static_cast<int64_t>(tokens_.size());
  const size_t nd = static_cast<size_t>(n * c.dim), nf = static_cast<size_t>(n * c.ffn_dim);
  for (auto* b : {&x_, &tmp_, &q_, &k_, &v_, &att_}) b->resize(nd);
  hb_.resize(nf);
  if (c.gated_ffn) hg_.resize(nf);

  // x[t] = token_embd[token] + token_types[0] (+ position_embd[pos] for bert), then LayerNorm.
  std::vector<float> row(static_cast<size_t>(c.dim));
  for (int64_t t = 0; t < n; ++t) {
    float* xt = tmp_.data() + t * c.dim;
    ggml::dequantize_row(tok_embd_.type, tok_embd_.row(tokens_[t]), xt, c.dim);
    for (int64_t i = 0; i < c.dim; ++i) xt[i] += type0_[i];
    if (pos_embd_.data != nullptr) {
      ggml::dequantize_row(pos_embd_.type, pos_embd_.row(pos_[t]), row.data(), c.dim);
      for (int64_t i = 0; i < c.dim; ++i) xt[i] += row[i];
    }
  }
  layer_norm(x_.data(), tmp_.data(), embd_norm_w_, embd_norm_b_, n, c.dim, c.norm_eps, mm_.threads);

  for (const EncoderLayer& L : layers_) layer(L, n);

  // Pool each input's rows into one vector, then scale it to unit length (a zero vector stays zero).
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t s0 = starts_[i], s1 = starts_[i + 1];
    float* y = out + static_cast<int64_t>(i) * c.dim;
    std::vector<double> acc(static_cast<size_t>(c.dim), 0.0);
    const int64_t r0 = c.pooling == Pooling::kLast ? s1 - 1 : s0;
    const int64_t r1 = c.pooling == Pooling::kMean ? s1 : r0 + 1;
    for (int64_t t = r0; t < r1; ++t) {
      for (int64_t d = 0; d < c.dim; ++d) acc[d] += x_[t * c.dim + d];
    }
    double norm = 0;
    for (int64_t d = 0; d < c.dim; ++d) {
      acc[d] /= static_cast<double>(r1 - r0);
      norm += acc[d] * acc[d];
    }
    const double scale = norm > 0 ? 1.0 / std::sqrt(norm) : 0.0;
    for (int64_t d = 0; d < c.dim; ++d) y[d] = static_cast<float>(acc[d] * scale);
  }
}

// One post-norm layer on x [n][dim] in place.
void Encoder::layer(const EncoderLayer& L, int64_t n) {
  const EncoderConfig& c = cfg_;
  const int64_t dim = c.dim, ffn = c.ffn_dim;
  // --- self-attention ---
  const WeightMatrix* qkv[3] = {&L.wq, &L.wk, &L.wv};
  float* ys[3] = {q_.data(), k_.data(), v_.data()};
  cpu::matmul_multi(qkv, ys, 3, x_.data(), n, mm_);
  add_bias(q_.data(), L.bq, n, dim);
  add_bias(k_.data(), L.bk, n, dim);
  add_bias(v_.data(), L.bv, n, dim);
  if (c.rope) {
    // NeoX halves (x[i], x[i + d/2]) of each head, rotated by pos * inv_freq[i].
    const int64_t half = c.head_dim / 2;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos_[t]) * inv_freq_[i];
        const float cs = static_cast<float>(std::cos(a)), sn = static_cast<float>(std::sin(a));
        for (float* m : {q_.data(), k_.data()}) {
          for (int64_t h = 0; h < c.n_heads; ++h) {
            float* v = m + t * dim + h * c.head_dim;
            const float x0 = v[i], x1 = v[i + half];
            v[i] = x0 * cs - x1 * sn;
            v[i + half] = x0 * sn + x1 * cs;
          }
        }
      }
    }
  }
  attention(n);
  cpu::matmul(L.wo, att_.data(), n, tmp_.data(), mm_);
  add_bias(tmp_.data(), L.bo, n, dim);
  for (int64_t i = 0; i < n * dim; ++i) tmp_[i] += x_[i];  // re-add the layer input
  layer_norm(x_.data(), tmp_.data(), L.attn_norm_w, L.attn_norm_b, n, dim, c.norm_eps, mm_.threads);

  // --- feed-forward ---
  if (c.gated_ffn) {
    const WeightMatrix* gu[2] = {&L.up, &L.gate};
    float* hs[2] = {hb_.data(), hg_.data()};
    cpu::matmul_multi(gu, hs, 2, x_.data(), n, mm_);
    add_bias(hb_.data(), L.b_up, n, ffn);
    const float* g = hg_.data();
    map_elements(hb_.data(), n * ffn, mm_.threads, [g](float& h, int64_t i) { h *= silu(g[i]); });
  } else {
    cpu::matmul(L.up, x_.data(), n, hb_.data(), mm_);
    add_bias(hb_.data(), L.b_up, n, ffn);
    map_elements(hb_.data(), n * ffn, mm_.threads, [](float& h, int64_t) { h = gelu(h); });
  }
  cpu::matmul(L.down, hb_.data(), n, tmp_.data(), mm_);
  add_bias(tmp_.data(), L.b_down, n, dim);
  for (int64_t i = 0; i < n * dim; ++i) tmp_[i] += x_[i];  // the attention output bypasses the FFN
  layer_norm(x_.data(), tmp_.data(), L.out_norm_w, L.out_norm_b, n, dim, c.norm_eps, mm_.threads);
}

// att = softmax(Q K^T / sqrt(head_dim)) V over the tokens of each input, in both directions, per
// head: two f32 GEMMs (gemm.h, reading the head's columns in place through the leading
// dimension) around a row softmax. One work item per (input, head), taken by the threads from a
// shared counter; each GEMM runs on the thread that took the item.
void Encoder::attention(int64_t n) {
  (void)n;
  const EncoderConfig& c = cfg_;
  const int64_t n_inputs = static_cast<int64_t>(starts_.size()) - 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  GemmOptions one_thread;
  one_thread.simd = mm_.level;
  one_thread.threads = 1;
  cpu::parallel_dynamic(n_inputs * c.n_heads, mm_.threads, [&](int64_t item) {
    const int64_t s = item / c.n_heads, h = item % c.n_heads;
    const int64_t t0 = starts_[s], len = starts_[s + 1] - t0;
    const int64_t off = t0 * c.dim + h * c.head_dim;
    std::vector<float> p(static_cast<size_t>(len * len));  // scores, then weights [len][len]
    gemm_f32(false, true, len, len, c.head_dim, scale, q_.data() + off, c.dim, k_.data() + off, c.dim, 0.0f, p.data(), len, one_thread);
    for (int64_t i = 0; i < len; ++i) {
      float* row = p.data() + i * len;
      const float mx = *std::max_element(row, row + len);
      float sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += (row[j] = std::exp(row[j] - mx));
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < len; ++j) row[j] *= inv;
    }
    gemm_f32(false, false, len, c.head_dim, len, 1.0f, p.data(), len, v_.data() + off, c.dim, 0.0f, att_.data() + off, c.dim, one_thread);
  });
}

}  // namespace platform::llm
