// Launchers of the LLM engine's CUDA kernels (the CUDA backend, llm_backend.cu, calls these).
//
// Every pointer is device memory. Every launcher only enqueues work on `stream` and returns: no
// synchronisation, no allocation, no host<->device copy, so that a whole decode step can be
// captured in a CUDA graph and replayed. Everything a launcher needs that varies per step
// (positions, block tables, sequence lengths) is read from device arrays, so that a captured
// graph stays valid as long as the token count n (and the grid it implies) is the same.
// Launchers never throw; bad arguments are the caller's bug (the backend checks shapes at load).
//
// Shapes are written [rows][cols], row-major.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace platform::cuda {

// ---------------------------------------------------------------------------------------------
// Weights (quant formats: matmul.cu, matmul_vec.cu, matmul_tile.cu, get_rows.cu, quant.cuh)
// ---------------------------------------------------------------------------------------------

// A weight matrix on the device in the GGUF's own block layout: `rows` rows of `row_bytes` bytes,
// each the GGML encoding of `cols` values. `type` is ggml::Type's numeric value (F32 0, F16 1,
// Q4_0 2, Q8_0 8, Q4_K 12, Q6_K 14, BF16 30). `data` is 256-byte aligned (cudaMalloc).
struct DeviceMatrix {
  int type = 0;
  int64_t rows = 0, cols = 0, row_bytes = 0;
  const uint8_t* data = nullptr;
};

// Scratch device memory a launcher may use; the caller sizes it with the *_workspace_bytes
// function for the largest shapes it will launch.
struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// True when launch_matmul / launch_gate_up_silu / launch_get_rows handle this GGML type.
bool matmul_supports(int type);
// Workspace for launch_matmul and launch_gate_up_silu with up to max_n rows of x of max_cols.
size_t matmul_workspace_bytes(int64_t max_n, int64_t max_cols);

// y[t][r] = (accumulate ? y[t][r] : 0) + sum_k W[r][k] * x[t][k]    for t < n, r < w.rows
//   x: [n][w.cols] f32, y: [n][ldy] f32 with ldy >= w.rows.
// Small n (decode): one pass over W at full memory bandwidth. Large n (prefill, big decode
// batches): tiles on the tensor cores, W read once per tile of tokens.
void launch_matmul(const DeviceMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                   bool accumulate, Workspace ws, cudaStream_t stream);

// h[t][r] = silu(gate_r . x_t) * (up_r . x_t)        gate, up: same shape and type; h: [n][gate.rows]
// (the SiLU-gated feed-forward's first half in one pass, silu(a) = a / (1 + exp(-a))).
void launch_gate_up_silu(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x,
                         int64_t n, float* h, Workspace ws, cudaStream_t stream);

// out[i][:] = row ids[i] of w, dequantized to f32 (the token embedding lookup). out: [n][w.cols]
void launch_get_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out,
                     cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// Normalisation, RoPE, KV cache, attention, sampling (norm_rope.cu, attention.cu, sample.cu,
// elementwise.cu)
// ---------------------------------------------------------------------------------------------

// The KV cache on the device, f16. Element i of the K (kind 0) or V (kind 1) vector of `slot`
// in `block` of `layer` is at
//   base[(((layer * n_blocks + block) * 2 + kind) * block_size + slot) * kv_dim + i].
struct KvLayout {
  __half* base = nullptr;
  int64_t n_blocks = 0, block_size = 0, kv_dim = 0;
};

// Where each token of a step sits. Token t belongs to sequence seq_of[t] and is at position
// pos[t]; it attends to positions 0..pos[t] of its sequence, position p being in block
// blocks[seq_of[t] * max_blocks + p / block_size], slot p % block_size. All device arrays.
struct StepTables {
  const int32_t* pos = nullptr;     // [n]
  const int32_t* seq_of = nullptr;  // [n]
  const int32_t* blocks = nullptr;  // [n_seqs][max_blocks]
  int64_t n = 0, n_seqs = 0, max_blocks = 0;
};

