// Causal GQA attention over the paged f16 KV cache, split-K (flash-decoding) in two kernels:
//   attn_split_kernel: grid (n * max_splits, n_kv_heads * head_tiles), 128 threads. A CTA takes one
//     token t, one KV head and up to GM of the query heads that share it (so each K/V row loaded
//     serves the whole group), over one chunk of positions [c0, c1) of 0..pos[t]. It walks the
//     chunk in tiles of 64 positions with an online softmax and writes (m, l, acc[hd]) per query
//     head to the workspace, or the final att row directly when there is a single split.
//   attn_combine_kernel: grid (n * n_heads), 128 threads: merges the splits that exist for the
//     token (pos[t] / chunk + 1 of them; the others were never written) into att.
// Workspace: ml [n][n_heads][max_splits][2] f32 (m, l), then (256-aligned) acc
// [n][n_heads][max_splits][hd] f32 (unnormalised: sum exp(s - m) V).
#include "attention_math.cuh"
#include "llm_kernels.h"

namespace platform::cuda {
namespace {

using attn::kThreads;
using attn::kTile;

struct AttnArgs {
  const float* q;        // [n][n_heads * hd]
  float* att;            // [n][n_heads * hd]
  float* ws_ml;          // [n][n_heads][max_splits][2]
  float* ws_acc;         // [n][n_heads][max_splits][hd]
  const int32_t* pos;    // [n]
  const int32_t* seq_of; // [n]
  const int32_t* blocks; // [n_seqs][max_blocks]
  int64_t max_blocks;
  const __half* cache;   // this layer's first element: base + layer * n_blocks * 2 * bs * kv_dim
  int64_t block_size, kv_dim;
  int n_heads, group, head_tiles, hd, chunk, max_splits;
  float scale;
};

// VK halves at p (16-byte aligned for VK 8, 4-byte for VK 2) as floats.
template <int VK>
__device__ __forceinline__ void load_halves(const __half* p, float (&f)[VK]) {
  if constexpr (VK == 8) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 x = __half22float2(h[e]);
      f[2 * e] = x.x;
      f[2 * e + 1] = x.y;
    }
  } else {
    const float2 x = __half22float2(*reinterpret_cast<const __half2*>(p));
    f[0] = x.x;
    f[1] = x.y;
  }
}

