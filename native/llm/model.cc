// Loading (metadata -> ModelConfig, tensor names and shapes -> weights; each architecture's
// switches read as llama.cpp reads them) and the forward pass.
#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "../core/thread_pool.h"
#include "gguf_tensors.h"

namespace platform::llm {
using ggml::GgufError;
using ggml::GgufTensor;

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

StageProfile::~StageProfile() {
  if (!enabled_) return;
  static const char* const names[kCount] = {"embed+rope angles", "rmsnorm", "matmul q,k,v", "rope+kv write",
                                            "attention", "matmul wo+residual", "gate,up+act",
                                            "matmul down+residual", "output norm+matmul", "moe ffn+residual"};
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

namespace {

const char* const kArchitectures[] = {"llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3"};

bool is_gemma(const std::string& arch) { return arch == "gemma2" || arch == "gemma3"; }

// inv_freq[i] = base^(-2i / rope_dim) / factor (linear scaling), divided by factors[i] when given
// (Llama 3's rope_freqs, phi3's LongRoPE factors), as ggml_rope_ext computes its angles.
std::vector<float> rope_frequencies(int64_t rope_dim, double base, double factor, const std::vector<float>& factors) {
  const int64_t half = rope_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double v = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(rope_dim)) / factor;
    if (!factors.empty()) v /= factors[i];
    inv_freq[i] = static_cast<float>(v);
  }
  return inv_freq;
}

// A RoPE factor tensor (rope_freqs, rope_factors_long / _short): n values, each finite and > 0
// (they divide the frequencies).
std::vector<float> rope_factors(const GgufFile& f, const std::string& name, int64_t n) {
  std::vector<float> v = vector_f32(f, name, n);
  for (float x : v) {
    if (!(x > 0.0f) || !std::isfinite(x)) throw GgufError("tensor '" + name + "' holds a factor that is not a positive number");
  }
  return v;
}

// A positive float key, or `fallback` when absent.
double positive_float(const GgufFile& f, const std::string& key, double fallback) {
  if (f.find(key) == nullptr) return fallback;
  const auto v = f.get_float(key);
  if (!v || !(*v > 0.0) || !std::isfinite(*v)) throw GgufError("metadata key '" + key + "' must be a positive number");
  return *v;
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path) {
  auto m = std::unique_ptr<Model>(new Model());
  m->file_ = GgufFile::open(path);
  const GgufFile& f = m->file_;
  ModelConfig& c = m->cfg_;

  const auto arch = f.get_string("general.architecture");
  if (!arch) throw GgufError("missing metadata key 'general.architecture'");
  if (std::find(std::begin(kArchitectures), std::end(kArchitectures), *arch) == std::end(kArchitectures)) {
    std::string list;
    for (const char* a : kArchitectures) list += (list.empty() ? "" : ", ") + std::string(a);
    throw GgufError("unsupported architecture '" + *arch + "' (supported: " + list + ")");
  }
  c.architecture = *arch;
  const bool gemma = is_gemma(*arch);
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
  // Every later size is a product of the head counts and the head dimension: check them against
  // the first layer's query matrix (whose size the file's data bounds) before anything is sized
  // from them. Without this a 1 KB file with key_length 2^31 asked for 8 GiB of RoPE tables.
  {
    const uint64_t q = static_cast<uint64_t>(c.n_heads) * static_cast<uint64_t>(c.head_dim);
    const uint64_t kv = static_cast<uint64_t>(c.n_kv_heads) * static_cast<uint64_t>(c.head_dim);
    const GgufTensor* sep = f.tensor("blk.0.attn_q.weight");
    const GgufTensor* fused = sep ? nullptr : f.tensor("blk.0.attn_qkv.weight");
    if (sep == nullptr && fused == nullptr) throw GgufError("missing tensor 'blk.0.attn_q.weight'");
    const GgufTensor* t = sep ? sep : fused;
    const uint64_t rows = sep ? q : q + 2 * kv;  // at most 3 * 2^62: no overflow
    if (t->dims.size() != 2 || t->dims[0] != c.dim || static_cast<uint64_t>(t->dims[1]) != rows) {
      throw GgufError("tensor '" + t->name + "' has shape " + shape_string(t->dims) + ", expected [" + std::to_string(c.dim) + ", " +
                      std::to_string(rows) + "] (" + std::to_string(c.n_heads) + " heads of " + std::to_string(c.head_dim) +
                      (sep ? "" : ", then K and V") + ")");
    }
  }
  c.train_context = f.find(p + "context_length") ? require_uint(f, p + "context_length") : 2048;
  c.rms_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_rms_epsilon").value_or(*arch == "qwen2" ? 1e-6 : gemma ? 1e-6 : 1e-5));
  c.rope_base = static_cast<float>(f.get_float(p + "rope.freq_base").value_or(*arch == "qwen2" ? 1000000.0 : 10000.0));
  c.rope_dim = f.find(p + "rope.dimension_count") ? require_uint(f, p + "rope.dimension_count") : c.head_dim;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) throw GgufError("rope.dimension_count must be even and at most the head dimension");
  if (!(c.rms_eps >= 0.0f) || !(c.rope_base > 0.0f)) throw GgufError("bad rms epsilon or rope.freq_base");
  // llama GGUF files hold Q and K permuted for adjacent pairs; the others rotate NeoX halves.
  c.rope_neox = *arch != "llama";

