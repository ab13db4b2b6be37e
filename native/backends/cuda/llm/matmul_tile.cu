// Large-n matmul (prefill, batched decode): tiles on the tensor cores (wmma m16n16k16, f16
// inputs, f32 accumulation), W read once per tile of kBN = 64 tokens.
//
// Precision: x is converted once per launch to f16 (into the workspace) and each weight tile is
// dequantised to f16 in shared memory. f16 rather than bf16: 11-bit significands (about 5e-4
// relative per element, vs 4e-3 for bf16), and LLM activations after RMSNorm and the SiLU-gated
// products, like dequantised weights, lie well inside f16's range (|v| < 65504). Expected error
// is ~1e-3 relative; the small-n path (matmul_vec.cu) is f32-exact.
//
// CTA: 256 threads (8 warps), kWRows weight rows x kBN tokens, k in steps of kBK = 128.
//   kWRows = 64 (or 32 when that would leave fewer than ~2 CTAs per SM: 4096-row matrices at
//   n <= 128). Gate-up: the first kWRows/2 rows of the tile are gate rows, the rest the same up
//   rows, so the output tile is kWRows/2 rows.
//   Warps: (kWRows/16) along rows x (8 / (kWRows/16)) along tokens, each 16 rows x 32 (or 16)
//   tokens = 2 (or 1) accumulator fragments.
// Per step: x tile [64][128] f16 by cp.async (L2-resident), weight tile decoded from registers
// into As; the raw weight bytes of the next step are loaded before the MMAs of this one so that
// DRAM latency overlaps the tensor-core work. Grid: x = token tiles (fastest, so the CTAs sharing
// a weight tile run together and W comes from DRAM once), y = row tiles.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cstdint>

#include "llm_kernels.h"
#include "matmul_kernels.cuh"
#include "quant.cuh"

