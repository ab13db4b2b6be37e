#include "matmul.h"

#include <algorithm>
#include <atomic>

#include "gemm.h"

namespace platform::cpu {
namespace {

// Fewer multiply-adds than this per thread and waking the pool costs more than it saves.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 15;
// Multiply-adds per work item: big enough that taking an item (an atomic add) costs nothing,
// small enough that the last items even out the threads.
constexpr int64_t kItemWork = int64_t{1} << 22;
// Activation bytes of one token chunk: they are reread for every panel of rows, from L2 / L3.
constexpr int64_t kChunkActBytes = int64_t{512} << 10;

int threads_for(const WeightMatrix& w, int64_t n, int max_threads) {
  const int64_t by_work = std::max<int64_t>(1, w.rows * w.cols * n / kMinWorkPerThread);
  return static_cast<int>(std::min<int64_t>({static_cast<int64_t>(max_threads), by_work, w.rows}));
}

// Weights with an integer dot product against 8-bit activations: Q8A (32-element blocks) or Q8_K
// (256-element super-blocks: the K-quants and IQ4_XS).
bool q8_k_activations(ggml::Type t) {
  return t == ggml::Type::kQ2_K || t == ggml::Type::kQ3_K || t == ggml::Type::kQ4_K ||
         t == ggml::Type::kQ5_K || t == ggml::Type::kQ6_K || t == ggml::Type::kIQ4_XS;
}
bool quantized(ggml::Type t) {
  return t == ggml::Type::kQ8_0 || t == ggml::Type::kQ4_0 || t == ggml::Type::kQ4_1 ||
         t == ggml::Type::kQ5_0 || t == ggml::Type::kQ5_1 || t == ggml::Type::kIQ4_NL ||
         t == ggml::Type::kMXFP4 || q8_k_activations(t);
}

// One dot product per row and token: y[t * ldy + r] = dot(row r, activation row t).
template <typename Block, typename Act>
void dots(float (*dot)(int64_t, const Block*, const Act*), int64_t cols, const uint8_t* w,
          int64_t row_bytes, int64_t nr, const Act* a, int64_t a_stride, int64_t nt, float* y,
          int64_t ldy) {
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t t = 0; t < nt; ++t)
      y[t * ldy + r] = dot(cols, reinterpret_cast<const Block*>(w + r * row_bytes), a + t * a_stride);
}

// F32 / F16 / BF16 weights: gemm_f32 / gemv_f32, or rows converted to f32 and dotted.
void matmul_float(const WeightMatrix& w, const float* x, int64_t n, float* y, MatmulContext& ctx) {
  const QuantKernels& k = *ctx.kernels;
  if (w.type == ggml::Type::kF32) {
    GemmOptions opt;
    opt.simd = ctx.level;
    opt.threads = threads_for(w, n, ctx.threads);
    const float* W = reinterpret_cast<const float*>(w.data);
    if (n == 1) {
      gemv_f32(false, w.rows, w.cols, 1.0f, W, w.cols, x, 0.0f, y, opt);
    } else {
      gemm_f32(false, true, n, w.rows, w.cols, 1.0f, x, w.cols, W, w.cols, 0.0f, y, w.rows, opt);
    }
    return;
  }
  parallel_for(0, w.rows, threads_for(w, n, ctx.threads), [&](int64_t r0, int64_t r1) {
    std::vector<float> buf(static_cast<size_t>(w.cols));
    for (int64_t r = r0; r < r1; ++r) {
      if (w.type == ggml::Type::kF16) {
        k.f16_to_f32(reinterpret_cast<const uint16_t*>(w.row(r)), buf.data(), w.cols);
      } else {
        ggml::dequantize_row(w.type, w.row(r), buf.data(), w.cols);
      }
      for (int64_t t = 0; t < n; ++t) y[t * w.rows + r] = k.dot_f32(w.cols, buf.data(), x + t * w.cols);
    }
  });
}

// Rows [r0, r1) x tokens [t0, t1) of one quantized product.
void run_item(const WeightMatrix& w, const uint8_t* act, int64_t r0, int64_t r1, int64_t t0,
              int64_t t1, float* y, const QuantKernels& k) {
  const int64_t cols = w.cols;
  const uint8_t* wr = w.row(r0);
  float* yr = y + t0 * w.rows + r0;
  const int64_t nr = r1 - r0, nt = t1 - t0;
  // act holds Q8_K rows for the K-quants and IQ4_XS, Q8A rows for the 32-element block types
  const int64_t sa = cols / kQK, sk = cols / kQK_K, rb = w.row_bytes, ld = w.rows;
  const auto* a = q8_k_activations(w.type) ? nullptr : reinterpret_cast<const BlockQ8A*>(act) + t0 * sa;
  const auto* ak = q8_k_activations(w.type) ? reinterpret_cast<const BlockQ8_K*>(act) + t0 * sk : nullptr;
  switch (w.type) {
    case ggml::Type::kQ8_0:
      if (k.gemm_q8_0) return k.gemm_q8_0(cols, wr, rb, nr, a, sa, nt, yr, ld);
      return dots(k.dot_q8_0, cols, wr, rb, nr, a, sa, nt, yr, ld);
    case ggml::Type::kQ4_0: return dots(k.dot_q4_0, cols, wr, rb, nr, a, sa, nt, yr, ld);
    case ggml::Type::kQ4_1: return dots(k.dot_q4_1, cols, wr, rb, nr, a, sa, nt, yr, ld);
    case ggml::Type::kQ5_0: return dots(k.dot_q5_0, cols, wr, rb, nr, a, sa, nt, yr, ld);
    case ggml::Type::kQ5_1: return dots(k.dot_q5_1, cols, wr, rb, nr, a, sa, nt, yr, ld);
    case ggml::Type::kQ2_K: return dots(k.dot_q2_k, cols, wr, rb, nr, ak, sk, nt, yr, ld);
    case ggml::Type::kQ3_K: return dots(k.dot_q3_k, cols, wr, rb, nr, ak, sk, nt, yr, ld);
    case ggml::Type::kQ4_K:
      if (k.gemm_q4_k) return k.gemm_q4_k(cols, wr, rb, nr, ak, sk, nt, yr, ld);
      return dots(k.dot_q4_k, cols, wr, rb, nr, ak, sk, nt, yr, ld);
    case ggml::Type::kQ5_K:
      if (k.gemm_q5_k) return k.gemm_q5_k(cols, wr, rb, nr, ak, sk, nt, yr, ld);
      return dots(k.dot_q5_k, cols, wr, rb, nr, ak, sk, nt, yr, ld);
    case ggml::Type::kQ6_K:
      if (k.gemm_q6_k) return k.gemm_q6_k(cols, wr, rb, nr, ak, sk, nt, yr, ld);
      return dots(k.dot_q6_k, cols, wr, rb, nr, ak, sk, nt, yr, ld);
    case ggml::Type::kIQ4_NL: return dots(k.dot_iq4_nl, cols, wr, rb, nr, a, sa, nt, yr, ld);
    case ggml::Type::kIQ4_XS: return dots(k.dot_iq4_xs, cols, wr, rb, nr, ak, sk, nt, yr, ld);
    case ggml::Type::kMXFP4: return dots(k.dot_mxfp4, cols, wr, rb, nr, a, sa, nt, yr, ld);
    default:
      return;
  }
}

}  // namespace

