#include "llm_backend.h"

#include <algorithm>
#include <cmath>

#include "../../core/thread_pool.h"

namespace platform::cpu {

CpuBackend::CpuBackend(int threads, SimdLevel level) : mm_(threads, level) {}

std::string CpuBackend::describe() const { return mm_.kernels->name; }

void CpuBackend::bind(const ModelConfig& config, const ModelWeights& host) {
  cfg_ = config;
  w_ = host;  // the mapped file and the model's f32 vectors, as they are
  rope_freqs_.clear();
  for (const LayerWeights& l : w_.layers) {
    const float* f = l.inv_freq != nullptr ? l.inv_freq : w_.inv_freq;
    if (std::find(rope_freqs_.begin(), rope_freqs_.end(), f) == rope_freqs_.end()) rope_freqs_.push_back(f);
  }
  if (rope_freqs_.empty()) rope_freqs_.push_back(w_.inv_freq);
  rope_cos_.resize(rope_freqs_.size());
  rope_sin_.resize(rope_freqs_.size());
}

size_t CpuBackend::rope_table(const float* inv_freq) const {
  if (inv_freq == nullptr) inv_freq = w_.inv_freq;
  return static_cast<size_t>(std::find(rope_freqs_.begin(), rope_freqs_.end(), inv_freq) - rope_freqs_.begin());
}

void CpuBackend::allocate_kv(const KvCacheLayout& layout) {
  kv_layout_ = layout;
  kv_.reset(new float[static_cast<size_t>(layout.bytes(sizeof(float)) / static_cast<int64_t>(sizeof(float)))]);
}

int64_t CpuBackend::scratch_bytes() const {
  size_t n = tmp_.capacity() + up_.capacity();
  for (const auto* v : {&moe_logits_, &moe_weight_, &moe_x_, &moe_h_, &moe_u_, &moe_out_}) n += v->capacity();
  for (size_t j = 0; j < rope_cos_.size(); ++j) n += rope_cos_[j].capacity() + rope_sin_[j].capacity();
  for (const auto& b : buf_) n += b.capacity();
  return static_cast<int64_t>(n * sizeof(float));
}

void CpuBackend::begin_step(const StepLayout& step) {
  step_ = &step;
  const int64_t n = step.n(), half = cfg_.rope_dim / 2;
  const int64_t sizes[kBufferCount] = {n * cfg_.dim, n * cfg_.dim, n * cfg_.q_dim(), n * cfg_.kv_dim(),
                                       n * cfg_.kv_dim(), n * cfg_.q_dim(), cfg_.is_moe() ? 0 : n * cfg_.ffn_dim,
                                       step.n_logits() * cfg_.vocab};
  for (int b = 0; b < kBufferCount; ++b) buf_[b].resize(static_cast<size_t>(sizes[b]));
  tmp_.resize(static_cast<size_t>(n * cfg_.dim));
  if (cfg_.is_moe()) {
    const int64_t k = cfg_.n_experts_used, rows = std::max(n, k);
    moe_logits_.resize(static_cast<size_t>(n * cfg_.n_experts));
    moe_weight_.resize(static_cast<size_t>(n * k));
    moe_expert_.resize(static_cast<size_t>(n * k));
    moe_slots_.resize(static_cast<size_t>(n * k));
    moe_first_.resize(static_cast<size_t>(cfg_.n_experts + 1));
    moe_x_.resize(static_cast<size_t>(n * cfg_.dim));
    moe_h_.resize(static_cast<size_t>(rows * cfg_.expert_ffn_dim));
    moe_u_.resize(static_cast<size_t>(rows * cfg_.expert_ffn_dim));
    moe_out_.resize(static_cast<size_t>(n * k * cfg_.dim));
  } else {
    up_.resize(static_cast<size_t>(n * cfg_.ffn_dim));
  }
  // RoPE angles pos * inv_freq[i] (in double: positions reach 1e5), shared by every head and
  // every layer of the same frequencies; cos and sin carry LongRoPE's attention factor.
  const double mscale = cfg_.rope_attn_factor;
  for (size_t j = 0; j < rope_freqs_.size(); ++j) {
    std::vector<float>& cs = rope_cos_[j];
    std::vector<float>& sn = rope_sin_[j];
    cs.resize(static_cast<size_t>(n * half));
    sn.resize(static_cast<size_t>(n * half));
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(step.pos[t]) * rope_freqs_[j][i];
        cs[t * half + i] = static_cast<float>(mscale * std::cos(a));
        sn[t * half + i] = static_cast<float>(mscale * std::sin(a));
      }
    }
  }
}

