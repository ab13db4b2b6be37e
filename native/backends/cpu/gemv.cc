// Matrix-vector products: SIMD dispatch and threading. GEMV reads every matrix element exactly
// once, so it is bound by memory bandwidth; the kernels only need to keep the loads streaming.
//   no transpose: each thread takes a contiguous range of rows (independent dot products);
//   transpose:    each thread takes a contiguous range of columns, i.e. its own slice of y.
#include <algorithm>

#include "../../core/thread_pool.h"
#include "gemm_kernels.h"
#include "gemv_impl.h"

namespace platform::detail {
namespace {

const cpu::GemvKernel* select_gemv_kernel(SimdLevel level) {
  const cpu::GemvKernel* k = nullptr;
  switch (level) {
    case SimdLevel::kAvx512: k = cpu::gemv_kernel_avx512(); break;
    case SimdLevel::kAvx2: k = cpu::gemv_kernel_avx2(); break;
    case SimdLevel::kNeon: k = cpu::gemv_kernel_neon(); break;
    case SimdLevel::kScalar: break;
  }
  return k != nullptr ? k : cpu::gemv_kernel_scalar();
}

// Below this many matrix elements per thread the wake-up costs more than the extra bandwidth.
constexpr int64_t kMinElementsPerThread = int64_t{1} << 16;
// Column slices handed to threads are multiples of this (a cache line of floats) so that two
// threads never write the same line of y.
constexpr int64_t kColumnGrain = 16;

}  // namespace

void gemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* S, int64_t lds,
          const float* x, float beta, float* y, SimdLevel level, int threads) {
  const int64_t out = trans ? cols : rows;
  const int64_t reduce = trans ? rows : cols;
  if (out <= 0) return;
  if (reduce == 0 || alpha == 0.0f) {
    for (int64_t i = 0; i < out; ++i) y[i] = beta == 0.0f ? 0.0f : beta * y[i];
    return;
  }
  const cpu::GemvKernel& kern = *select_gemv_kernel(level);
  const int64_t by_work = std::max<int64_t>(1, rows * cols / kMinElementsPerThread);
  if (!trans) {
    const int t = static_cast<int>(std::min<int64_t>(threads, by_work));
    parallel_for(0, rows, t, [&](int64_t r0, int64_t r1) {
      kern.rows(r1 - r0, cols, S + r0 * lds, lds, x, alpha, beta, y + r0);
    });
    return;
  }
  const int64_t grains = (cols + kColumnGrain - 1) / kColumnGrain;
  const int t =
      static_cast<int>(std::min<int64_t>({static_cast<int64_t>(threads), by_work, grains}));
  parallel_for(0, grains, t, [&](int64_t g0, int64_t g1) {
    const int64_t c0 = g0 * kColumnGrain, c1 = std::min(cols, g1 * kColumnGrain);
    kern.cols(rows, c1 - c0, S + c0, lds, x, alpha, beta, y + c0);
  });
}

}  // namespace platform::detail