void parallel_dynamic(int64_t count, int threads, FunctionRef<void(int64_t)> fn) {
  if (count <= 0) return;
  const int t = static_cast<int>(std::min<int64_t>(std::max(threads, 1), count));
  if (t == 1) {
    for (int64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  run_tasks(t, [&](int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < count;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(i);
    }
  });
}

MatmulContext::MatmulContext(int threads_, SimdLevel level_)
    : threads(threads_), level(level_), kernels(&select_quant_kernels(level_)) {}

void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatmulContext& ctx) {
  const WeightMatrix* ws[] = {&w};
  float* ys[] = {y};
  matmul_multi(ws, ys, 1, x, n, ctx);
}

void matmul_multi(const WeightMatrix* const* ws, float* const* ys, int count, const float* x,
                  int64_t n, MatmulContext& ctx) {
  if (n <= 0 || count <= 0) return;
  const QuantKernels& k = *ctx.kernels;
  const int64_t cols = ws[0]->cols;
  bool need_a = false, need_k = false;
  int64_t work = 0;
  for (int i = 0; i < count; ++i) {
    const WeightMatrix& w = *ws[i];
    if (!quantized(w.type)) {
      matmul_float(w, x, n, ys[i], ctx);
      continue;
    }
    (q8_k_activations(w.type) ? need_k : need_a) = true;
    work += w.rows * w.cols * n;
  }
  if (!need_a && !need_k) return;

  // Quantize the activations once per format (rows split across threads when there are many).
  const int64_t a_row = cols / kQK * static_cast<int64_t>(sizeof(BlockQ8A));
  const int64_t k_row = cols / kQK_K * static_cast<int64_t>(sizeof(BlockQ8_K));
  if (need_a) ctx.act.resize(static_cast<size_t>(n * a_row));
  if (need_k) ctx.act_k.resize(static_cast<size_t>(n * k_row));
  auto quantize = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (need_a) k.quantize_q8a(x + t * cols, reinterpret_cast<BlockQ8A*>(ctx.act.data() + t * a_row), cols);
      if (need_k) k.quantize_q8_k(x + t * cols, reinterpret_cast<BlockQ8_K*>(ctx.act_k.data() + t * k_row), cols);
    }
  };
  if (n >= 64) {
    parallel_for(0, n, ctx.threads, quantize);
  } else {
    quantize(0, n);
  }

  // Items: token chunk (outer, so the threads share it in L3) x matrix x group of rows.
  const int64_t act_row = (need_a ? a_row : 0) + (need_k ? k_row : 0);
  const int64_t chunk = std::clamp<int64_t>(kChunkActBytes / std::max<int64_t>(act_row, 1), 8, 256);
  const int64_t tc = std::min(n, chunk);
  const int64_t n_chunks = (n + tc - 1) / tc;
  // Rows per item: a multiple of 16 (the tile kernels take 16-row panels).
  int64_t group = kItemWork / std::max<int64_t>(1, tc * cols);
  group = std::clamp<int64_t>((group + 15) / 16 * 16, 16, 256);
  struct Span {
    int m;
    int64_t first_item;
  };
  std::vector<Span> spans;
  int64_t per_chunk = 0;
  for (int i = 0; i < count; ++i) {
    if (!quantized(ws[i]->type)) continue;
    spans.push_back({i, per_chunk});
    per_chunk += (ws[i]->rows + group - 1) / group;
  }
  const int threads = static_cast<int>(std::min<int64_t>(ctx.threads, std::max<int64_t>(1, work / kMinWorkPerThread)));
  parallel_dynamic(n_chunks * per_chunk, threads, [&](int64_t item) {
    const int64_t c = item / per_chunk, in_chunk = item % per_chunk;
    size_t s = spans.size() - 1;
    while (spans[s].first_item > in_chunk) --s;
    const WeightMatrix& w = *ws[spans[s].m];
    const int64_t r0 = (in_chunk - spans[s].first_item) * group;
    const int64_t r1 = std::min(w.rows, r0 + group);
    const int64_t t0 = c * tc, t1 = std::min(n, t0 + tc);
    run_item(w, q8_k_activations(w.type) ? ctx.act_k.data() : ctx.act.data(), r0, r1, t0, t1, ys[spans[s].m], k);
  });
}

}  // namespace platform::cpu
