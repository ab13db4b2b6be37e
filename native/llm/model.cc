// Loading (metadata -> ModelConfig, tensor names and shapes -> weights) and the forward pass.
#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "../core/thread_pool.h"

namespace platform::llm {
namespace {

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

const GgufTensor& require_tensor(const GgufFile& f, const std::string& name,
                                 const std::vector<int64_t>& dims) {
  const GgufTensor* t = f.tensor(name);
  if (t == nullptr) throw GgufError("missing tensor '" + name + "'");
  if (t->dims != dims) {
    throw GgufError("tensor '" + name + "' has shape " + shape_string(t->dims) + ", expected " +
                    shape_string(dims));
  }
  return *t;
}

// A 2-D GGUF tensor [cols, rows] (dims[0] contiguous) as a row-major [rows, cols] matrix.
WeightMatrix matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensor& t = require_tensor(f, name, {cols, rows});
  WeightMatrix w;
  w.type = t.type;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = cpu::row_bytes(t.type, cols);
  w.data = t.data;
  return w;
}

std::vector<float> vector_f32(const GgufFile& f, const std::string& name, int64_t n) {
  const GgufTensor& t = require_tensor(f, name, {n});
  std::vector<float> v(static_cast<size_t>(n));
  cpu::dequantize_row(t.type, t.data, v.data(), n);
  return v;
}

int64_t require_uint(const GgufFile& f, const std::string& key) {
  const auto v = f.get_uint(key);
  if (!v) throw GgufError("missing metadata key '" + key + "'");
  if (*v == 0 || *v > (uint64_t{1} << 31)) throw GgufError("metadata key '" + key + "' is out of range");
  return static_cast<int64_t>(*v);
}

// out[n, dim] = x / rms(x) * w, per row (rows split across threads when there are many).
void rmsnorm(float* out, const float* x, const float* w, int64_t n, int64_t dim, float eps, int threads) {
  parallel_for(0, n, n >= 64 ? threads : 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* xr = x + t * dim;
      float* o = out + t * dim;
      double ss = 0.0;
      for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
      for (int64_t i = 0; i < dim; ++i) o[i] = xr[i] * scale * w[i];
    }
  });
}

void add_bias(float* x, const std::vector<float>& b, int64_t n) {
  if (b.empty()) return;
  const int64_t d = static_cast<int64_t>(b.size());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < d; ++i) x[t * d + i] += b[i];
}

// Rotates the first rope_dim dimensions of each head of x[n, heads * head_dim].
void rope(float* x, int64_t n, int64_t heads, int64_t head_dim, int64_t rope_dim, bool neox,
          const float* cos_t, const float* sin_t) {
  const int64_t half = rope_dim / 2;
  for (int64_t t = 0; t < n; ++t) {
    const float* c = cos_t + t * half;
    const float* s = sin_t + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        // llama GGUF: adjacent pairs; NeoX (qwen2): first half with second half.
        float* a = neox ? v + i : v + 2 * i;
        float* b = neox ? v + i + half : v + 2 * i + 1;
        const float x0 = *a, x1 = *b;
        *a = x0 * c[i] - x1 * s[i];
        *b = x0 * s[i] + x1 * c[i];
      }
    }
  }
}

}  // namespace

StageProfile::StageProfile() {
  const char* env = std::getenv("PLATFORM_LLM_PROFILE");
  enabled_ = env != nullptr && *env != '\0' && *env != '0';
}

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void StageProfile::begin(int64_t n) {
  if (!enabled_) return;
  cls_ = n == 1 ? 0 : n <= 32 ? 1 : 2;
  ++steps_[cls_];
  tokens_[cls_] += n;
  last_ns_ = now_ns();
}

void StageProfile::mark(Stage s) {
  if (!enabled_) return;
  const int64_t t = now_ns();
  seconds_[cls_][s] += static_cast<double>(t - last_ns_) * 1e-9;
  last_ns_ = t;
}

void StageProfile::end() {}