// VK: halves per vector access (8: 16-byte loads, needs hd % 8 == 0; 2: any even hd).
// GM: query heads per CTA (1, 2, 4 or 8; the group's heads beyond the CTA's use zero q rows).
template <int VK, int GM>
__global__ void __launch_bounds__(kThreads) attn_split_kernel(AttnArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int hd = a.hd;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t t = blockIdx.x / a.max_splits;
  const int split = blockIdx.x % a.max_splits;
  const int kvh = blockIdx.y / a.head_tiles, ht = blockIdx.y % a.head_tiles;

  const int len = a.pos[t] + 1;
  const int c0 = split * a.chunk;
  if (c0 >= len) return;  // chunk past the token's context: nothing to do (the combine skips it)
  const int c1 = min(c0 + a.chunk, len);

  const int h_first = kvh * a.group + ht * GM;  // first query head of this CTA
  const int nh = min(GM, a.group - ht * GM);    // its real heads (<= GM)
  const attn::SmemLayout L = attn::smem_layout(GM, hd, VK);
  float* q_s = reinterpret_cast<float*>(smem + L.q);        // [GM][hd]
  float* p_s = reinterpret_cast<float*>(smem + L.p);        // [kTile][GM]
  float* red_s = reinterpret_cast<float*>(smem + L.red);    // [4][GM]
  int64_t* row_s = reinterpret_cast<int64_t*>(smem + L.row);  // [kTile]
  __half* k_s = reinterpret_cast<__half*>(smem + L.k);      // [kTile][kstride]
  const int kstride = attn::k_stride(hd, VK);

  const float* qt = a.q + (t * a.n_heads + h_first) * hd;
  for (int i = tid; i < GM * hd; i += kThreads) q_s[i] = i < nh * hd ? qt[i] : 0.0f;

  const int nch = hd / VK;            // vector chunks per row
  const int cols = nch;               // PV: thread owns chunk c of positions pg, pg + PG, ...
  const int PG = kThreads / cols;
  const int c = tid % cols, pg = tid / cols;
  const bool pv_active = pg < PG;
  const int64_t seq_row = static_cast<int64_t>(a.seq_of[t]) * a.max_blocks;
  const int64_t v_off = a.block_size * a.kv_dim + static_cast<int64_t>(kvh) * hd;  // K row -> V row of this head
  const int64_t k_off = static_cast<int64_t>(kvh) * hd;

  float m_run[GM], l_run[GM], acc[GM][VK];
#pragma unroll
  for (int g = 0; g < GM; ++g) {
    m_run[g] = -INFINITY;
    l_run[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < VK; ++e) acc[g][e] = 0.0f;
  }

  for (int tile0 = c0; tile0 < c1; tile0 += kTile) {
    const int nt = min(kTile, c1 - tile0);
    // Cache offsets of the tile's K rows (one block-table lookup per position).
    if (tid < nt) {
      const int p = tile0 + tid;
      const int64_t blk = a.blocks[seq_row + p / a.block_size];
      row_s[tid] = (blk * 2 * a.block_size + p % a.block_size) * a.kv_dim;
    }
    __syncthreads();  // row_s (and q_s on the first tile) visible to all
    // Stage K [nt][hd] with coalesced vector loads.
    for (int idx = tid; idx < nt * nch; idx += kThreads) {
      const int r = idx / nch, ch = idx % nch;
      const __half* src = a.cache + row_s[r] + k_off + ch * VK;
      __half* dst = k_s + r * kstride + ch * VK;
      if constexpr (VK == 8) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
      } else {
        *reinterpret_cast<__half2*>(dst) = *reinterpret_cast<const __half2*>(src);
      }
    }
    __syncthreads();

    // Scores: threads 2j, 2j+1 share position j, each summing every other chunk.
    const int j = tid >> 1, hf = tid & 1;
    float s[GM];
#pragma unroll
    for (int g = 0; g < GM; ++g) s[g] = 0.0f;
    if (j < nt) {
      for (int ch = hf; ch < nch; ch += 2) {
        float kf[VK];
        load_halves<VK>(k_s + j * kstride + ch * VK, kf);
#pragma unroll
        for (int g = 0; g < GM; ++g) {
          const float* qg = q_s + g * hd + ch * VK;
#pragma unroll
          for (int e = 0; e < VK; ++e) s[g] = fmaf(qg[e], kf[e], s[g]);
        }
      }
    }
    float alpha[GM];
#pragma unroll
    for (int g = 0; g < GM; ++g) {
      s[g] += __shfl_xor_sync(0xffffffffu, s[g], 1);
      s[g] = j < nt ? s[g] * a.scale : -INFINITY;
      float mx = s[g];
      for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      if (lane == 0) red_s[warp * GM + g] = mx;
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < GM; ++g) {
      const float tmax = fmaxf(fmaxf(red_s[g], red_s[GM + g]), fmaxf(red_s[2 * GM + g], red_s[3 * GM + g]));
      const float m_new = fmaxf(m_run[g], tmax);  // finite: the tile has >= 1 position
      alpha[g] = expf(m_run[g] - m_new);           // 0 on the first tile (m_run = -inf)
      m_run[g] = m_new;
      if (hf == 0) p_s[j * GM + g] = j < nt ? expf(s[g] - m_new) : 0.0f;
    }
    __syncthreads();

    // P.V: thread (c, pg) accumulates chunk c of V over positions pg, pg + PG, ... (16-byte
    // coalesced V reads straight from the cache: each V row is read once per CTA).
#pragma unroll
    for (int g = 0; g < GM; ++g) {
      l_run[g] *= alpha[g];
#pragma unroll
      for (int e = 0; e < VK; ++e) acc[g][e] *= alpha[g];
    }
    if (pv_active) {
      for (int jj = pg; jj < nt; jj += PG) {
        float vf[VK];
        load_halves<VK>(a.cache + row_s[jj] + v_off + c * VK, vf);
#pragma unroll
        for (int g = 0; g < GM; ++g) {
          const float pj = p_s[jj * GM + g];
          l_run[g] += pj;
#pragma unroll
          for (int e = 0; e < VK; ++e) acc[g][e] = fmaf(pj, vf[e], acc[g][e]);
        }
      }
    }
    __syncthreads();  // row_s / p_s / k_s are rewritten by the next tile (and k_s reused below)
  }

  // Sum the position groups' partials (same m in all of them) in a fixed order.
  float* acc_s = reinterpret_cast<float*>(smem + L.k);  // [PG][GM][hd]
  float* l_s = acc_s + PG * GM * hd;                     // [PG][GM]
  if (pv_active) {
#pragma unroll
    for (int g = 0; g < GM; ++g) {
#pragma unroll
      for (int e = 0; e < VK; ++e) acc_s[(pg * GM + g) * hd + c * VK + e] = acc[g][e];
      if (c == 0) l_s[pg * GM + g] = l_run[g];
    }
  }
  if (tid == 0) {
#pragma unroll
    for (int g = 0; g < GM; ++g) red_s[g] = m_run[g];
  }
  __syncthreads();
  const bool single = a.max_splits == 1;
  for (int idx = tid; idx < nh * hd; idx += kThreads) {
    const int g = idx / hd, d = idx % hd;
    float sum = 0.0f, l = 0.0f;
    for (int i = 0; i < PG; ++i) {
      sum += acc_s[(i * GM + g) * hd + d];
      l += l_s[i * GM + g];
    }
    const int64_t th = t * a.n_heads + h_first + g;  // (token, query head)
    if (single) {
      a.att[th * hd + d] = sum / l;
    } else {
      const int64_t part = th * a.max_splits + split;
      a.ws_acc[part * hd + d] = sum;
      if (d == 0) {
        a.ws_ml[part * 2] = red_s[g];
        a.ws_ml[part * 2 + 1] = l;
      }
    }
  }
}