void CpuBackend::embed(float* x) {
  const StepLayout& s = *step_;
  for (int64_t t = 0; t < s.n(); ++t) {
    float* xt = x + t * cfg_.dim;
    ggml::dequantize_row(w_.tok_embd.type, w_.tok_embd.row(s.tokens[t]), xt, cfg_.dim);
    if (cfg_.embed_scale != 1.0f) {
      for (int64_t i = 0; i < cfg_.dim; ++i) xt[i] *= cfg_.embed_scale;
    }
  }
}

namespace {

// out[dim] = x / rms(x) * w (out may be x).
void rmsnorm_row(float* out, const float* x, const float* w, int64_t dim, float eps) {
  double ss = 0.0;
  for (int64_t k = 0; k < dim; ++k) ss += static_cast<double>(x[k]) * x[k];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
  for (int64_t k = 0; k < dim; ++k) out[k] = x[k] * scale * w[k];
}

}  // namespace

// out[i, dim] = x / rms(x) * w, per row (rows split across threads when there are many).
void CpuBackend::rmsnorm(float* out, const float* x, const float* w, bool logit_rows_only) {
  const StepLayout& s = *step_;
  const int64_t dim = cfg_.dim, n = logit_rows_only ? s.n_logits() : s.n();
  const float eps = cfg_.rms_eps;
  parallel_for(0, n, n >= 64 ? mm_.threads : 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      rmsnorm_row(out + i * dim, x + (logit_rows_only ? s.logit_rows[i] : i) * dim, w, dim, eps);
    }
  });
}

void CpuBackend::matmul_qkv(const LayerWeights& l, const float* x, float* q, float* k, float* v) {
  // q[n, n_heads * hd], k[n, n_kv_heads * hd], v[n, n_kv_heads * hd]: one quantization of x.
  const WeightMatrix* ws[] = {&l.wq, &l.wk, &l.wv};
  float* ys[] = {q, k, v};
  matmul_multi(ws, ys, 3, x, step_->n(), mm_);
}