namespace platform::cuda::detail {
namespace {

using quant::Codec;
using quant::W8;
namespace wmma = nvcuda::wmma;

constexpr int kTileThreads = 256;
constexpr int kBN = 64;         // tokens per CTA
constexpr int kBK = 128;        // k per step
constexpr int kLds = kBK + 8;   // smem row stride (halves): 16-byte aligned rows, banks shifted
constexpr int kLdc = kBN + 4;   // output staging row stride (floats)
constexpr int kTargetCtas = 2 * 132;  // H200: 132 SMs

struct TileArgs {
  const uint8_t* w0;  // [rows][row_bytes]: the matrix, or gate
  uint64_t up_delta;  // gate-up: address of up minus address of gate (mod 2^64)
  int64_t rows, cols, row_bytes, n;
  const __half* xh;  // [n][cols]
  float* y;          // [n][ldy]
  int64_t ldy;
  bool accumulate;
};

__device__ __forceinline__ float silu(float a) { return a / (1.0f + expf(-a)); }

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ uint32_t pack_half2(float a, float b) {
  const __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// minBlocks 2: caps registers at 128 so that 2 CTAs fit per SM (kTargetCtas assumes it; Q6_K
// gate-up used 136 and ran 1 CTA = 8 warps per SM).
template <int T, int kWRows, bool kGateUp>
__global__ void __launch_bounds__(kTileThreads, 2) matmul_tile_kernel(TileArgs a) {
  using C = Codec<T>;
  constexpr int kOut = kGateUp ? kWRows / 2 : kWRows;  // output rows per CTA
  constexpr int kWarpsM = kWRows / 16, kWarpsN = 8 / kWarpsM;
  constexpr int kWarpTok = kBN / kWarpsN, kFN = kWarpTok / 16;
  constexpr int kGroupsPerRow = kBK / 8;                           // 8-element groups per row
  constexpr int kGroups = kWRows * kGroupsPerRow / kTileThreads;  // per thread per step
  static_assert(kWarpsM * kWarpsN == 8 && kFN >= 1, "warp layout");
  static_assert(kWRows * kLdc * 4 <= (kWRows + kBN) * kLds * 2, "Cs fits in As + Bs");

  // As [kWRows][kLds] f16, Bs [kBN][kLds] f16; after the k loop the same bytes hold
  // Cs [kWRows][kLdc] f32.
  __shared__ __align__(128) unsigned char smem[(kWRows + kBN) * kLds * 2];
  __half* As = reinterpret_cast<__half*>(smem);
  __half* Bs = As + kWRows * kLds;
  float* Cs = reinterpret_cast<float*>(smem);

  const int64_t tok0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kOut;
  const int tid = threadIdx.x, warp = tid >> 5;
  const int wm = warp % kWarpsM, wn = warp / kWarpsM;

  // This thread's weight groups i: g = tid + 256 i, tile row g / kGroupsPerRow, k offset
  // 8 * (g % kGroupsPerRow) (the same tile row and offset in every step).
  auto group_row = [&](int i) { return (tid + i * kTileThreads) / kGroupsPerRow; };
  auto group_k = [&](int i) { return 8 * ((tid + i * kTileThreads) % kGroupsPerRow); };
  const uint8_t* rowp[kGroups];
#pragma unroll
  for (int i = 0; i < kGroups; ++i) {
    const int tr = group_row(i);
    const int64_t r = min(r0 + (kGateUp ? tr % kOut : tr), a.rows - 1);  // tail: clamp
    // Up rows via a byte offset from w0 (a select between two pointer parameters makes nvcc
    // spill them to the stack).
    const uint64_t up = (kGateUp && tr >= kOut) ? a.up_delta : 0;
    rowp[i] = reinterpret_cast<const uint8_t*>(reinterpret_cast<uint64_t>(a.w0) + up) + r * a.row_bytes;
  }
  typename C::Raw raw[kGroups] = {};
  auto load_a = [&](int64_t k0) {
#pragma unroll
    for (int i = 0; i < kGroups; ++i) {
      if (k0 + group_k(i) < a.cols) raw[i] = C::load_raw(rowp[i], k0 + group_k(i));
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFN];
#pragma unroll
  for (int f = 0; f < kFN; ++f) wmma::fill_fragment(acc[f], 0.0f);

  const int64_t steps = (a.cols + kBK - 1) / kBK;
  load_a(0);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t k0 = s * kBK;
    __syncthreads();  // the previous step's MMAs are done with As / Bs

    // x tile: Bs[t][0..kBK) = xh[tok0 + t][k0 ..], zeros past n or cols.
    for (int c = tid; c < kBN * kGroupsPerRow; c += kTileThreads) {
      const int t = c / kGroupsPerRow, kc = 8 * (c % kGroupsPerRow);
      __half* dst = Bs + t * kLds + kc;
      if (tok0 + t < a.n && k0 + kc < a.cols) {
        cp_async16(dst, a.xh + (tok0 + t) * a.cols + k0 + kc);
      } else {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
      }
    }
    cp_async_commit();

    // weight tile: decode the bytes loaded during the previous step into As.
#pragma unroll
    for (int i = 0; i < kGroups; ++i) {
      uint4 p = make_uint4(0, 0, 0, 0);
      const int tk = group_k(i);
      if (k0 + tk < a.cols) {
        const W8 w = C::decode(raw[i], k0 + tk);
        p.x = pack_half2(fmaf(w.q[0], w.d, w.o), fmaf(w.q[1], w.d, w.o));
        p.y = pack_half2(fmaf(w.q[2], w.d, w.o), fmaf(w.q[3], w.d, w.o));
        p.z = pack_half2(fmaf(w.q[4], w.d, w.o), fmaf(w.q[5], w.d, w.o));
        p.w = pack_half2(fmaf(w.q[6], w.d, w.o), fmaf(w.q[7], w.d, w.o));
      }
      *reinterpret_cast<uint4*>(As + group_row(i) * kLds + tk) = p;
    }
    if (s + 1 < steps) load_a(k0 + kBK);  // next step's weight bytes: in flight during the MMAs

    cp_async_wait_all();
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
      wmma::load_matrix_sync(fa, As + (wm * 16) * kLds + kk, kLds);
#pragma unroll
      for (int f = 0; f < kFN; ++f) {
        // B (k x tokens) col-major = Bs[token][k].
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
        wmma::load_matrix_sync(fb, Bs + (wn * kWarpTok + f * 16) * kLds + kk, kLds);
        wmma::mma_sync(acc[f], fa, fb, acc[f]);
      }
    }
  }

  __syncthreads();  // As / Bs -> Cs
#pragma unroll
  for (int f = 0; f < kFN; ++f) {
    wmma::store_matrix_sync(Cs + (wm * 16) * kLdc + wn * kWarpTok + f * 16, acc[f], kLdc,
                            wmma::mem_row_major);  // Cs[tile row][token]
  }
  __syncthreads();

  // y[t][r]: consecutive threads take consecutive rows (coalesced stores).
  for (int idx = tid; idx < kOut * kBN; idx += kTileThreads) {
    const int r = idx % kOut, t = idx / kOut;
    const int64_t row = r0 + r, tok = tok0 + t;
    if (row >= a.rows || tok >= a.n) continue;
    float* out = a.y + tok * a.ldy + row;
    const float v = Cs[r * kLdc + t];
    if constexpr (kGateUp) {
      *out = silu(v) * Cs[(r + kOut) * kLdc + t];
    } else {
      *out = a.accumulate ? *out + v : v;
    }
  }
}

// xh[i] = x[i] as f16 (round to nearest), i < count.
__global__ void convert_x_kernel(const float* __restrict__ x, __half* __restrict__ xh, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    xh[i] = __float2half_rn(x[i]);
  }
}

template <int T, int kWRows, bool kGateUp>
void launch_tile_cfg(TileArgs a, cudaStream_t stream) {
  constexpr int64_t kOut = kGateUp ? kWRows / 2 : kWRows;
  constexpr int64_t kMaxRowTiles = 65535;  // gridDim.y limit: larger matrices in several grids
  const unsigned token_tiles = static_cast<unsigned>((a.n + kBN - 1) / kBN);
  const int64_t rows = a.rows;
  for (int64_t rb = 0; rb < rows; rb += kMaxRowTiles * kOut) {
    TileArgs p = a;
    p.rows = std::min<int64_t>(kMaxRowTiles * kOut, rows - rb);
    p.w0 = a.w0 + rb * a.row_bytes;
    p.y = a.y + rb;
    const dim3 grid(token_tiles, static_cast<unsigned>((p.rows + kOut - 1) / kOut));
    matmul_tile_kernel<T, kWRows, kGateUp><<<grid, kTileThreads, 0, stream>>>(p);
  }
}

template <int T, bool kGateUp>
void launch_tile_type(const TileArgs& a, cudaStream_t stream) {
  // 64 weight rows per CTA unless that leaves the GPU under-filled.
  constexpr int64_t kOut64 = kGateUp ? 32 : 64;
  const int64_t ctas64 = (a.rows + kOut64 - 1) / kOut64 * ((a.n + kBN - 1) / kBN);
  if (ctas64 >= kTargetCtas) {
    launch_tile_cfg<T, 64, kGateUp>(a, stream);
  } else {
    launch_tile_cfg<T, 32, kGateUp>(a, stream);
  }
}

template <bool kGateUp>
void launch_tile(int type, const TileArgs& a, cudaStream_t stream) {
  switch (type) {
    case quant::kF32: launch_tile_type<quant::kF32, kGateUp>(a, stream); break;
    case quant::kF16: launch_tile_type<quant::kF16, kGateUp>(a, stream); break;
    case quant::kBF16: launch_tile_type<quant::kBF16, kGateUp>(a, stream); break;
    case quant::kQ8_0: launch_tile_type<quant::kQ8_0, kGateUp>(a, stream); break;
    case quant::kQ4_0: launch_tile_type<quant::kQ4_0, kGateUp>(a, stream); break;
    case quant::kQ4_K: launch_tile_type<quant::kQ4_K, kGateUp>(a, stream); break;
    case quant::kQ6_K: launch_tile_type<quant::kQ6_K, kGateUp>(a, stream); break;
    case quant::kIQ4_NL: launch_tile_type<quant::kIQ4_NL, kGateUp>(a, stream); break;
    case quant::kIQ4_XS: launch_tile_type<quant::kIQ4_XS, kGateUp>(a, stream); break;
    case quant::kMXFP4: launch_tile_type<quant::kMXFP4, kGateUp>(a, stream); break;
    case quant::kQ5_0: launch_tile_type<quant::kQ5_0, kGateUp>(a, stream); break;
    case quant::kQ4_1: launch_tile_type<quant::kQ4_1, kGateUp>(a, stream); break;
    case quant::kQ5_1: launch_tile_type<quant::kQ5_1, kGateUp>(a, stream); break;
    case quant::kQ2_K: launch_tile_type<quant::kQ2_K, kGateUp>(a, stream); break;
    case quant::kQ3_K: launch_tile_type<quant::kQ3_K, kGateUp>(a, stream); break;
    case quant::kQ5_K: launch_tile_type<quant::kQ5_K, kGateUp>(a, stream); break;
    default: break;
  }
}

}  // namespace

