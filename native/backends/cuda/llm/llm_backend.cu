// The LLM engine's CUDA backend: Backend (backends/llm_backend.h) on one CUDA device (0 unless the
// options say otherwise).
//
// Memory on the device:
//   weights    one arena, every matrix in its GGUF block layout and every vector as f32,
//              uploaded once by bind() (a tied output matrix is the embedding's own copy);
//   KV cache   f16, in the engine's block layout (KvCacheLayout; llm_kernels.h KvLayout), all
//              blocks at once;
//   step       activations sized for the largest step the engine can build
//              (LlmBackendOptions::max_step_tokens), the step tables (token ids, positions,
//              sequence of each token, logit rows, block tables), workspaces, logits.
// A step uploads its tables with one copy, then every operation only enqueues kernels on one
// stream. A step whose launches depend only on (tokens, logit rows, attention span bucket) —
// every step, since all per-step data is read from the tables — is captured into a CUDA graph
// the first time and replayed afterwards (PLATFORM_CUDA_GRAPHS=0 turns this off); graphs are
// kept for decode-shaped steps (every token wants logits), the ones that repeat.
// Sampling runs on the device: only token ids come back.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "../../../ggml/types.h"
#include "../device_buffer.h"
#include "../device_info.h"
#include "llm_backend.h"
#include "llm_kernels.h"

namespace platform::cuda {
namespace {

using llm::Backend;
using llm::KvCacheLayout;
using llm::LayerWeights;
using llm::ModelConfig;
using llm::ModelWeights;
using llm::StepLayout;
using llm::WeightMatrix;

constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

DeviceMatrix device_matrix(const WeightMatrix& w) {
  DeviceMatrix m;
  m.type = static_cast<int>(w.type);
  m.rows = w.rows;
  m.cols = w.cols;
  m.row_bytes = w.row_bytes;
  m.data = w.data;
  return m;
}

// The engine runs on CUDA device 0 (instance type cuda).
constexpr int kDevice = 0;

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const LlmBackendOptions& options) : opt_(options) {
    const DeviceQuery q = query_devices();
    if (!q.error.empty()) throw std::runtime_error("no usable CUDA device: " + q.error);
    if (q.devices.empty()) throw std::runtime_error("no CUDA device found");
    device_ = q.devices[kDevice];
    PLATFORM_CUDA_CHECK(cudaSetDevice(kDevice));
    PLATFORM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const char* env = std::getenv("PLATFORM_CUDA_GRAPHS");
    graphs_enabled_ = env == nullptr || std::strcmp(env, "0") != 0;
  }