namespace {

void add_bias(float* x, const float* b, int64_t n, int64_t d) {
  if (b == nullptr) return;
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

void CpuBackend::qkv_finish(int64_t layer, const LayerWeights& l, float* q, float* k, float* v) {
  const StepLayout& s = *step_;
  const ModelConfig& c = cfg_;
  const int64_t n = s.n(), kvd = c.kv_dim();
  add_bias(q, l.bq, n, c.q_dim());
  add_bias(k, l.bk, n, kvd);
  add_bias(v, l.bv, n, kvd);
  // qwen3 / gemma3: each head of q and k RMS-normed over head_dim before RoPE.
  if (l.q_norm != nullptr) {
    for (int64_t r = 0; r < n * c.n_heads; ++r) rmsnorm_row(q + r * c.head_dim, q + r * c.head_dim, l.q_norm, c.head_dim, c.rms_eps);
  }
  if (l.k_norm != nullptr) {
    for (int64_t r = 0; r < n * c.n_kv_heads; ++r) rmsnorm_row(k + r * c.head_dim, k + r * c.head_dim, l.k_norm, c.head_dim, c.rms_eps);
  }
  const size_t j = rope_table(l.inv_freq);
  rope(q, n, c.n_heads, c.head_dim, c.rope_dim, c.rope_neox, rope_cos_[j].data(), rope_sin_[j].data());
  rope(k, n, c.n_kv_heads, c.head_dim, c.rope_dim, c.rope_neox, rope_cos_[j].data(), rope_sin_[j].data());
  // Write every token's K/V first: later tokens of a prefill chunk attend to earlier ones.
  const int64_t bs = kv_layout_.block_size;
  for (int64_t t = 0; t < n; ++t) {
    const std::vector<int32_t>& blocks = *s.blocks[s.seq_of[t]];
    const int64_t p = s.pos[t];
    std::copy_n(k + t * kvd, kvd, kv_k(layer, blocks[p / bs], p % bs));
    std::copy_n(v + t * kvd, kvd, kv_v(layer, blocks[p / bs], p % bs));
  }
}

// att[t, h*hd..] = softmax(attn_scale * q_t,h . K[p0..pos_t]) . V[p0..pos_t], causal by position
// (p0 = 0, or pos_t - window + 1 on a sliding-window layer; scores soft-capped where the model
// says), each query head h reading KV head h / (n_heads / n_kv_heads). One task per token and KV head:
// the group's query heads share every K and V row the kernel loads. Tasks go out longest first
// (the last tokens of a prefill chunk see the most positions) to threads that take them from a
// counter.
void CpuBackend::attention(int64_t layer, const float* q, float* att) {
  const StepLayout& s = *step_;
  const ModelConfig& c = cfg_;
  const QuantKernels& k = *mm_.kernels;
  const int64_t n = s.n();
  const int64_t hd = c.head_dim, group = c.n_heads / c.n_kv_heads, bs = kv_layout_.block_size;
  const float scale = c.attn_scale;
  const int64_t window = w_.layers[layer].window;
  auto first_pos = [&](int64_t t) -> int64_t { return window > 0 ? std::max<int64_t>(0, s.pos[t] - window + 1) : 0; };
  int64_t work = 0;
  for (int64_t t = 0; t < n; ++t) work += (s.pos[t] + 1 - first_pos(t)) * hd * c.n_heads;
  // Below ~256k multiply-adds (a short context) waking a second thread costs more than it saves.
  const int t_count = static_cast<int>(std::min<int64_t>(mm_.threads, std::max<int64_t>(1, work / (int64_t{1} << 18))));
  parallel_dynamic(n * c.n_kv_heads, t_count, [&](int64_t task) {
    static thread_local std::vector<float> scratch;
    static thread_local std::vector<const float*> kb, vb;
    const int64_t t = n - 1 - task / c.n_kv_heads, g = task % c.n_kv_heads;
    const std::vector<int32_t>& blocks = *s.blocks[s.seq_of[t]];
    const int64_t p0 = first_pos(t), len = s.pos[t] + 1 - p0;
    const int64_t h0 = (t * c.n_heads + g * group) * hd;
    scratch.resize(static_cast<size_t>(group * len));
    if (p0 == 0) {
      const int64_t nblk = (len + bs - 1) / bs;
      kb.resize(static_cast<size_t>(nblk));
      vb.resize(static_cast<size_t>(nblk));
      for (int64_t b = 0; b < nblk; ++b) {
        kb[b] = kv_k(layer, blocks[b], 0) + g * hd;
        vb[b] = kv_v(layer, blocks[b], 0) + g * hd;
      }
      k.attend(len, bs, c.kv_dim(), kb.data(), vb.data(), q + h0, group, hd, scale, c.attn_softcap, scratch.data(), att + h0);
    } else {
      // A window that starts inside a block: one row pointer per position (blocks of 1).
      kb.resize(static_cast<size_t>(len));
      vb.resize(static_cast<size_t>(len));
      for (int64_t i = 0; i < len; ++i) {
        const int64_t p = p0 + i;
        kb[i] = kv_k(layer, blocks[p / bs], p % bs) + g * hd;
        vb[i] = kv_v(layer, blocks[p / bs], p % bs) + g * hd;
      }
      k.attend(len, 1, c.kv_dim(), kb.data(), vb.data(), q + h0, group, hd, scale, c.attn_softcap, scratch.data(), att + h0);
    }
  });
}

void CpuBackend::matmul_add(const WeightMatrix& w, const float* x, int64_t rows, float* y) {
  float* tmp = tmp_.data();  // [rows, w.rows]
  matmul(w, x, rows, tmp, mm_);
  const int64_t count = rows * w.rows;
  for (int64_t i = 0; i < count; ++i) y[i] += tmp[i];
}

void CpuBackend::matmul_norm_add(const WeightMatrix& w, const float* x, int64_t rows, const float* norm, float* y) {
  float* tmp = tmp_.data();  // [rows, w.rows]
  matmul(w, x, rows, tmp, mm_);
  for (int64_t t = 0; t < rows; ++t) {
    float* r = tmp + t * w.rows;
    rmsnorm_row(r, r, norm, w.rows, cfg_.rms_eps);
    for (int64_t i = 0; i < w.rows; ++i) y[t * w.rows + i] += r[i];
  }
}

void CpuBackend::gate_up(const LayerWeights& l, const float* x, float* h) {
  const int64_t n = step_->n(), ff = cfg_.ffn_dim;
  const WeightMatrix* ws[] = {&l.w_gate, &l.w_up};
  float* ys[] = {h, up_.data()};  // h[n, ff] gate, up[n, ff]
  matmul_multi(ws, ys, 2, x, n, mm_);
  // Elementwise work under ~100 us is not worth waking the pool for.
  parallel_for(0, n, n >= 64 ? mm_.threads : 1, [&](int64_t t0, int64_t t1) {
    if (cfg_.ffn_activation == ModelConfig::FfnActivation::kGeluTanh) {
      mm_.kernels->gelu_mul(h + t0 * ff, up_.data() + t0 * ff, (t1 - t0) * ff);
    } else {
      mm_.kernels->silu_mul(h + t0 * ff, up_.data() + t0 * ff, (t1 - t0) * ff);
    }
  });
}

namespace {

// A token's routing, as llama.cpp's build_moe_ffn does it for qwen3moe and Mixtral: p =
// softmax(logits[n_experts]); the k largest (lower index first on a tie); their weights p_e /
// sum of the k (the sum clamped to f16's smallest normal, as llama.cpp clamps it).
void route_token(const float* logits, int64_t n_experts, int64_t k, int32_t* experts, float* weights) {
  // A NaN logit (a broken file) ranks last instead of breaking the sort's ordering.
  auto key = [&](int32_t e) { return std::isnan(logits[e]) ? -INFINITY : logits[e]; };
  static thread_local std::vector<int32_t> order;
  order.resize(static_cast<size_t>(n_experts));
  for (int64_t e = 0; e < n_experts; ++e) order[e] = static_cast<int32_t>(e);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    const float ka = key(a), kb = key(b);
    return ka > kb || (ka == kb && a < b);
  });
  double mx = -INFINITY, total = 0.0, sum = 0.0;
  for (int64_t e = 0; e < n_experts; ++e) mx = std::max<double>(mx, key(static_cast<int32_t>(e)));
  for (int64_t e = 0; e < n_experts; ++e) total += std::exp(static_cast<double>(key(static_cast<int32_t>(e))) - mx);
  auto prob = [&](int32_t e) { return std::exp(static_cast<double>(key(e)) - mx) / total; };
  for (int64_t r = 0; r < k; ++r) sum += prob(order[r]);
  sum = std::max(sum, 6.103515625e-5);
  for (int64_t r = 0; r < k; ++r) {
    experts[r] = order[r];
    weights[r] = static_cast<float>(prob(order[r]) / sum);
  }
}

}  // namespace