  // Attention: scores = attn_scale * q . k. gemma's 27B models scale by 1/sqrt(dim / heads)
  // instead of 1/sqrt(head_dim) (their query_pre_attn_scalar); llama.cpp tells them by their
  // layer count (gemma2 46, gemma3 62), and so does this.
  const bool gemma_27b = (*arch == "gemma2" && c.n_layers == 46) || (*arch == "gemma3" && c.n_layers == 62);
  if (gemma_27b && c.dim / c.n_heads == 0) throw GgufError("embedding_length is smaller than attention.head_count");
  c.attn_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(gemma_27b ? c.dim / c.n_heads : c.head_dim)));
  if (gemma) {
    c.embed_scale = std::sqrt(static_cast<float>(c.dim));
    c.ffn_activation = ModelConfig::FfnActivation::kGeluTanh;
    c.has_post_norms = true;
  }
  if (*arch == "gemma2") {
    c.attn_softcap = static_cast<float>(positive_float(f, p + "attn_logit_softcapping", 50.0));
    c.final_softcap = static_cast<float>(positive_float(f, p + "final_logit_softcapping", 30.0));
  } else if (*arch == "gemma3" && f.find(p + "final_logit_softcapping")) {
    // 0 (or absent) is no capping for gemma3, as llama.cpp reads it.
    const auto cap = f.get_float(p + "final_logit_softcapping");
    if (!cap || !(*cap >= 0.0) || !std::isfinite(*cap)) throw GgufError("metadata key '" + p + "final_logit_softcapping' must be a number >= 0");
    c.final_softcap = static_cast<float>(*cap);
  }
  c.has_qk_norm = *arch == "qwen3" || *arch == "qwen3moe" || *arch == "gemma3";

  // Mixture of experts, as llama.cpp reads it: qwen3moe always (experts of
  // expert_feed_forward_length, default feed_forward_length / expert_used_count); llama when
  // expert_count is set above 0 (Mixtral: experts of feed_forward_length). Both route by softmax,
  // top expert_used_count, weights renormalized (llama.cpp's norm_w, no expert_weights_scale).
  const std::string count_key = p + "expert_count", used_key = p + "expert_used_count";
  const bool moe = *arch == "qwen3moe" || (*arch == "llama" && f.find(count_key) && f.get_uint(count_key).value_or(1) > 0);
  if (moe) {
    c.n_experts = require_uint(f, count_key);
    if (const ggml::GgufValue* u = f.find(used_key); u != nullptr && u->type == ggml::GgufValueType::kArray) {
      throw GgufError("metadata key '" + used_key + "' as a per-layer array is not supported");
    }
    if (!f.find(used_key)) throw GgufError("missing metadata key '" + used_key + "' (" + std::to_string(c.n_experts) + " experts)");
    const auto used = f.get_uint(used_key);
    if (!used || *used == 0 || static_cast<int64_t>(*used) > c.n_experts) {
      throw GgufError("metadata key '" + used_key + "' must be between 1 and expert_count (" + std::to_string(c.n_experts) + ")");
    }
    c.n_experts_used = static_cast<int64_t>(*used);
    const std::string ff_key = p + "expert_feed_forward_length";
    c.expert_ffn_dim = *arch == "qwen3moe" && f.find(ff_key) ? require_uint(f, ff_key)
                       : *arch == "qwen3moe"                 ? c.ffn_dim / c.n_experts_used
                                                             : c.ffn_dim;
    if (c.expert_ffn_dim <= 0) throw GgufError("expert feed-forward length is 0");
  } else if (f.tensor("blk.0.ffn_gate_inp.weight") != nullptr) {
    throw GgufError("tensor 'blk.0.ffn_gate_inp.weight' (an expert router) needs metadata key '" + count_key + "' above 0");
  }

  // Sliding-window layers, as llama.cpp reads them: gemma2 (window default 4096, every other
  // layer from the first: pattern 2) and gemma3 (only when the file sets a window; 5 local
  // layers then a global one: pattern 6; its local layers' RoPE base is rope.freq_base_swa,
  // default 10000, unscaled). llama.cpp ignores the key for llama (Mistral) and disables it for
  // phi3, and so does this.
  int64_t window = 0, pattern = 0;
  if (*arch == "gemma2" || (*arch == "gemma3" && f.find(p + "attention.sliding_window"))) {
    const std::string key = p + "attention.sliding_window";
    if (f.find(key)) {
      const auto v = f.get_uint(key);
      if (!v || *v > (uint64_t{1} << 31)) throw GgufError("metadata key '" + key + "' is out of range");
      window = static_cast<int64_t>(*v);
      if (window == 0 && *arch == "gemma2") throw GgufError("metadata key '" + key + "' is 0 (a window must hold at least one position)");
    } else {
      window = 4096;
    }
    const std::string pkey = p + "attention.sliding_window_pattern";
    if (const ggml::GgufValue* pv = f.find(pkey); pv != nullptr && pv->type == ggml::GgufValueType::kArray) {
      throw GgufError("metadata key '" + pkey + "' as a per-layer array is not supported");
    }
    pattern = f.find(pkey) ? require_uint(f, pkey) : (*arch == "gemma2" ? 2 : 6);
  }
  c.has_sliding_window = window > 0;

  // RoPE scaling. Llama 3's "llama3" scaling is the rope_freqs tensor (the converter writes no
  // type for it); phi3's "longrope" is its rope_factors_long / _short tensors with
  // rope.scaling.attn_factor. As in llama.cpp, a missing type means "linear" and every type but
  // "none" divides the frequencies by rope.scaling.factor (or the older rope.scale_linear) when
  // the file sets one.
  const auto scaling = f.get_string(p + "rope.scaling.type");
  if (scaling && *scaling != "linear" && *scaling != "none" && *scaling != "longrope") {
    throw GgufError("unsupported rope.scaling.type '" + *scaling + "'");
  }
  if (scaling && *scaling == "longrope" && *arch != "phi3") throw GgufError("rope.scaling.type 'longrope' is only supported for phi3");
  double linear_factor = 1.0;
  if (!scaling || *scaling != "none") {
    const std::string key = f.find(p + "rope.scaling.factor") ? p + "rope.scaling.factor" : p + "rope.scale_linear";
    // 0 means no scaling, as llama.cpp reads it.
    const auto v = f.find(key) ? f.get_float(key) : std::optional<double>(1.0);
    if (!v || !(*v >= 0.0) || !std::isfinite(*v)) throw GgufError("metadata key '" + key + "' must be a number >= 0");
    linear_factor = *v == 0.0 ? 1.0 : *v;
  }
  c.rope_attn_factor = static_cast<float>(positive_float(f, p + "rope.scaling.attn_factor", 1.0));

  const GgufTensor* embd = f.tensor("token_embd.weight");
  if (embd == nullptr) throw GgufError("missing tensor 'token_embd.weight'");
  if (embd->dims.size() != 2 || embd->dims[0] != c.dim) {
    throw GgufError("tensor 'token_embd.weight' has shape " + shape_string(embd->dims) + ", expected [" + std::to_string(c.dim) + ", n_vocab]");
  }
  c.vocab = embd->dims[1];
  if (c.vocab > (int64_t{1} << 31) - 1) throw GgufError("vocabulary too large");
  ModelWeights& w = m->host_;
  // Keeps an f32 vector alive in the model and returns its data (a vector's buffer stays put
  // when vectors_ grows).
  auto keep = [&](std::vector<float> v) { return m->vectors_.emplace_back(std::move(v)).data(); };
  w.tok_embd = matrix(f, "token_embd.weight", c.vocab, c.dim);
  // gemma2's output is always token_embd (llama.cpp reads no output.weight for it).
  c.tied_output = *arch == "gemma2" || f.tensor("output.weight") == nullptr;
  w.output = c.tied_output ? w.tok_embd : matrix(f, "output.weight", c.vocab, c.dim);
  w.output_norm = keep(vector_f32(f, "output_norm.weight", c.dim));

  auto token_id = [&](const std::string& key) -> int32_t {
    const auto v = f.find(key) ? f.get_uint(key) : std::nullopt;
    return v && static_cast<int64_t>(*v) < c.vocab ? static_cast<int32_t>(*v) : -1;
  };
  c.bos_token = token_id("tokenizer.ggml.bos_token_id");
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    const int32_t id = token_id(key);
    if (id >= 0 && std::find(c.eos_tokens.begin(), c.eos_tokens.end(), id) == c.eos_tokens.end()) c.eos_tokens.push_back(id);
  }

  const int64_t half = c.rope_dim / 2;
  std::vector<float> freq_factors;
  if (f.tensor("rope_freqs.weight")) freq_factors = rope_factors(f, "rope_freqs.weight", half);
  if (*arch == "phi3" && (f.tensor("rope_factors_long.weight") || f.tensor("rope_factors_short.weight"))) {
    // Either without the other is a load error naming the missing one (vector_f32).
    m->rope_long_ = rope_frequencies(c.rope_dim, c.rope_base, linear_factor, rope_factors(f, "rope_factors_long.weight", half));
    m->rope_short_ = rope_frequencies(c.rope_dim, c.rope_base, linear_factor, rope_factors(f, "rope_factors_short.weight", half));
    const std::string key = p + "rope.scaling.original_context_length";
    m->rope_long_after_ = f.find(key) ? require_uint(f, key) : c.train_context;
  } else if (scaling && *scaling == "longrope") {
    throw GgufError("missing tensor 'rope_factors_long.weight' (rope.scaling.type is 'longrope')");
  }
  // The global layers' table; use_context() rewrites it in place for LongRoPE.
  m->global_freq_ = keep(m->rope_short_.empty() ? rope_frequencies(c.rope_dim, c.rope_base, linear_factor, freq_factors) : m->rope_short_);
  w.inv_freq = m->global_freq_;
  // Sliding layers' own base, rope.freq_base_swa: gemma3's default 10000 and unscaled; gemma2's
  // default the global base, scaled as the global layers are.
  const float* local_freq = w.inv_freq;
  if (*arch == "gemma3" && c.has_sliding_window) {
    local_freq = keep(rope_frequencies(c.rope_dim, positive_float(f, p + "rope.freq_base_swa", 10000.0), 1.0, {}));
  } else if (*arch == "gemma2" && f.find(p + "rope.freq_base_swa")) {
    local_freq = keep(rope_frequencies(c.rope_dim, positive_float(f, p + "rope.freq_base_swa", 10000.0), linear_factor, freq_factors));
  }

  c.has_qkv_bias = f.tensor("blk.0.attn_q.bias") != nullptr || f.tensor("blk.0.attn_qkv.bias") != nullptr;
  if (*arch == "qwen2" && !c.has_qkv_bias) throw GgufError("missing tensor 'blk.0.attn_q.bias' (qwen2 has QKV biases)");
  // Every layer has at least 6 tensors (phi3's fused attn_qkv and ffn_up). Without this bound a
  // block_count of 2^24 in a one-layer file sized the layers for it (5 GiB) before the missing
  // tensor of layer 1 was noticed (test/data/fuzz-regressions/gguf_reader_fuzz/block-count-2e24;
  // libFuzzer: out-of-memory).
  if (static_cast<uint64_t>(c.n_layers) > f.tensors().size() / 6) {
    throw GgufError("block_count " + std::to_string(c.n_layers) + " is more layers than the file's " +
                    std::to_string(f.tensors().size()) + " tensors hold");
  }
  m->vectors_.reserve(static_cast<size_t>(3 + c.n_layers * 9));
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    L.attn_norm = keep(vector_f32(f, b + "attn_norm.weight", c.dim));
    if (f.tensor(b + "attn_qkv.weight")) {
      // Fused Q, K, V rows (phi3; llama.cpp reads them for any architecture): three row views of
      // one matrix.
      const WeightMatrix qkv = matrix(f, b + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.dim);
      L.wq = row_view(qkv, 0, c.q_dim());
      L.wk = row_view(qkv, c.q_dim(), c.kv_dim());
      L.wv = row_view(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      L.wq = matrix(f, b + "attn_q.weight", c.q_dim(), c.dim);
      L.wk = matrix(f, b + "attn_k.weight", c.kv_dim(), c.dim);
      L.wv = matrix(f, b + "attn_v.weight", c.kv_dim(), c.dim);
    }
    // Biases in every layer or none, fused (attn_qkv.bias) or separate, whichever form the
    // weights take: a bias left unread would be a wrong answer, not an error.
    const bool fused_bias = f.tensor(b + "attn_qkv.bias") != nullptr;
    if (c.has_qkv_bias && fused_bias) {
      const std::vector<float> all = vector_f32(f, b + "attn_qkv.bias", c.q_dim() + 2 * c.kv_dim());
      const auto part = [&](int64_t from, int64_t n) { return std::vector<float>(all.begin() + from, all.begin() + from + n); };
      L.bq = keep(part(0, c.q_dim()));
      L.bk = keep(part(c.q_dim(), c.kv_dim()));
      L.bv = keep(part(c.q_dim() + c.kv_dim(), c.kv_dim()));
    } else if (c.has_qkv_bias) {
      L.bq = keep(vector_f32(f, b + "attn_q.bias", c.q_dim()));
      L.bk = keep(vector_f32(f, b + "attn_k.bias", c.kv_dim()));
      L.bv = keep(vector_f32(f, b + "attn_v.bias", c.kv_dim()));
    } else if (fused_bias || f.tensor(b + "attn_q.bias")) {
      throw GgufError("tensor '" + b + (fused_bias ? "attn_qkv" : "attn_q") + ".bias' has no counterpart in layer 0 (Q/K/V biases must be in every layer or none)");
    }
    L.wo = matrix(f, b + "attn_output.weight", c.dim, c.q_dim());
    if (c.has_qk_norm) {
      L.q_norm = keep(vector_f32(f, b + "attn_q_norm.weight", c.head_dim));
      L.k_norm = keep(vector_f32(f, b + "attn_k_norm.weight", c.head_dim));
    }
    if (c.has_post_norms) {
      L.attn_post_norm = keep(vector_f32(f, b + "post_attention_norm.weight", c.dim));
      L.ffn_post_norm = keep(vector_f32(f, b + "post_ffw_norm.weight", c.dim));
    }
    L.ffn_norm = keep(vector_f32(f, b + "ffn_norm.weight", c.dim));
    if (c.is_moe()) {
      const int64_t ne = c.n_experts, ff = c.expert_ffn_dim;
      L.moe_router = matrix(f, b + "ffn_gate_inp.weight", ne, c.dim);
      L.moe_gate = stacked_matrices(f, b + "ffn_gate_exps.weight", ne, ff, c.dim);
      L.moe_up = stacked_matrices(f, b + "ffn_up_exps.weight", ne, ff, c.dim);
      L.moe_down = stacked_matrices(f, b + "ffn_down_exps.weight", ne, c.dim, ff);
    } else if (*arch == "phi3" && f.tensor(b + "ffn_gate.weight") == nullptr) {
      // Fused gate and up (phi3): ffn_up [dim, 2 * ffn], the gate's rows first.
      const WeightMatrix up = matrix(f, b + "ffn_up.weight", 2 * c.ffn_dim, c.dim);
      L.w_gate = row_view(up, 0, c.ffn_dim);
      L.w_up = row_view(up, c.ffn_dim, c.ffn_dim);
    } else {
      L.w_gate = matrix(f, b + "ffn_gate.weight", c.ffn_dim, c.dim);
      L.w_up = matrix(f, b + "ffn_up.weight", c.ffn_dim, c.dim);
    }
    if (!c.is_moe()) L.w_down = matrix(f, b + "ffn_down.weight", c.dim, c.ffn_dim);
    // llama.cpp's set_swa_pattern: layer l slides when l % pattern < pattern - 1.
    const bool local = window > 0 && l % pattern < pattern - 1;
    L.window = local ? window : 0;
    L.inv_freq = local ? local_freq : w.inv_freq;
  }
  return m;
}