  ~CudaBackend() override {
    cudaSetDevice(kDevice);
    abort_capture();
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  std::string describe() const override {
    return "cuda: " + device_.name + " (sm_" + std::to_string(device_.major) + std::to_string(device_.minor) + ")" +
           (graphs_enabled_ ? ", graphs" : "");
  }
  const ModelWeights& weights() const override { return dev_; }
  int64_t kv_element_bytes() const override { return sizeof(__half); }
  int64_t weight_bytes() const override { return static_cast<int64_t>(weights_.bytes()); }
  int64_t scratch_bytes() const override {
    return static_cast<int64_t>(activations_.bytes() + tables_.bytes() + workspace_.bytes());
  }

  void bind(const ModelConfig& c, const ModelWeights& host) override {
    cfg_ = c;
    // The kernels here have no Q/K norms, post-norms, soft-capping, sliding windows, GELU or
    // per-layer RoPE tables yet: a model that needs one is refused rather than run wrong.
    if (c.is_moe()) throw std::runtime_error("mixture-of-experts models are not supported on the CUDA backend yet");
    if (c.architecture != "llama" && c.architecture != "qwen2") {
      throw std::runtime_error("architecture '" + c.architecture + "' is not supported on the CUDA backend yet");
    }
    if (c.rope_attn_factor != 1.0f) throw std::runtime_error("rope.scaling.attn_factor is not supported on the CUDA backend yet");
    // The attention kernels keep a head in registers and shared memory (attention.cu).
    if (c.head_dim > 256) {
      throw std::runtime_error("the CUDA backend supports head dimensions up to 256 (this model has " +
                               std::to_string(c.head_dim) + ")");
    }
    PLATFORM_CUDA_CHECK(cudaSetDevice(kDevice));
    upload_weights(host);
    allocate_step_memory();
  }

  void allocate_kv(const KvCacheLayout& layout) override {
    PLATFORM_CUDA_CHECK(cudaSetDevice(kDevice));
    kv_storage_.allocate(static_cast<size_t>(layout.bytes(sizeof(__half))), "KV cache");
    kv_.base = kv_storage_.get<__half>();
    kv_.n_blocks = layout.n_blocks;
    kv_.block_size = layout.block_size;
    kv_.kv_dim = layout.kv_dim;
  }

  void begin_step(const StepLayout& s) override {
    PLATFORM_CUDA_CHECK(cudaSetDevice(kDevice));
    // A previous step that threw between begin_step and output() left its capture open: end it,
    // or every later call on the stream fails.
    abort_capture();
    const int64_t n = s.n(), n_seqs = static_cast<int64_t>(s.blocks.size());
    if (n > cap_tokens_ || n_seqs > cap_seqs_) {
      throw std::runtime_error("step of " + std::to_string(n) + " tokens / " + std::to_string(n_seqs) +
                               " sequences exceeds the CUDA backend's capacity");
    }
    // The previous step's table copy must be done before the staging buffer is rewritten (a
    // step that neither samples nor returns logits ends without waiting for the device).
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    n_ = n;
    n_logits_ = s.n_logits();
    std::copy(base_buffers_, base_buffers_ + kBufferCount, buffers_);
    if (n_ == 1 && qkv_adjacent_) {  // k and v right after q (see matmul_qkv)
      buffers_[kK] = buffers_[kQ] + cfg_.q_dim();
      buffers_[kV] = buffers_[kK] + cfg_.kv_dim();
    }
    // Tables: [tokens | pos | seq_of | logit_rows] (cap_tokens_ each), then block tables
    // [n_seqs][max_blocks_]; only the used prefix is copied.
    int32_t* h = host_tables_.get<int32_t>();
    std::memcpy(h, s.tokens.data(), sizeof(int32_t) * n);
    std::memcpy(h + cap_tokens_, s.pos.data(), sizeof(int32_t) * n);
    std::memcpy(h + 2 * cap_tokens_, s.seq_of.data(), sizeof(int32_t) * n);
    std::memcpy(h + 3 * cap_tokens_, s.logit_rows.data(), sizeof(int32_t) * n_logits_);
    int32_t* blocks = h + 4 * cap_tokens_;
    int32_t max_len = 1;
    for (int64_t t = 0; t < n; ++t) max_len = std::max(max_len, s.pos[t] + 1);
    for (int64_t q = 0; q < n_seqs; ++q) {
      const std::vector<int32_t>& table = *s.blocks[q];
      if (static_cast<int64_t>(table.size()) > max_blocks_) throw std::runtime_error("block table longer than the context");
      std::copy(table.begin(), table.end(), blocks + q * max_blocks_);
    }
    const size_t count = static_cast<size_t>(4 * cap_tokens_ + n_seqs * max_blocks_);
    PLATFORM_CUDA_CHECK(cudaMemcpyAsync(tables_.get(), h, count * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));

    // The attention grid covers a power-of-two span >= the longest context in the step, so a
    // graph captured for one span serves every step up to it.
    span_ = 256;
    while (span_ < max_len) span_ *= 2;
    span_ = std::min<int64_t>(span_, std::max<int64_t>(max_context_, max_len));

    replay_ = nullptr;
    capturing_ = false;
    // Decode-shaped steps only (every token wants logits, at most one token per sequence): the
    // shapes that repeat. A logits-only prompt chunk would be captured once and never replayed.
    if (graphs_enabled_ && n_logits_ == n_ && n_ <= cap_seqs_) {
      const auto it = graphs_.find(key());
      if (it != graphs_.end()) {
        replay_ = it->second;  // the ops below enqueue nothing; output() launches the graph
      } else {
        PLATFORM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
        capturing_ = true;
      }
    }
  }

  float* buffer(Buffer b) override { return buffers_[b]; }

  void embed(float* x) override {
    if (replay_) return;
    launch_get_rows(device_matrix(dev_.tok_embd), d_tokens(), n_, x, stream_);
  }

  void rmsnorm(float* out, const float* x, const float* w, bool logit_rows_only) override {
    if (replay_) return;
    launch_rmsnorm(out, x, logit_rows_only ? d_logit_rows() : nullptr, w, logit_rows_only ? n_logits_ : n_, cfg_.dim,
                   cfg_.rms_eps, stream_);
  }

  void matmul_qkv(const LayerWeights& l, const float* x, float* q, float* k, float* v) override {
    if (replay_) return;
    // One token: Wq, Wk, Wv lie back to back in the arena and q, k, v back to back in kQ, so one
    // launch over the stacked [q_dim + 2 kv_dim, dim] matrix does all three (two fewer small
    // kernels per layer on the batch-1 path, where each costs a few microseconds).
    const DeviceMatrix& fused = fused_qkv_[static_cast<size_t>(&l - dev_.layers.data())];
    if (n_ == 1 && fused.data != nullptr && k == q + l.wq.rows && v == k + l.wk.rows) {
      launch_matmul(fused, x, 1, q, fused.rows, false, matmul_ws_, stream_);
      return;
    }
    launch_matmul(device_matrix(l.wq), x, n_, q, l.wq.rows, false, matmul_ws_, stream_);
    launch_matmul(device_matrix(l.wk), x, n_, k, l.wk.rows, false, matmul_ws_, stream_);
    launch_matmul(device_matrix(l.wv), x, n_, v, l.wv.rows, false, matmul_ws_, stream_);
  }

  void qkv_finish(int64_t layer, const LayerWeights& l, float* q, float* k, float* v) override {
    if (replay_) return;
    RopeParams rope;
    rope.n_heads = cfg_.n_heads;
    rope.n_kv_heads = cfg_.n_kv_heads;
    rope.head_dim = cfg_.head_dim;
    rope.rope_dim = cfg_.rope_dim;
    rope.neox = cfg_.rope_neox;
    rope.inv_freq = dev_.inv_freq;
    launch_qkv_finish(q, k, v, l.bq, l.bk, l.bv, rope, tables(), kv_, layer, stream_);
  }

  void attention(int64_t layer, const float* q, float* att) override {
    if (replay_) return;
    launch_attention(q, att, tables(), kv_, layer, cfg_.n_heads, cfg_.n_kv_heads, cfg_.head_dim, span_, attention_ws_,
                     stream_);
  }

  void matmul_add(const WeightMatrix& w, const float* x, int64_t rows, float* y) override {
    if (replay_) return;
    launch_matmul(device_matrix(w), x, rows, y, w.rows, true, matmul_ws_, stream_);
  }

  void gate_up(const LayerWeights& l, const float* x, float* h) override {
    if (replay_) return;
    launch_gate_up_silu(device_matrix(l.w_gate), device_matrix(l.w_up), x, n_, h, matmul_ws_, stream_);
  }

  void output(const float* xn, float* logits) override {
    if (!replay_) launch_matmul(device_matrix(dev_.output), xn, n_logits_, logits, cfg_.vocab, false, matmul_ws_, stream_);
    if (capturing_) {
      capturing_ = false;
      cudaGraph_t graph = nullptr;
      cudaError_t st = cudaStreamEndCapture(stream_, &graph);
      cudaGraphExec_t exec = nullptr;
      if (st == cudaSuccess) st = cudaGraphInstantiate(&exec, graph, 0);
      if (graph != nullptr) cudaGraphDestroy(graph);
      if (st != cudaSuccess) {
        // This step's work was never run (it throws: its sequences finish with an error); later
        // steps run eagerly rather than failing the same capture again and again.
        graphs_enabled_ = false;
        PLATFORM_CUDA_CHECK(st);
      }
      if (graphs_.size() >= kMaxGraphs) {  // keep memory bounded: start over
        for (auto& [k, e] : graphs_) cudaGraphExecDestroy(e);
        graphs_.clear();
      }
      graphs_[key()] = exec;
      replay_ = exec;
    }
    if (replay_) PLATFORM_CUDA_CHECK(cudaGraphLaunch(replay_, stream_));
    PLATFORM_CUDA_CHECK(cudaGetLastError());
  }

  const float* host_logits() override {
    const size_t bytes = sizeof(float) * static_cast<size_t>(n_logits_ * cfg_.vocab);
    PLATFORM_CUDA_CHECK(cudaMemcpyAsync(host_logits_.get<float>(), buffers_[kLogits], bytes, cudaMemcpyDeviceToHost, stream_));
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host_logits_.get<float>();
  }

  const float* host_hidden() override {
    const size_t bytes = sizeof(float) * static_cast<size_t>(n_logits_ * cfg_.dim);
    PLATFORM_CUDA_CHECK(cudaMemcpyAsync(host_hidden_.get<float>(), buffers_[kXb], bytes, cudaMemcpyDeviceToHost, stream_));
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host_hidden_.get<float>();
  }

  void synchronize() override {
    if (capturing_) return;  // nothing runs while a graph is being captured
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  bool samples_on_device() const override { return true; }

  // Every logits row is sampled (rows nobody asked for greedily, and ignored): one launch for
  // the step, then only the token ids come back.
  void sample(const std::vector<llm::SampleRequest>& requests, std::vector<int32_t>& tokens) override {
    const int64_t rows = n_logits_;
    SampleParams* params = host_sample_.get<SampleParams>();
    for (int64_t r = 0; r < rows; ++r) params[r] = SampleParams{};
    std::vector<int32_t> pen_tokens, pen_counts;
    for (const llm::SampleRequest& q : requests) {
      SampleParams& p = params[q.row];
      p.temperature = q.params.temperature;
      p.top_k = q.params.top_k;
      p.top_p = q.params.top_p;
      p.min_p = q.params.min_p;
      p.frequency_penalty = q.params.frequency_penalty;
      p.presence_penalty = q.params.presence_penalty;
      p.uniform = q.uniform;
      if ((p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) && q.counts != nullptr) {
        p.penalty_offset = static_cast<int32_t>(pen_tokens.size());
        for (const auto& [tok, count] : *q.counts) {
          pen_tokens.push_back(tok);
          pen_counts.push_back(count);
        }
        p.penalty_count = static_cast<int32_t>(pen_tokens.size()) - p.penalty_offset;
      }
    }
    // Grammar masks: one [vocab / 32]-word row per constrained request, uploaded with the step.
    const size_t mask_words = static_cast<size_t>((cfg_.vocab + 31) / 32);
    size_t n_masks = 0;
    for (const llm::SampleRequest& q : requests) n_masks += q.mask != nullptr;
    if (n_masks * mask_words > mask_capacity_) {
      const size_t capacity = std::max(n_masks * mask_words, 2 * mask_capacity_);
      PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
      mask_capacity_ = 0;
      masks_.allocate(sizeof(uint32_t) * capacity, "grammar masks");
      host_masks_.allocate(sizeof(uint32_t) * capacity);
      mask_capacity_ = capacity;
    }
    if (n_masks > 0) {
      uint32_t* hm = host_masks_.get<uint32_t>();
      size_t at = 0;
      for (const llm::SampleRequest& q : requests) {
        if (q.mask == nullptr) continue;
        std::copy(q.mask, q.mask + mask_words, hm + at);
        params[q.row].mask_offset = static_cast<int64_t>(at);
        at += mask_words;
      }
      PLATFORM_CUDA_CHECK(cudaMemcpyAsync(masks_.get(), hm, sizeof(uint32_t) * at, cudaMemcpyHostToDevice, stream_));
    }
    const size_t pen = pen_tokens.size();
    if (pen > penalty_capacity_) {  // rare: long generations with penalties
      const size_t capacity = std::max(pen, 2 * penalty_capacity_);
      PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
      penalty_capacity_ = 0;  // stays 0 (and grows again next time) if an allocation fails
      penalties_.allocate(2 * sizeof(int32_t) * capacity, "sampling penalties");
      host_penalties_.allocate(2 * sizeof(int32_t) * capacity);
      penalty_capacity_ = capacity;
    }
    int32_t* hp = host_penalties_.get<int32_t>();
    std::copy(pen_tokens.begin(), pen_tokens.end(), hp);
    std::copy(pen_counts.begin(), pen_counts.end(), hp + pen);
    if (pen > 0) {
      PLATFORM_CUDA_CHECK(cudaMemcpyAsync(penalties_.get(), hp, 2 * sizeof(int32_t) * pen, cudaMemcpyHostToDevice, stream_));
    }
    PLATFORM_CUDA_CHECK(cudaMemcpyAsync(d_sample_params_, params, sizeof(SampleParams) * rows, cudaMemcpyHostToDevice, stream_));
    launch_sample(buffers_[kLogits], rows, cfg_.vocab, d_sample_params_, penalties_.get<int32_t>(),
                  penalties_.get<int32_t>() + pen, n_masks > 0 ? masks_.get<uint32_t>() : nullptr, d_sampled_, sample_ws_, stream_);
    PLATFORM_CUDA_CHECK(cudaGetLastError());
    int32_t* out = host_sampled_.get<int32_t>();
    PLATFORM_CUDA_CHECK(cudaMemcpyAsync(out, d_sampled_, sizeof(int32_t) * rows, cudaMemcpyDeviceToHost, stream_));
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    tokens.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) tokens[i] = out[requests[i].row];
  }

 private:
  static constexpr size_t kMaxGraphs = 256;

  // Ends an open stream capture and drops what it recorded (nothing of it ran).
  void abort_capture() {
    if (!capturing_) return;
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
  }
  using GraphKey = std::tuple<int64_t, int64_t, int64_t>;  // tokens, logit rows, attention span
  GraphKey key() const { return {n_, n_logits_, span_}; }

  const int32_t* d_tokens() const { return tables_.get<int32_t>(); }
  const int32_t* d_logit_rows() const { return tables_.get<int32_t>() + 3 * cap_tokens_; }
  StepTables tables() const {
    StepTables t;
    t.pos = tables_.get<int32_t>() + cap_tokens_;
    t.seq_of = tables_.get<int32_t>() + 2 * cap_tokens_;
    t.blocks = tables_.get<int32_t>() + 4 * cap_tokens_;
    t.n = n_;
    t.n_seqs = cap_seqs_;  // a constant, so that graphs stay valid; kernels index by seq_of
    t.max_blocks = max_blocks_;
    return t;
  }

  // Every distinct matrix and vector into one arena (tied output shares the embedding's copy).
  void upload_weights(const ModelWeights& host) {
    std::vector<std::pair<const void*, size_t>> items;  // host pointer, bytes
    std::unordered_map<const void*, size_t> offset;
    size_t total = 0;
    auto plan = [&](const void* p, size_t bytes) {
      if (p == nullptr || offset.count(p)) return;
      offset[p] = total;
      items.emplace_back(p, bytes);
      total += align_up(bytes);
    };
    auto plan_matrix = [&](const WeightMatrix& w) {
      if (!matmul_supports(static_cast<int>(w.type))) {
        throw std::runtime_error(std::string("the CUDA backend has no kernels for tensor type ") + ggml::type_name(w.type));
      }
      plan(w.data, static_cast<size_t>(w.rows * w.row_bytes));
    };
    auto vec_bytes = [](int64_t n) { return static_cast<size_t>(n) * sizeof(float); };
    const ModelConfig& c = cfg_;
    plan_matrix(host.tok_embd);
    plan_matrix(host.output);
    plan(host.output_norm, vec_bytes(c.dim));
    plan(host.inv_freq, vec_bytes(c.rope_dim / 2));
    for (const LayerWeights& l : host.layers) {
      for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) plan_matrix(*w);
      plan(l.attn_norm, vec_bytes(c.dim));
      plan(l.ffn_norm, vec_bytes(c.dim));
      plan(l.bq, vec_bytes(c.q_dim()));
      plan(l.bk, vec_bytes(c.kv_dim()));
      plan(l.bv, vec_bytes(c.kv_dim()));
    }
    size_t free_bytes = 0, total_bytes = 0;
    PLATFORM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (total > free_bytes) {
      throw std::runtime_error("the model's weights need " + std::to_string(total >> 20) + " MiB of GPU memory but only " +
                               std::to_string(free_bytes >> 20) + " MiB are free");
    }
    weights_.allocate(total, "model weights");
    // On the backend's own stream, then waited for: a cudaMemcpy from pageable memory may return
    // before its DMA has landed, and the steps' non-blocking stream would not wait for the legacy
    // stream (nor may this thread synchronise the whole device while another engine captures).
    for (const auto& [p, bytes] : items) {
      PLATFORM_CUDA_CHECK(cudaMemcpyAsync(weights_.get() + offset[p], p, bytes, cudaMemcpyHostToDevice, stream_));
    }
    PLATFORM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    auto dev = [&](const void* p) -> const uint8_t* { return p ? weights_.get() + offset.at(p) : nullptr; };
    auto dev_f = [&](const float* p) { return reinterpret_cast<const float*>(dev(p)); };
    auto dev_m = [&](WeightMatrix w) {
      w.data = dev(w.data);
      return w;
    };
    dev_ = host;
    dev_.tok_embd = dev_m(host.tok_embd);
    dev_.output = dev_m(host.output);
    dev_.output_norm = dev_f(host.output_norm);
    dev_.inv_freq = dev_f(host.inv_freq);
    for (size_t i = 0; i < host.layers.size(); ++i) {
      const LayerWeights& h = host.layers[i];
      LayerWeights& d = dev_.layers[i];
      d.wq = dev_m(h.wq);
      d.wk = dev_m(h.wk);
      d.wv = dev_m(h.wv);
      d.wo = dev_m(h.wo);
      d.w_gate = dev_m(h.w_gate);
      d.w_up = dev_m(h.w_up);
      d.w_down = dev_m(h.w_down);
      d.attn_norm = dev_f(h.attn_norm);
      d.ffn_norm = dev_f(h.ffn_norm);
      d.bq = dev_f(h.bq);
      d.bk = dev_f(h.bk);
      d.bv = dev_f(h.bv);
    }
    // Wq, Wk, Wv were planned one after the other: where no alignment padding fell between them
    // they form one [q_dim + 2 kv_dim, dim] matrix.
    fused_qkv_.assign(dev_.layers.size(), DeviceMatrix{});
    for (size_t i = 0; i < dev_.layers.size(); ++i) {
      const LayerWeights& d = dev_.layers[i];
      const bool same = d.wq.type == d.wk.type && d.wk.type == d.wv.type && d.wq.row_bytes == d.wk.row_bytes &&
                        d.wk.row_bytes == d.wv.row_bytes && d.wq.cols == d.wk.cols && d.wk.cols == d.wv.cols;
      const bool adjacent = d.wk.data == d.wq.data + d.wq.rows * d.wq.row_bytes &&
                            d.wv.data == d.wk.data + d.wk.rows * d.wk.row_bytes;
      if (!same || !adjacent) continue;
      DeviceMatrix m = device_matrix(d.wq);
      m.rows = d.wq.rows + d.wk.rows + d.wv.rows;
      fused_qkv_[i] = m;
    }
  }