// out[i][:] = x_i / sqrt(mean(x_i^2) + eps) * w, with x_i = x[rows ? rows[i] : i][:] (rows picks
// the tokens whose logits are wanted). out, x: [.][dim]; accumulate the sum of squares in f32
// or better.
void launch_rmsnorm(float* out, const float* x, const int32_t* rows, const float* w, int64_t n,
                    int64_t dim, float eps, cudaStream_t stream);

struct RopeParams {
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t rope_dim = 0;             // leading dimensions of each head that rotate (even)
  bool neox = false;                // qwen2: pairs (x[i], x[i + rope_dim/2]); llama: (x[2i], x[2i+1])
  const float* inv_freq = nullptr;  // device [rope_dim / 2]; angle = pos * inv_freq[i], in double
};

// q: [n][n_heads * head_dim], k, v: [n][n_kv_heads * head_dim]. Adds the biases (each may be
// null: [n_heads * head_dim] / [kv_dim]), rotates q and k by their token's position, and writes
// k and v (as f16) into the cache slots of (seq_of[t], pos[t]) in `layer`. q is updated in place.
void launch_qkv_finish(float* q, const float* k, const float* v, const float* bq, const float* bk,
                       const float* bv, const RopeParams& rope, const StepTables& step, KvLayout kv,
                       int64_t layer, cudaStream_t stream);

// att[t][h * hd ..] = softmax_p(q[t][h] . K[p] / sqrt(hd)) . V[p]  over p = 0..pos[t] of the
// token's sequence, query head h reading KV head h / (n_heads / n_kv_heads). A long context is
// split across thread blocks (split-K, flash-decoding) and the partial results combined.
// max_context bounds pos[t] + 1 (the grid is sized from it, so a graph stays valid).
size_t attention_workspace_bytes(int64_t max_n, int64_t n_heads, int64_t head_dim, int64_t max_context);
void launch_attention(const float* q, float* att, const StepTables& step, KvLayout kv, int64_t layer,
                      int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, int64_t max_context,
                      Workspace ws, cudaStream_t stream);

// x[i] += y[i] for i < count
void launch_add(float* x, const float* y, int64_t count, cudaStream_t stream);

// One row's sampling settings (same meaning and order as native/llm/sampler.cc):
//   penalties -> (temperature <= 0: first argmax) -> temperature -> top-k -> softmax -> top-p
//   -> min-p -> draw with `uniform` in [0, 1) over the kept mass.
// Penalties: logit[tok] -= frequency * count + presence for the row's (token, count) pairs,
// penalty_tokens/penalty_counts[penalty_offset .. penalty_offset + penalty_count).
struct SampleParams {
  float temperature = 0.0f;
  int32_t top_k = 0;      // 0: off
  float top_p = 1.0f;     // 1: off
  float min_p = 0.0f;     // 0: off
  float frequency_penalty = 0.0f, presence_penalty = 0.0f;
  int32_t penalty_offset = 0, penalty_count = 0;
  double uniform = 0.0;
  int64_t mask_offset = -1;  // >= 0: the row's grammar mask starts at masks[mask_offset] (bit t of word t >> 5)
};

// tokens[r] = the token drawn from logits row r (rows of [rows][vocab], which the kernel may
// overwrite). params: [rows], penalty arrays as above, masks: the grammar masks (null when no row
// has one; a masked-out token gets -inf after the penalties); all device memory.
size_t sample_workspace_bytes(int64_t rows, int64_t vocab);
void launch_sample(float* logits, int64_t rows, int64_t vocab, const SampleParams* params,
                   const int32_t* penalty_tokens, const int32_t* penalty_counts, const uint32_t* masks, int32_t* tokens,
                   Workspace ws, cudaStream_t stream);

}  // namespace platform::cuda
