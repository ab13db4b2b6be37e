#include "matmul.h"

#include <algorithm>

#include "../core/gemm.h"
#include "../core/thread_pool.h"

namespace platform::llm {
namespace {

// Fewer multiply-adds than this per thread and waking the pool costs more than it saves.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 15;

int threads_for(const WeightMatrix& w, int64_t n, int max_threads) {
  const int64_t by_work = std::max<int64_t>(1, w.rows * w.cols * n / kMinWorkPerThread);
  return static_cast<int>(std::min<int64_t>({static_cast<int64_t>(max_threads), by_work, w.rows}));
}

// Runs dot(r, t) for every row r and activation row t, rows split across threads.
template <typename RowFn>
void for_rows(const WeightMatrix& w, int64_t n, int threads, RowFn&& fn) {
  parallel_for(0, w.rows, threads_for(w, n, threads), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) fn(r);
  });
}

template <typename Block, typename ActBlock, typename Dot>
void matmul_quant(const WeightMatrix& w, const float* x, int64_t n, float* y, MatmulContext& ctx,
                  int act_block_elems, void (*quantize)(const float*, ActBlock*, int64_t),
                  Dot dot) {
  const int64_t act_blocks = w.cols / act_block_elems;
  ctx.act.resize(static_cast<size_t>(n * act_blocks) * sizeof(ActBlock));
  ActBlock* act = reinterpret_cast<ActBlock*>(ctx.act.data());
  parallel_for(0, n, std::min<int64_t>(ctx.threads, std::max<int64_t>(1, n / 4)),
               [&](int64_t t0, int64_t t1) {
                 for (int64_t t = t0; t < t1; ++t) quantize(x + t * w.cols, act + t * act_blocks, w.cols);
               });
  for_rows(w, n, ctx.threads, [&](int64_t r) {
    const Block* row = reinterpret_cast<const Block*>(w.row(r));
    for (int64_t t = 0; t < n; ++t) y[t * w.rows + r] = dot(w.cols, row, act + t * act_blocks);
  });
}

}  // namespace

MatmulContext::MatmulContext(int threads_, SimdLevel level_)
    : threads(threads_), level(level_), kernels(&cpu::select_quant_kernels(level_)) {}

void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, MatmulContext& ctx) {
  if (n <= 0) return;
  const cpu::QuantKernels& k = *ctx.kernels;
  switch (w.type) {
    case cpu::GgmlType::kF32: {
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
    case cpu::GgmlType::kF16:
    case cpu::GgmlType::kBF16:
      parallel_for(0, w.rows, threads_for(w, n, ctx.threads), [&](int64_t r0, int64_t r1) {
        std::vector<float> buf(static_cast<size_t>(w.cols));
        for (int64_t r = r0; r < r1; ++r) {
          if (w.type == cpu::GgmlType::kF16) {
            k.f16_to_f32(reinterpret_cast<const uint16_t*>(w.row(r)), buf.data(), w.cols);
          } else {
            cpu::dequantize_row(w.type, w.row(r), buf.data(), w.cols);
          }
          for (int64_t t = 0; t < n; ++t) y[t * w.rows + r] = k.dot_f32(w.cols, buf.data(), x + t * w.cols);
        }
      });
      return;
    case cpu::GgmlType::kQ8_0:
      matmul_quant<cpu::BlockQ8_0, cpu::BlockQ8A>(w, x, n, y, ctx, cpu::kQK, cpu::quantize_row_q8a, k.dot_q8_0);
      return;
    case cpu::GgmlType::kQ4_0:
      matmul_quant<cpu::BlockQ4_0, cpu::BlockQ8A>(w, x, n, y, ctx, cpu::kQK, cpu::quantize_row_q8a, k.dot_q4_0);
      return;
    case cpu::GgmlType::kQ4_K:
      matmul_quant<cpu::BlockQ4_K, cpu::BlockQ8_K>(w, x, n, y, ctx, cpu::kQK_K, cpu::quantize_row_q8_k, k.dot_q4_k);
      return;
    case cpu::GgmlType::kQ6_K:
      matmul_quant<cpu::BlockQ6_K, cpu::BlockQ8_K>(w, x, n, y, ctx, cpu::kQK_K, cpu::quantize_row_q8_k, k.dot_q6_k);
      return;
  }
}

}  // namespace platform::llm