  // Activations, tables and workspaces for the largest possible step.
  void allocate_step_memory() {
    const ModelConfig& c = cfg_;
    cap_tokens_ = opt_.max_step_tokens;
    cap_seqs_ = opt_.max_step_sequences;
    max_context_ = opt_.max_context;
    max_blocks_ = (max_context_ + opt_.block_size - 1) / opt_.block_size;
    // kQ holds q_dim + 2 kv_dim per token: at one token k and v live right after q (matmul_qkv).
    const int64_t sizes[kBufferCount] = {c.dim, c.dim, c.q_dim() + 2 * c.kv_dim(), c.kv_dim(), c.kv_dim(), c.q_dim(), c.ffn_dim, c.vocab};
    size_t total = 0;
    size_t offsets[kBufferCount];
    for (int b = 0; b < kBufferCount; ++b) {
      offsets[b] = total;
      total += align_up(sizeof(float) * static_cast<size_t>(sizes[b] * cap_tokens_));
    }
    const size_t sample_params_at = total;
    total += align_up(sizeof(SampleParams) * static_cast<size_t>(cap_tokens_));
    const size_t sampled_at = total;
    total += align_up(sizeof(int32_t) * static_cast<size_t>(cap_tokens_));
    activations_.allocate(total, "activations");
    for (int b = 0; b < kBufferCount; ++b) base_buffers_[b] = reinterpret_cast<float*>(activations_.get() + offsets[b]);
    std::copy(base_buffers_, base_buffers_ + kBufferCount, buffers_);
    // The aliased k and v must keep the 256-byte alignment the kernels' vector loads assume.
    qkv_adjacent_ = c.q_dim() % 64 == 0 && c.kv_dim() % 64 == 0;
    d_sample_params_ = reinterpret_cast<SampleParams*>(activations_.get() + sample_params_at);
    d_sampled_ = reinterpret_cast<int32_t*>(activations_.get() + sampled_at);

    const size_t table_ints = static_cast<size_t>(4 * cap_tokens_ + cap_seqs_ * max_blocks_);
    tables_.allocate(table_ints * sizeof(int32_t), "step tables");
    host_tables_.allocate(table_ints * sizeof(int32_t));

    const size_t mm = align_up(matmul_workspace_bytes(cap_tokens_, std::max(c.dim, std::max(c.ffn_dim, c.q_dim()))));
    const size_t at = align_up(attention_workspace_bytes(cap_tokens_, c.n_heads, c.head_dim, max_context_));
    const size_t sm = align_up(sample_workspace_bytes(cap_tokens_, c.vocab));
    workspace_.allocate(mm + at + sm, "workspaces");
    matmul_ws_ = Workspace{workspace_.get(), mm};
    attention_ws_ = Workspace{workspace_.get() + mm, at};
    sample_ws_ = Workspace{workspace_.get() + mm + at, sm};

    host_logits_.allocate(sizeof(float) * static_cast<size_t>(cap_tokens_ * c.vocab));
    host_hidden_.allocate(sizeof(float) * static_cast<size_t>(cap_tokens_ * c.dim));
    host_sample_.allocate(sizeof(SampleParams) * static_cast<size_t>(cap_tokens_));
    host_sampled_.allocate(sizeof(int32_t) * static_cast<size_t>(cap_tokens_));
    penalty_capacity_ = 4096;
    penalties_.allocate(2 * sizeof(int32_t) * penalty_capacity_, "sampling penalties");
    host_penalties_.allocate(2 * sizeof(int32_t) * penalty_capacity_);
  }

