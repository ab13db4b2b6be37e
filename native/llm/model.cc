// Loading (metadata -> ModelConfig, tensor names and shapes -> weights) and the forward pass.
#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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
                                            "attention", "matmul wo+residual", "gate,up+silu",
                                            "matmul down+residual", "output norm+matmul"};
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
  ModelWeights& w = m->host_;
  // Keeps an f32 vector alive in the model and returns its data.
  auto keep = [&](std::vector<float> v) { return m->vectors_.emplace_back(std::move(v)).data(); };
  w.tok_embd = matrix(f, "token_embd.weight", c.vocab, c.dim);
  c.tied_output = f.tensor("output.weight") == nullptr;
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

  // inv_freq[i] = base^(-2i / rope_dim), divided by rope_freqs.weight (Llama 3.1) when present.
  const int64_t half = c.rope_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  std::vector<float> factors;
  if (f.tensor("rope_freqs.weight")) factors = vector_f32(f, "rope_freqs.weight", half);
  for (int64_t i = 0; i < half; ++i) {
    double v = std::pow(static_cast<double>(c.rope_base), -2.0 * static_cast<double>(i) / static_cast<double>(c.rope_dim));
    if (!factors.empty()) v /= factors[i];
    inv_freq[i] = static_cast<float>(v);
  }
  w.inv_freq = keep(std::move(inv_freq));

  c.has_qkv_bias = f.tensor("blk.0.attn_q.bias") != nullptr;
  if (*arch == "qwen2" && !c.has_qkv_bias) throw GgufError("missing tensor 'blk.0.attn_q.bias' (qwen2 has QKV biases)");
  // Every layer has at least 9 tensors. Without this bound a block_count of 2^24 in a one-layer
  // file sized vectors_ and layers for it (5 GiB) before the missing tensor of layer 1 was noticed
  // (test/data/fuzz-regressions/gguf_reader_fuzz/block-count-2e24; libFuzzer: out-of-memory).
  if (static_cast<uint64_t>(c.n_layers) > f.tensors().size() / 9) {
    throw GgufError("block_count " + std::to_string(c.n_layers) + " is more layers than the file's " +
                    std::to_string(f.tensors().size()) + " tensors hold");
  }
  // vectors_ must not reallocate while host_ points into it: one norm per layer twice, three
  // biases per layer, and the three model-wide vectors.
  m->vectors_.reserve(static_cast<size_t>(3 + c.n_layers * 5));
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    L.attn_norm = keep(vector_f32(f, b + "attn_norm.weight", c.dim));
    L.wq = matrix(f, b + "attn_q.weight", c.q_dim(), c.dim);
    L.wk = matrix(f, b + "attn_k.weight", c.kv_dim(), c.dim);
    L.wv = matrix(f, b + "attn_v.weight", c.kv_dim(), c.dim);
    L.wo = matrix(f, b + "attn_output.weight", c.dim, c.q_dim());
    if (c.has_qkv_bias) {
      L.bq = keep(vector_f32(f, b + "attn_q.bias", c.q_dim()));
      L.bk = keep(vector_f32(f, b + "attn_k.bias", c.kv_dim()));
      L.bv = keep(vector_f32(f, b + "attn_v.bias", c.kv_dim()));
    }
    L.ffn_norm = keep(vector_f32(f, b + "ffn_norm.weight", c.dim));
    L.w_gate = matrix(f, b + "ffn_gate.weight", c.ffn_dim, c.dim);
    L.w_up = matrix(f, b + "ffn_up.weight", c.ffn_dim, c.dim);
    L.w_down = matrix(f, b + "ffn_down.weight", c.dim, c.ffn_dim);
  }
  return m;
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
    be.matmul_add(L.wo, att, s.n(), x);  // x += att Wo^T
    mark(StageProfile::kWo);
    // --- SiLU-gated feed-forward ---
    be.rmsnorm(xb, x, L.ffn_norm, false);
    mark(StageProfile::kNorm);
    be.gate_up_silu(L, xb, hb);
    mark(StageProfile::kGateUp);
    be.matmul_add(L.w_down, hb, s.n(), x);  // x += hb Wdown^T
    mark(StageProfile::kDown);
  }
  // Final norm and output projection, only for the rows whose logits are wanted.
  be.rmsnorm(xb, x, w.output_norm, true);
  be.output(xb, be.buffer(Backend::kLogits));
  mark(StageProfile::kOutput);
}

}  // namespace platform::llm
