// Embedding lookup: out[i][:] = row ids[i] of W dequantised to f32 (quant.cuh's decoders, so the
// values are those of ggml::dequantize_row).
#include <cuda_runtime.h>

#include <cstdint>

#include "llm_kernels.h"
#include "quant.cuh"

namespace platform::cuda {
namespace {

constexpr int kGetRowsThreads = 256;

// One CTA per output row. kGroups8: 8-element groups (always for quantized types; float types
// when rows are 16-byte aligned and cols % 8 == 0), else element by element.
template <int T, bool kGroups8>
__global__ void __launch_bounds__(kGetRowsThreads)
    get_rows_kernel(const uint8_t* __restrict__ w, int64_t rows, int64_t cols, int64_t row_bytes,
                    const int32_t* __restrict__ ids, float* __restrict__ out) {
  const int64_t i = blockIdx.x;
  // Clamp a bad id into the matrix instead of reading outside it.
  const int64_t id = min(max(static_cast<int64_t>(ids[i]), int64_t{0}), rows - 1);
  const uint8_t* row = w + id * row_bytes;
  float* o = out + i * cols;  // out: [n][cols]
  if constexpr (kGroups8) {
    for (int64_t k = static_cast<int64_t>(threadIdx.x) * 8; k < cols; k += kGetRowsThreads * 8) {
      const quant::W8 v = quant::load8<T>(row, k);
#pragma unroll
      for (int j = 0; j < 8; ++j) o[k + j] = v.q[j] * v.d + v.o;
    }
  } else {
    if constexpr (quant::is_float_type(T)) {
      for (int64_t k = threadIdx.x; k < cols; k += kGetRowsThreads) o[k] = quant::element1<T>(row, k);
    }
  }
}

template <int T>
void launch_type(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out, bool groups8,
                 cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(n));
  if (groups8) {
    get_rows_kernel<T, true><<<grid, kGetRowsThreads, 0, stream>>>(w.data, w.rows, w.cols, w.row_bytes, ids, out);
  } else if constexpr (quant::is_float_type(T)) {
    get_rows_kernel<T, false><<<grid, kGetRowsThreads, 0, stream>>>(w.data, w.rows, w.cols, w.row_bytes, ids, out);
  }
}

}  // namespace

void launch_get_rows(const DeviceMatrix& w, const int32_t* ids, int64_t n, float* out,
                     cudaStream_t stream) {
  if (n <= 0 || w.rows <= 0 || w.cols <= 0) return;
  bool groups8 = w.cols % 8 == 0;
  if (quant::is_float_type(w.type)) {
    groups8 = groups8 && w.row_bytes % 16 == 0 && (reinterpret_cast<uintptr_t>(w.data) & 15) == 0;
  }
  switch (w.type) {
    case quant::kF32: launch_type<quant::kF32>(w, ids, n, out, groups8, stream); break;
    case quant::kF16: launch_type<quant::kF16>(w, ids, n, out, groups8, stream); break;
    case quant::kBF16: launch_type<quant::kBF16>(w, ids, n, out, groups8, stream); break;
    case quant::kQ8_0: launch_type<quant::kQ8_0>(w, ids, n, out, true, stream); break;
    case quant::kQ4_0: launch_type<quant::kQ4_0>(w, ids, n, out, true, stream); break;
    case quant::kQ4_K: launch_type<quant::kQ4_K>(w, ids, n, out, true, stream); break;
    case quant::kQ6_K: launch_type<quant::kQ6_K>(w, ids, n, out, true, stream); break;
    case quant::kIQ4_NL: launch_type<quant::kIQ4_NL>(w, ids, n, out, true, stream); break;
    case quant::kIQ4_XS: launch_type<quant::kIQ4_XS>(w, ids, n, out, true, stream); break;
    case quant::kMXFP4: launch_type<quant::kMXFP4>(w, ids, n, out, true, stream); break;
    case quant::kQ5_0: launch_type<quant::kQ5_0>(w, ids, n, out, true, stream); break;
    case quant::kQ4_1: launch_type<quant::kQ4_1>(w, ids, n, out, true, stream); break;
    case quant::kQ5_1: launch_type<quant::kQ5_1>(w, ids, n, out, true, stream); break;
    case quant::kQ2_K: launch_type<quant::kQ2_K>(w, ids, n, out, true, stream); break;
    case quant::kQ3_K: launch_type<quant::kQ3_K>(w, ids, n, out, true, stream); break;
    case quant::kQ5_K: launch_type<quant::kQ5_K>(w, ids, n, out, true, stream); break;
    default: break;
  }
}

}  // namespace platform::cuda