StageProfile::~StageProfile() {
  if (!enabled_) return;
  static const char* const names[kCount] = {"embed+rope angles", "rmsnorm", "matmul q,k,v", "rope+kv write",
                                            "attention", "matmul wo", "matmul gate,up", "silu*up",
                                            "matmul down", "residual adds", "output norm+matmul"};
  static const char* const classes[kClasses] = {"1 token", "2-32 tokens", ">32 tokens"};
  for (int c = 0; c < kClasses; ++c) {
    if (steps_[c] == 0) continue;
    double total = 0;
    for (double v : seconds_[c]) total += v;
    std::fprintf(stderr, "[llm profile] steps of %s: %lld steps, %lld tokens, %.3f s (%.2f ms/step)\n", classes[c],
                 static_cast<long long>(steps_[c]), static_cast<long long>(tokens_[c]), total, total * 1e3 / static_cast<double>(steps_[c]));
    for (int s = 0; s < kCount; ++s) {
      std::fprintf(stderr, "[llm profile]   %-20s %8.3f ms/step %5.1f%%\n", names[s], seconds_[c][s] * 1e3 / static_cast<double>(steps_[c]),
                   total > 0 ? 100.0 * seconds_[c][s] / total : 0.0);
    }
  }
}

std::unique_ptr<Model> Model::load(const std::string& path) {
  auto m = std::unique_ptr<Model>(new Model());
  m->file_ = GgufFile::open(path);
  const GgufFile& f = m->file_;
  ModelConfig& c = m->cfg_;

  const auto arch = f.get_string("general.architecture");
  if (!arch) throw GgufError("missing metadata key 'general.architecture'");
  if (*arch != "llama" && *arch != "qwen2") {
    throw GgufError("unsupported architecture '" + *arch + "' (supported: llama, qwen2)");
  }
  c.architecture = *arch;
  const std::string p = *arch + ".";
  c.dim = require_uint(f, p + "embedding_length");
  c.n_layers = require_uint(f, p + "block_count");
  c.ffn_dim = require_uint(f, p + "feed_forward_length");
  c.n_heads = require_uint(f, p + "attention.head_count");
  c.n_kv_heads = f.find(p + "attention.head_count_kv") ? require_uint(f, p + "attention.head_count_kv") : c.n_heads;
  c.head_dim = f.find(p + "attention.key_length") ? require_uint(f, p + "attention.key_length") : c.dim / c.n_heads;
  if (c.n_heads % c.n_kv_heads != 0) throw GgufError("attention.head_count is not a multiple of attention.head_count_kv");
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) throw GgufError("head dimension must be even");
  if (f.find(p + "attention.value_length") && require_uint(f, p + "attention.value_length") != c.head_dim) {
    throw GgufError("attention.value_length differs from attention.key_length (unsupported)");
  }
  c.train_context = f.find(p + "context_length") ? require_uint(f, p + "context_length") : 2048;
  c.rms_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_rms_epsilon").value_or(*arch == "qwen2" ? 1e-6 : 1e-5));
  c.rope_base = static_cast<float>(f.get_float(p + "rope.freq_base").value_or(*arch == "qwen2" ? 1000000.0 : 10000.0));
  c.rope_dim = f.find(p + "rope.dimension_count") ? require_uint(f, p + "rope.dimension_count") : c.head_dim;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) throw GgufError("rope.dimension_count must be even and at most the head dimension");
  if (!(c.rms_eps >= 0.0f) || !(c.rope_base > 0.0f)) throw GgufError("bad rms epsilon or rope.freq_base");
  c.rope_neox = *arch == "qwen2";
  if (const auto scaling = f.get_string(p + "rope.scaling.type"); scaling && *scaling != "none") {
    throw GgufError("unsupported rope.scaling.type '" + *scaling + "'");
  }

  const GgufTensor* embd = f.tensor("token_embd.weight");
  if (embd == nullptr) throw GgufError("missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != c.dim) {
    throw GgufError("tensor 'token_embd.weight' has shape " + shape_string(embd->dims) + ", expected [" + std::to_string(c.dim) + ", n_vocab]");
  }
  c.vocab = embd->dims[1];
  if (c.vocab > (int64_t{1} << 31) - 1) throw GgufError("vocabulary too large");
  m->tok_embd_ = matrix(f, "token_embd.weight", c.vocab, c.dim);
  c.tied_output = f.tensor("output.weight") == nullptr;
  m->output_ = c.tied_output ? m->tok_embd_ : matrix(f, "output.weight", c.vocab, c.dim);
  m->output_norm_ = vector_f32(f, "output_norm.weight", c.dim);

  auto token_id = [&](const std::string& key) -> int32_t {
    const auto v = f.find(key) ? f.get_uint(key) : std::nullopt;
    return v && static_cast<int64_t>(*v) < c.vocab ? static_cast<int32_t>(*v) : -1;
  };
  c.bos_token = token_id("tokenizer.ggml.bos_token_id");
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    const int32_t id = token_id(key);
    if (id >= 0 && std::find(c.eos_tokens.begin(), c.eos_tokens.end(), id) == c.eos_tokens.end()) c.eos_tokens.push_back(id);
  }

  // inv_freq[i] = base^(-2i / rope_dim), divided by rope_freqs.weight (Llama 3.1) when present.
  const int64_t half = c.rope_dim / 2;
  m->inv_freq_.resize(static_cast<size_t>(half));
  std::vector<float> factors;
  if (f.tensor("rope_freqs.weight")) factors = vector_f32(f, "rope_freqs.weight", half);
  for (int64_t i = 0; i < half; ++i) {
    double v = std::pow(static_cast<double>(c.rope_base), -2.0 * static_cast<double>(i) / static_cast<double>(c.rope_dim));
    if (!factors.empty()) v /= factors[i];
    m->inv_freq_[i] = static_cast<float>(v);
  }

  c.has_qkv_bias = f.tensor("blk.0.attn_q.bias") != nullptr;
  if (*arch == "qwen2" && !c.has_qkv_bias) throw GgufError("missing tensor 'blk.0.attn_q.bias' (qwen2 has QKV biases)");
  m->layers_.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    Layer& L = m->layers_[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    L.attn_norm = vector_f32(f, b + "attn_norm.weight", c.dim);
    L.wq = matrix(f, b + "attn_q.weight", c.q_dim(), c.dim);
    L.wk = matrix(f, b + "attn_k.weight", c.kv_dim(), c.dim);
    L.wv = matrix(f, b + "attn_v.weight", c.kv_dim(), c.dim);
    L.wo = matrix(f, b + "attn_output.weight", c.dim, c.q_dim());
    if (c.has_qkv_bias) {
      L.bq = vector_f32(f, b + "attn_q.bias", c.q_dim());
      L.bk = vector_f32(f, b + "attn_k.bias", c.kv_dim());
      L.bv = vector_f32(f, b + "attn_v.bias", c.kv_dim());
    }
    L.ffn_norm = vector_f32(f, b + "ffn_norm.weight", c.dim);
    L.w_gate = matrix(f, b + "ffn_gate.weight", c.ffn_dim, c.dim);
    L.w_up = matrix(f, b + "ffn_up.weight", c.ffn_dim, c.dim);
    L.w_down = matrix(f, b + "ffn_down.weight", c.dim, c.ffn_dim);
  }
  return m;
}