  LlmBackendOptions opt_;
  DeviceInfo device_;
  cudaStream_t stream_ = nullptr;
  bool graphs_enabled_ = true;
  ModelConfig cfg_;
  ModelWeights dev_;
  DeviceBuffer weights_, kv_storage_, activations_, tables_, workspace_, penalties_, masks_;
  PinnedBuffer host_tables_, host_logits_, host_hidden_, host_sample_, host_sampled_, host_penalties_, host_masks_;
  size_t mask_capacity_ = 0;  // words of masks_ and host_masks_
  KvLayout kv_;
  float* base_buffers_[kBufferCount] = {};  // each buffer's own allocation
  float* buffers_[kBufferCount] = {};       // this step's (kK, kV inside kQ at one token)
  bool qkv_adjacent_ = false;
  std::vector<DeviceMatrix> fused_qkv_;     // per layer: Wq|Wk|Wv as one matrix, or data null
  SampleParams* d_sample_params_ = nullptr;
  int32_t* d_sampled_ = nullptr;
  Workspace matmul_ws_, attention_ws_, sample_ws_;
  size_t penalty_capacity_ = 0;
  int64_t cap_tokens_ = 0, cap_seqs_ = 0, max_context_ = 0, max_blocks_ = 0;
  // The current step.
  int64_t n_ = 0, n_logits_ = 0, span_ = 0;
  bool capturing_ = false;
  cudaGraphExec_t replay_ = nullptr;
  std::map<GraphKey, cudaGraphExec_t> graphs_;
};

}  // namespace

std::unique_ptr<llm::Backend> make_llm_backend(const LlmBackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace platform::cuda