// One CTA per (token, query head): weights w_s = exp(m_s - M) of the splits that exist, then
// att = sum_s w_s acc_s / sum_s w_s l_s. Fixed summation order (deterministic).
__global__ void __launch_bounds__(kThreads)
    attn_combine_kernel(const float* __restrict__ ws_ml, const float* __restrict__ ws_acc, float* __restrict__ att,
                        const int32_t* __restrict__ pos, int n_heads, int hd, int chunk, int max_splits) {
  __shared__ float w_s[attn::kMaxSplits];
  __shared__ float red[kThreads / 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t th = blockIdx.x;  // t * n_heads + h
  const int64_t t = th / n_heads;
  const int ns = min(pos[t] / chunk + 1, max_splits);
  const float* ml = ws_ml + th * max_splits * 2;

  float mx = -INFINITY;
  for (int s = tid; s < ns; s += kThreads) mx = fmaxf(mx, ml[2 * s]);
  for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  if (lane == 0) red[warp] = mx;
  __syncthreads();
  mx = red[0];
  for (int w = 1; w < kThreads / 32; ++w) mx = fmaxf(mx, red[w]);
  __syncthreads();  // red is rewritten below

  float l = 0.0f;
  for (int s = tid; s < ns; s += kThreads) {
    const float w = attn::merge_weight(ml[2 * s], mx);
    w_s[s] = w;
    l += w * ml[2 * s + 1];
  }
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  if (lane == 0) red[warp] = l;
  __syncthreads();  // also publishes w_s
  l = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) l += red[w];

  const float* acc = ws_acc + th * max_splits * hd;
  for (int d = tid; d < hd; d += kThreads) {
    float o = 0.0f;
    for (int s = 0; s < ns; ++s) o = fmaf(acc[static_cast<int64_t>(s) * hd + d], w_s[s], o);
    att[th * hd + d] = o / l;
  }
}

template <int VK, int GM>
void launch_split(const AttnArgs& a, dim3 grid, cudaStream_t stream) {
  const attn::SmemLayout L = attn::smem_layout(GM, a.hd, VK);
  attn_split_kernel<VK, GM><<<grid, kThreads, L.total, stream>>>(a);
}