std::map<std::string, int64_t> Model::tensor_types() const {
  std::map<std::string, int64_t> counts;
  for (const GgufTensor& t : file_.tensors()) ++counts[cpu::type_name(t.type)];
  return counts;
}

int64_t Model::scratch_bytes() const {
  size_t n = 0;
  for (const auto* v : {&x_, &xb_, &xb2_, &q_, &k_, &v_, &att_, &hb_, &hb2_, &logits_, &rope_cos_, &rope_sin_}) n += v->capacity();
  return static_cast<int64_t>(n * sizeof(float));
}

// att[t, h*hd..] = softmax(q_t,h . K[0..pos_t] / sqrt(hd)) . V[0..pos_t], causal by position,
// each query head h reading KV head h / (n_heads / n_kv_heads). One task per token and KV head:
// the group's query heads share every K and V row the kernel loads. Tasks go out longest first
// (the last tokens of a prefill chunk see the most positions) to threads that take them from a
// counter.
void Model::attention(const std::vector<BatchEntry>& batch, KvCache& kv, int64_t layer, MatmulContext& mm) {
  const ModelConfig& c = cfg_;
  const cpu::QuantKernels& k = *mm.kernels;
  const int64_t n = static_cast<int64_t>(pos_.size());
  const int64_t hd = c.head_dim, group = c.n_heads / c.n_kv_heads, bs = kv.block_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  int64_t work = 0;
  for (int64_t t = 0; t < n; ++t) work += (pos_[t] + 1) * hd * c.n_heads;
  // Below ~256k multiply-adds (a short context) waking a second thread costs more than it saves.
  const int t_count = static_cast<int>(std::min<int64_t>(mm.threads, std::max<int64_t>(1, work / (int64_t{1} << 18))));
  parallel_dynamic(n * c.n_kv_heads, t_count, [&](int64_t task) {
    static thread_local std::vector<float> scratch;
    static thread_local std::vector<const float*> kb, vb;
    const int64_t t = n - 1 - task / c.n_kv_heads, g = task % c.n_kv_heads;
    const std::vector<int32_t>& blocks = *batch[entry_of_[t]].blocks;
    const int64_t len = pos_[t] + 1, nblk = (len + bs - 1) / bs;
    kb.resize(static_cast<size_t>(nblk));
    vb.resize(static_cast<size_t>(nblk));
    for (int64_t b = 0; b < nblk; ++b) {
      kb[b] = kv.k(layer, blocks[b], 0) + g * hd;
      vb[b] = kv.v(layer, blocks[b], 0) + g * hd;
    }
    scratch.resize(static_cast<size_t>(group * len));
    const int64_t h0 = (t * c.n_heads + g * group) * hd;
    k.attend(len, bs, c.kv_dim(), kb.data(), vb.data(), q_.data() + h0, group, hd, scale, scratch.data(), att_.data() + h0);
  });
}