// y[t] += sum_r w[t][r] * down_e(silu(gate_e x[t]) * up_e x[t]), e = expert[t][r]. Each chosen
// expert's matrices are read once per step: its tokens' rows are gathered and go through its
// gate/up (one matmul_multi) and down together; in a one-token step (decoding one sequence) the
// k experts' gate and up share the one input and run as a single matmul_multi.
void CpuBackend::moe_ffn(const LayerWeights& l, const float* x, float* y) {
  const int64_t n = step_->n(), dim = cfg_.dim, ne = cfg_.n_experts, k = cfg_.n_experts_used, ff = cfg_.expert_ffn_dim;
  float* logits = moe_logits_.data();  // [n][ne]
  matmul(l.moe_router, x, n, logits, mm_);
  for (int64_t t = 0; t < n; ++t) route_token(logits + t * ne, ne, k, moe_expert_.data() + t * k, moe_weight_.data() + t * k);
  auto view = [&](const WeightMatrix& m, int64_t e, int64_t rows) {  // expert e's matrix
    WeightMatrix v = m;
    v.rows = rows;
    v.data = m.data + e * rows * m.row_bytes;
    return v;
  };
  float* out = moe_out_.data();  // [n * k][dim]: slot t * k + r
  if (n == 1) {
    moe_views_.clear();
    std::vector<const WeightMatrix*> ws;
    std::vector<float*> ys;
    for (int64_t r = 0; r < k; ++r) {
      moe_views_.push_back(view(l.moe_gate, moe_expert_[r], ff));
      moe_views_.push_back(view(l.moe_up, moe_expert_[r], ff));
    }
    for (int64_t r = 0; r < k; ++r) {
      ws.push_back(&moe_views_[2 * r]);
      ys.push_back(moe_h_.data() + r * ff);
      ws.push_back(&moe_views_[2 * r + 1]);
      ys.push_back(moe_u_.data() + r * ff);
    }
    matmul_multi(ws.data(), ys.data(), static_cast<int>(ws.size()), x, 1, mm_);
    mm_.kernels->silu_mul(moe_h_.data(), moe_u_.data(), k * ff);
    // The k down projections in one parallel region rather than k (each is small: waking the
    // threads k times per layer cost more than the products on a busy machine). Items are
    // blocks of an expert's rows, each a one-thread matmul of a row view (its input quantized
    // per item: ff_exp values, little next to the block's rows).
    constexpr int64_t kBlockRows = 128;
    const int64_t blocks = (dim + kBlockRows - 1) / kBlockRows;
    const int threads = static_cast<int>(std::min<int64_t>(mm_.threads, std::max<int64_t>(1, k * dim * ff >> 15)));
    const SimdLevel level = mm_.level;
    parallel_dynamic(k * blocks, threads, [&](int64_t item) {
      static thread_local MatmulContext local(1, level);
      if (local.level != level) local = MatmulContext(1, level);
      const int64_t r = item / blocks, first = (item % blocks) * kBlockRows, rows = std::min(kBlockRows, dim - first);
      WeightMatrix block = view(l.moe_down, moe_expert_[r], dim);
      block.data += first * block.row_bytes;
      block.rows = rows;
      matmul(block, moe_h_.data() + r * ff, 1, out + r * dim + first, local);
    });
  } else {
    // Bucket the slots by expert (counting sort: slots of one expert stay in token order).
    std::fill(moe_first_.begin(), moe_first_.end(), 0);
    for (int64_t i = 0; i < n * k; ++i) ++moe_first_[moe_expert_[i] + 1];
    for (int64_t e = 0; e < ne; ++e) moe_first_[e + 1] += moe_first_[e];
    std::vector<int32_t> next(moe_first_.begin(), moe_first_.end() - 1);
    for (int64_t i = 0; i < n * k; ++i) moe_slots_[next[moe_expert_[i]]++] = static_cast<int32_t>(i);
    for (int64_t e = 0; e < ne; ++e) {
      const int32_t* slots = moe_slots_.data() + moe_first_[e];
      const int64_t m = moe_first_[e + 1] - moe_first_[e];
      if (m == 0) continue;
      for (int64_t i = 0; i < m; ++i) std::copy_n(x + (slots[i] / k) * dim, dim, moe_x_.data() + i * dim);
      const WeightMatrix gate = view(l.moe_gate, e, ff), up = view(l.moe_up, e, ff);
      const WeightMatrix* ws[] = {&gate, &up};
      float* ys[] = {moe_h_.data(), moe_u_.data()};  // [m][ff]
      matmul_multi(ws, ys, 2, moe_x_.data(), m, mm_);
      mm_.kernels->silu_mul(moe_h_.data(), moe_u_.data(), m * ff);
      float* tmp = tmp_.data();  // [m][dim]
      matmul(view(l.moe_down, e, dim), moe_h_.data(), m, tmp, mm_);
      for (int64_t i = 0; i < m; ++i) std::copy_n(tmp + i * dim, dim, out + static_cast<int64_t>(slots[i]) * dim);
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    float* yt = y + t * dim;
    for (int64_t r = 0; r < k; ++r) {
      const float w = moe_weight_[t * k + r];
      const float* o = out + (t * k + r) * dim;
      for (int64_t i = 0; i < dim; ++i) yt[i] += w * o[i];
    }
  }
}

void CpuBackend::output(const float* xn, float* logits) {
  matmul(w_.output, xn, step_->n_logits(), logits, mm_);  // logits[n_logits, vocab]
  if (cfg_.final_softcap > 0.0f) {
    const float cap = cfg_.final_softcap;
    const int64_t count = step_->n_logits() * cfg_.vocab;
    for (int64_t i = 0; i < count; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
  }
}

}  // namespace platform::cpu