template <int VK>
void launch_split_vk(const AttnArgs& a, int gm, dim3 grid, cudaStream_t stream) {
  switch (gm) {
    case 1: launch_split<VK, 1>(a, grid, stream); break;
    case 2: launch_split<VK, 2>(a, grid, stream); break;
    case 4: launch_split<VK, 4>(a, grid, stream); break;
    default: launch_split<VK, 8>(a, grid, stream); break;
  }
}

constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

}  // namespace

namespace {
size_t workspace_for_pairs(int64_t pairs, int64_t n_heads, int64_t head_dim) {
  const size_t parts = static_cast<size_t>(pairs * n_heads);
  return align_up(parts * 2 * sizeof(float)) + parts * static_cast<size_t>(head_dim) * sizeof(float);
}
}  // namespace

size_t attention_workspace_bytes(int64_t max_n, int64_t n_heads, int64_t head_dim, int64_t max_context) {
  // The most (token, split) pairs any n <= max_n launches with more than one split, for any span
  // <= max_context (the backend launches with power-of-two spans below it, which can need more
  // pairs than max_context itself when it is not a power of two, e.g. 3000 vs span 2048 at n 256).
  // s <= ceil(span / kMinChunk) <= ceil(max_context / kMinChunk), and s > 1 implies n * s <= kMaxSplits.
  const int64_t s_max = (max_context + attn::kMinChunk - 1) / attn::kMinChunk;
  if (max_n <= 0 || s_max <= 1) return 0;
  const int64_t pairs = max_n >= attn::kMaxSplits || max_n * s_max >= attn::kMaxSplits ? attn::kMaxSplits : max_n * s_max;
  return workspace_for_pairs(pairs, n_heads, head_dim);
}

void launch_attention(const float* q, float* att, const StepTables& step, KvLayout kv, int64_t layer,
                      int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, int64_t max_context,
                      Workspace ws, cudaStream_t stream) {
  const int64_t n = step.n;
  if (n <= 0 || n_kv_heads <= 0 || head_dim <= 0 || head_dim > 256 || head_dim % 2 != 0) return;
  int64_t chunk = attn::chunk_len(n, max_context);
  int64_t splits = attn::n_splits(n, max_context);
  if (splits > 1 && workspace_for_pairs(n * splits, n_heads, head_dim) > ws.bytes) {
    // Workspace sized for less (a span beyond the sizing's max_context): one split per token,
    // slower but in bounds (and still a grid that depends only on n and max_context).
    chunk = max_context;
    splits = 1;
  }
  const int group = static_cast<int>(n_heads / n_kv_heads);
  const int gm = group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
  const int head_tiles = (group + gm - 1) / gm;

  AttnArgs a{};
  a.q = q;
  a.att = att;
  const size_t parts = static_cast<size_t>(n * splits * n_heads);
  a.ws_ml = static_cast<float*>(ws.data);
  a.ws_acc = reinterpret_cast<float*>(static_cast<char*>(ws.data) + align_up(parts * 2 * sizeof(float)));
  a.pos = step.pos;
  a.seq_of = step.seq_of;
  a.blocks = step.blocks;
  a.max_blocks = step.max_blocks;
  a.cache = kv.base + layer * kv.n_blocks * 2 * kv.block_size * kv.kv_dim;
  a.block_size = kv.block_size;
  a.kv_dim = kv.kv_dim;
  a.n_heads = static_cast<int>(n_heads);
  a.group = group;
  a.head_tiles = head_tiles;
  a.hd = static_cast<int>(head_dim);
  a.chunk = static_cast<int>(chunk);
  a.max_splits = static_cast<int>(splits);
  a.scale = 1.0f / sqrtf(static_cast<float>(head_dim));

  const dim3 grid(static_cast<unsigned>(n * splits), static_cast<unsigned>(n_kv_heads * head_tiles));
  if (head_dim % 8 == 0 && kv.kv_dim % 8 == 0) {
    launch_split_vk<8>(a, gm, grid, stream);
  } else {
    launch_split_vk<2>(a, gm, grid, stream);
  }
  if (splits > 1) {
    attn_combine_kernel<<<static_cast<unsigned>(n * n_heads), kThreads, 0, stream>>>(
        a.ws_ml, a.ws_acc, att, step.pos, a.n_heads, a.hd, a.chunk, a.max_splits);
  }
}

}  // namespace platform::cuda