const std::vector<float>& Model::forward(const std::vector<BatchEntry>& batch, KvCache& kv,
                                         MatmulContext& mm) {
  const ModelConfig& c = cfg_;
  const int64_t dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), ff = c.ffn_dim, half = c.rope_dim / 2;

  // Flatten the batch: token t belongs to entry entry_of_[t] at position pos_[t].
  pos_.clear();
  entry_of_.clear();
  std::vector<int32_t> tokens;
  int64_t n_logits = 0;
  for (size_t e = 0; e < batch.size(); ++e) {
    for (int64_t i = 0; i < batch[e].n_tokens; ++i) {
      tokens.push_back(batch[e].tokens[i]);
      pos_.push_back(batch[e].pos0 + i);
      entry_of_.push_back(static_cast<int32_t>(e));
    }
    n_logits += batch[e].all_logits ? batch[e].n_tokens : 1;
  }
  const int64_t n = static_cast<int64_t>(tokens.size());
  StageProfile& prof = profile_;
  prof.begin(n);
  auto size = [](std::vector<float>& v, int64_t count) { v.resize(static_cast<size_t>(count)); };
  size(x_, n * dim); size(xb_, n * dim); size(xb2_, n * dim);
  size(q_, n * qd); size(k_, n * kvd); size(v_, n * kvd); size(att_, n * qd);
  size(hb_, n * ff); size(hb2_, n * ff);
  size(rope_cos_, n * half); size(rope_sin_, n * half);

  // x[n, dim] = token embeddings
  for (int64_t t = 0; t < n; ++t) cpu::dequantize_row(tok_embd_.type, tok_embd_.row(tokens[t]), &x_[t * dim], dim);
  // RoPE angles pos * inv_freq[i], shared by every layer and head
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(pos_[t]) * inv_freq_[i];
      rope_cos_[t * half + i] = static_cast<float>(std::cos(a));
      rope_sin_[t * half + i] = static_cast<float>(std::sin(a));
    }
  }
  prof.mark(StageProfile::kEmbed);

  for (int64_t l = 0; l < c.n_layers; ++l) {
    const Layer& L = layers_[l];
    // --- attention ---
    rmsnorm(xb_.data(), x_.data(), L.attn_norm.data(), n, dim, c.rms_eps, mm.threads);  // xb[n, dim]
    prof.mark(StageProfile::kNorm);
    {
      // q[n, n_heads * hd], k[n, n_kv_heads * hd], v[n, n_kv_heads * hd]
      const WeightMatrix* ws[] = {&L.wq, &L.wk, &L.wv};
      float* ys[] = {q_.data(), k_.data(), v_.data()};
      matmul_multi(ws, ys, 3, xb_.data(), n, mm);
    }
    prof.mark(StageProfile::kQkv);
    add_bias(q_.data(), L.bq, n);
    add_bias(k_.data(), L.bk, n);
    add_bias(v_.data(), L.bv, n);
    rope(q_.data(), n, c.n_heads, c.head_dim, c.rope_dim, c.rope_neox, rope_cos_.data(), rope_sin_.data());
    rope(k_.data(), n, c.n_kv_heads, c.head_dim, c.rope_dim, c.rope_neox, rope_cos_.data(), rope_sin_.data());
    // Write every token's K/V first: later tokens of a prefill chunk attend to earlier ones.
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<int32_t>& blocks = *batch[entry_of_[t]].blocks;
      const int64_t p = pos_[t], bs = kv.block_size();
      std::copy_n(&k_[t * kvd], kvd, kv.k(l, blocks[p / bs], p % bs));
      std::copy_n(&v_[t * kvd], kvd, kv.v(l, blocks[p / bs], p % bs));
    }
    prof.mark(StageProfile::kRopeKv);
    attention(batch, kv, l, mm);                     // att[n, n_heads * hd]
    prof.mark(StageProfile::kAttention);
    matmul(L.wo, att_.data(), n, xb2_.data(), mm);   // xb2[n, dim]
    prof.mark(StageProfile::kWo);
    for (int64_t i = 0; i < n * dim; ++i) x_[i] += xb2_[i];
    prof.mark(StageProfile::kResidual);

    // --- SiLU-gated feed-forward ---
    rmsnorm(xb_.data(), x_.data(), L.ffn_norm.data(), n, dim, c.rms_eps, mm.threads);
    prof.mark(StageProfile::kNorm);
    {
      const WeightMatrix* ws[] = {&L.w_gate, &L.w_up};
      float* ys[] = {hb_.data(), hb2_.data()};  // hb[n, ff], hb2[n, ff]
      matmul_multi(ws, ys, 2, xb_.data(), n, mm);
    }
    prof.mark(StageProfile::kGateUp);
    // Elementwise work under ~100 us is not worth waking the pool for.
    parallel_for(0, n, n >= 64 ? mm.threads : 1, [&](int64_t t0, int64_t t1) {
      mm.kernels->silu_mul(&hb_[t0 * ff], &hb2_[t0 * ff], (t1 - t0) * ff);
    });
    prof.mark(StageProfile::kSilu);
    matmul(L.w_down, hb_.data(), n, xb2_.data(), mm);  // xb2[n, dim]
    prof.mark(StageProfile::kDown);
    for (int64_t i = 0; i < n * dim; ++i) x_[i] += xb2_[i];
    prof.mark(StageProfile::kResidual);
  }

  // Final norm and output projection, only for the rows whose logits are wanted.
  int64_t row = 0, t0 = 0;
  for (const BatchEntry& e : batch) {
    const int64_t first = e.all_logits ? t0 : t0 + e.n_tokens - 1;
    for (int64_t t = first; t < t0 + e.n_tokens; ++t, ++row) {
      rmsnorm(&xb_[row * dim], &x_[t * dim], output_norm_.data(), 1, dim, c.rms_eps, 1);
    }
    t0 += e.n_tokens;
  }
  size(logits_, n_logits * c.vocab);
  matmul(output_, xb_.data(), n_logits, logits_.data(), mm);  // logits[n_logits, vocab]
  prof.mark(StageProfile::kOutput);
  prof.end();
  return logits_;
}

}  // namespace platform::llm
