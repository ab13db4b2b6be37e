// Internal launchers shared by matmul.cu (dispatch) and the kernels' files; not part of the API.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "llm_kernels.h"

namespace platform::cuda::detail {

// Any n, any shape (matmul_vec.cu). Tokens go through the GEMV kernel in chunks of
// kVecMaxTokens; rows that are not 16-byte aligned (float types) or cols % 8 != 0 take a slow
// per-element kernel. up != nullptr: h = silu(w . x) * (up . x) into y (ldy = w.rows,
// accumulate ignored).
constexpr int64_t kVecMaxTokens = 4;
void launch_matmul_vec(const DeviceMatrix& w, const DeviceMatrix* up, const float* x, int64_t n,
                       float* y, int64_t ldy, bool accumulate, cudaStream_t stream);

// Tensor-core tiles (matmul_tile.cu). Needs tile_supported() and xh: [n][w.cols] f16 scratch
// (the workspace) that the launcher fills from x.
bool tile_supported(const DeviceMatrix& w);
void launch_matmul_tile(const DeviceMatrix& w, const DeviceMatrix* up, const float* x, int64_t n,
                        float* y, int64_t ldy, bool accumulate, __half* xh, cudaStream_t stream);

}  // namespace platform::cuda::detail
