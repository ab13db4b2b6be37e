// Weight matmul dispatch (the "Weights" section of llm_kernels.h): small n goes to the GEMV
// kernels (matmul_vec.cu), larger n to the tensor-core tiles (matmul_tile.cu).
//
// Threshold: n <= kVecMaxTokens (4). The GEMV is f32 FMA on dequantised weights and at n = 4
// already uses ~65% of the FP32 issue rate needed to keep up with HBM; from 5 tokens on the
// tiles (W read once per 64 tokens, MMA on f16) cost about one pass over W whatever n <= 64 is.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "llm_kernels.h"
#include "matmul_kernels.cuh"
#include "quant.cuh"

namespace platform::cuda {

bool matmul_supports(int type) {
  switch (type) {
    case quant::kF32:
    case quant::kF16:
    case quant::kBF16:
    case quant::kQ8_0:
    case quant::kQ4_0:
    case quant::kQ4_K:
    case quant::kQ4_1:
    case quant::kQ5_1:
    case quant::kQ5_0:
    case quant::kQ2_K:
    case quant::kQ3_K:
    case quant::kQ5_K:
    case quant::kQ6_K:
    case quant::kIQ4_NL:
    case quant::kIQ4_XS:
    case quant::kMXFP4: return true;
    default: return false;
  }
}

// The tile path's f16 copy of x: [max_n][max_cols], padded to 256 bytes.
size_t matmul_workspace_bytes(int64_t max_n, int64_t max_cols) {
  if (max_n <= 0 || max_cols <= 0) return 0;
  const size_t bytes = static_cast<size_t>(max_n) * static_cast<size_t>(max_cols) * sizeof(__half);
  return (bytes + 255) & ~static_cast<size_t>(255);
}

namespace {

// The tile path needs the workspace (16-byte aligned, n * cols halves) and 8-element groups.
__half* tile_workspace(const DeviceMatrix& w, int64_t n, Workspace ws) {
  if (n <= detail::kVecMaxTokens || !detail::tile_supported(w)) return nullptr;
  if (ws.data == nullptr || (reinterpret_cast<uintptr_t>(ws.data) & 15) != 0) return nullptr;
  if (ws.bytes < static_cast<size_t>(n) * static_cast<size_t>(w.cols) * sizeof(__half)) return nullptr;
  return static_cast<__half*>(ws.data);
}

}  // namespace

void launch_matmul(const DeviceMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                   bool accumulate, Workspace ws, cudaStream_t stream) {
  if (n <= 0 || w.rows <= 0 || !matmul_supports(w.type)) return;
  if (__half* xh = tile_workspace(w, n, ws)) {
    detail::launch_matmul_tile(w, nullptr, x, n, y, ldy, accumulate, xh, stream);
  } else {
    // Small n, or (a caller bug) a workspace too small: the GEMV, one pass per 4 tokens.
    detail::launch_matmul_vec(w, nullptr, x, n, y, ldy, accumulate, stream);
  }
}

void launch_gate_up_silu(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x,
                         int64_t n, float* h, Workspace ws, cudaStream_t stream) {
  if (n <= 0 || gate.rows <= 0 || !matmul_supports(gate.type)) return;
  const bool up_ok = (reinterpret_cast<uintptr_t>(up.data) & 15) == 0;  // same checks as gate
  __half* xh = up_ok ? tile_workspace(gate, n, ws) : nullptr;
  if (xh) {
    detail::launch_matmul_tile(gate, &up, x, n, h, gate.rows, false, xh, stream);
  } else {
    detail::launch_matmul_vec(gate, &up, x, n, h, gate.rows, false, stream);
  }
}

}  // namespace platform::cuda
