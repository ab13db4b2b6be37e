// The per-ISA kernel tables behind gemm_f32 / gemv_f32. One .cc file per ISA fills each table;
// a table getter returns nullptr when this build or architecture has no such kernels.
#pragma once

#include <cstdint>

#include "../../core/simd_target.h"

namespace platform::cpu {

// Cache lines of a future block that a micro-kernel call should prefetch (into L2) while it
// computes. The driver hands each call a few; the kernel spreads them over its kc steps so the
// memory requests trickle out instead of stalling the core in a burst.
struct PrefetchList {
  const void* const* lines = nullptr;
  int64_t count = 0;
};

class PrefetchTrickle {
 public:
  PLATFORM_ALWAYS_INLINE PrefetchTrickle(PrefetchList list, int64_t kc)
      : next_line_(list.lines), end_(list.lines + list.count) {
    const int64_t step = kc / (list.count + 1);
    step_ = step > 0 ? step : 1;
    next_k_ = step_;
  }
  // Call once per k step.
  PLATFORM_ALWAYS_INLINE void at(int64_t k) {
    if (k == next_k_ && next_line_ != end_) {
      prefetch(*next_line_++);
      next_k_ += step_;
    }
  }
  // Call after the k loop: issues whatever did not fit (more lines than k steps).
  PLATFORM_ALWAYS_INLINE void finish() {
    while (next_line_ != end_) prefetch(*next_line_++);
  }

 private:
  static PLATFORM_ALWAYS_INLINE void prefetch(const void* line) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(line, 0, 2);  // prefetcht1 / prfm pldl2keep: only has to beat DRAM
#else
    (void)line;
#endif
  }
  const void* const* next_line_;
  const void* const* end_;
  int64_t step_;
  int64_t next_k_;
};

// Computes the register tile AB[MR,NR] = sum_k a[k][MR] * b[k][NR] over kc steps of packed panels
//   a: [kc][MR] (one A micro-panel), b: [kc][NR] (one B micro-panel), both 64-byte aligned
// and writes its top-left mr x nr corner: C[i*ldc + j] = alpha * AB[i][j] + beta * C[i*ldc + j]
// (beta == 0: C is not read). mr <= MR, nr <= NR. It also prefetches `prefetch` (see above).
using GemmMicroKernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                 float alpha, float beta, int64_t mr, int64_t nr,
                                 PrefetchList prefetch);

// Packs a block of `lanes` lanes into ceil(lanes / W) panels of [kc][W], panel p at
// dst + p * W * kc: panel p holds dst[p][k][l] = src[(p * W + l) * lane_stride + k * k_stride],
// zero for lanes past the end. A blocks have W = MR lanes (rows of op(A)); B blocks have W = NR
// lanes (columns of op(B)). dst is 64-byte aligned.
using PackBlockFn = void (*)(const float* src, int64_t lane_stride, int64_t k_stride, int64_t kc,
                             int64_t lanes, int64_t W, float* dst);

struct GemmKernel {
  const char* name;
  int64_t mr, nr;      // register tile
  int64_t kc, mc, nc;  // cache blocks: kc x nr B micro-panel in L1, mc x kc A block in L2,
                       // kc x nc B block in L3
  GemmMicroKernel micro;
  PackBlockFn pack;
};

const GemmKernel* gemm_kernel_scalar();
const GemmKernel* gemm_kernel_avx2();
const GemmKernel* gemm_kernel_avx512();
const GemmKernel* gemm_kernel_neon();

// No transpose: y[i] = alpha * dot(A[i, 0:cols], x) + beta * y[i] for i < rows.
using GemvRowsKernel = void (*)(int64_t rows, int64_t cols, const float* A, int64_t lda,
                                const float* x, float alpha, float beta, float* y);
// Transpose: y[j] = alpha * sum_i x[i] * A[i, j] + beta * y[j] for j < cols.
using GemvColsKernel = void (*)(int64_t rows, int64_t cols, const float* A, int64_t lda,
                                const float* x, float alpha, float beta, float* y);

struct GemvKernel {
  const char* name;
  GemvRowsKernel rows;
  GemvColsKernel cols;
};

const GemvKernel* gemv_kernel_scalar();
const GemvKernel* gemv_kernel_avx2();
const GemvKernel* gemv_kernel_avx512();
const GemvKernel* gemv_kernel_neon();

// Portable packing, used by the scalar and NEON tables and for the x86 edge cases.
void pack_block_generic(const float* src, int64_t lane_stride, int64_t k_stride, int64_t kc,
                        int64_t lanes, int64_t W, float* dst);
// x86: 8x8 AVX transposes for the strided case (k_stride == 1), the hot path when packing
// transB weights stored [N,K]. Only call when avx2 is supported.
void pack_block_avx2(const float* src, int64_t lane_stride, int64_t k_stride, int64_t kc,
                     int64_t lanes, int64_t W, float* dst);

}  // namespace platform::cpu