void Model::use_context(int64_t context) {
  if (rope_long_.empty()) return;
  // phi3's LongRoPE: the long factors when a sequence may run past the original context, as
  // llama.cpp chooses them (by its context per sequence).
  const std::vector<float>& table = context > rope_long_after_ ? rope_long_ : rope_short_;
  std::copy(table.begin(), table.end(), global_freq_);
}

std::map<std::string, int64_t> Model::tensor_types() const {
  std::map<std::string, int64_t> counts;
  for (const GgufTensor& t : file_.tensors()) ++counts[ggml::type_name(t.type)];
  return counts;
}

// One step: the layers in order, each stage an operation of the backend (the same code for the
// CPU and CUDA). Shapes: n tokens in the step; x, xb [n][dim]; q, att [n][q_dim]; k, v [n][kv_dim];
// hb [n][ffn]; logits [n_logits][vocab].
void Model::forward(const std::vector<BatchEntry>& batch, Backend& be) {
  const ModelConfig& c = cfg_;
  // Flatten the batch: token t belongs to entry seq_of[t] at position pos[t].
  StepLayout& s = step_;
  s.tokens.clear();
  s.pos.clear();
  s.seq_of.clear();
  s.blocks.clear();
  s.logit_rows.clear();
  for (size_t e = 0; e < batch.size(); ++e) {
    const int32_t first = static_cast<int32_t>(s.tokens.size());
    for (int64_t i = 0; i < batch[e].n_tokens; ++i) {
      s.tokens.push_back(batch[e].tokens[i]);
      s.pos.push_back(static_cast<int32_t>(batch[e].pos0 + i));
      s.seq_of.push_back(static_cast<int32_t>(e));
    }
    s.blocks.push_back(batch[e].blocks);
    const int32_t last = static_cast<int32_t>(s.tokens.size()) - 1;
    for (int32_t t = batch[e].all_logits ? first : last; t <= last; ++t) s.logit_rows.push_back(t);
  }
  StageProfile& prof = profile_;
  auto mark = [&](StageProfile::Stage stage) {
    if (!prof.enabled()) return;
    be.synchronize();  // device backends: time the work, not its launch
    prof.mark(stage);
  };
  prof.begin(s.n());

  be.begin_step(s);
  float* x = be.buffer(Backend::kX);
  float* xb = be.buffer(Backend::kXb);
  float* q = be.buffer(Backend::kQ);
  float* k = be.buffer(Backend::kK);
  float* v = be.buffer(Backend::kV);
  float* att = be.buffer(Backend::kAtt);
  float* hb = be.buffer(Backend::kHb);
  const ModelWeights& w = be.weights();
  be.embed(x);
  mark(StageProfile::kEmbed);

  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[l];
    // --- attention ---
    be.rmsnorm(xb, x, L.attn_norm, false);
    mark(StageProfile::kNorm);
    be.matmul_qkv(L, xb, q, k, v);
    mark(StageProfile::kQkv);
    be.qkv_finish(l, L, q, k, v);  // biases, RoPE, K/V into the cache
    mark(StageProfile::kRopeKv);
    be.attention(l, q, att);
    mark(StageProfile::kAttention);
    if (L.attn_post_norm != nullptr) {
      be.matmul_norm_add(L.wo, att, s.n(), L.attn_post_norm, x);  // x += norm(att Wo^T) (gemma)
    } else {
      be.matmul_add(L.wo, att, s.n(), x);  // x += att Wo^T
    }
    mark(StageProfile::kWo);
    // --- gated feed-forward (SiLU, or GELU for gemma), or the mixture of experts ---
    be.rmsnorm(xb, x, L.ffn_norm, false);
    mark(StageProfile::kNorm);
    if (c.is_moe()) {
      be.moe_ffn(L, xb, x);  // x += the routed experts' weighted outputs
      mark(StageProfile::kMoe);
      continue;
    }
    be.gate_up(L, xb, hb);
    mark(StageProfile::kGateUp);
    if (L.ffn_post_norm != nullptr) {
      be.matmul_norm_add(L.w_down, hb, s.n(), L.ffn_post_norm, x);  // x += norm(hb Wdown^T)
    } else {
      be.matmul_add(L.w_down, hb, s.n(), x);  // x += hb Wdown^T
    }
    mark(StageProfile::kDown);
  }
  // Final norm and output projection, only for the rows whose logits are wanted.
  be.rmsnorm(xb, x, w.output_norm, true);
  be.output(xb, be.buffer(Backend::kLogits));
  mark(StageProfile::kOutput);
}

}  // namespace platform::llm