bool tile_supported(const DeviceMatrix& w) {
  // 8-element groups; float types additionally need 16-byte aligned rows for their loads.
  if (w.cols % 8 != 0) return false;
  if (quant::is_float_type(w.type)) {
    return w.row_bytes % 16 == 0 && (reinterpret_cast<uintptr_t>(w.data) & 15) == 0;
  }
  return true;
}

void launch_matmul_tile(const DeviceMatrix& w, const DeviceMatrix* up, const float* x, int64_t n,
                        float* y, int64_t ldy, bool accumulate, __half* xh, cudaStream_t stream) {
  if (n <= 0 || w.rows <= 0) return;
  const int64_t count = n * w.cols;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((count + 255) / 256, 4096));
  if (blocks > 0) convert_x_kernel<<<blocks, 256, 0, stream>>>(x, xh, count);  // cols == 0: no empty grid
  const uint64_t delta =
      up ? reinterpret_cast<uint64_t>(up->data) - reinterpret_cast<uint64_t>(w.data) : 0;
  const TileArgs a{w.data, delta, w.rows, w.cols, w.row_bytes, n, xh, y, ldy,
                   accumulate};
  if (up) launch_tile<true>(w.type, a, stream);
  else launch_tile<false>(w.type, a, stream);
}

}  // namespace platform::cuda::detail
