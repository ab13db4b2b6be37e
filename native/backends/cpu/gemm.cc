// GEMM driver: argument handling, SIMD dispatch, BLIS-style blocking and packing, threading.
//
// Loop nest for one thread's region of C (the register tile and cache blocks come from the
// selected kernel table, see gemm_kernels.h):
//
//   for jc in N step NC:                 B block  [kc][nc]  packed once, lives in L3
//     for pc in K step KC:
//       pack op(B)[pc:pc+kc, jc:jc+nc]
//       for ic in M step MC:             A block  [mc][kc]  packed, lives in L2
//         pack op(A)[ic:ic+mc, pc:pc+kc]
//         for jr in nc step NR:          B micro-panel [kc][NR] stays in L1
//           for ir in mc step MR:        A micro-panel [kc][MR] streams from L2
//             micro-kernel: C[ir:ir+MR, jr:jr+NR] (+)= alpha * A_panel * B_panel
//
// When the region has at most MC rows (small-M GEMMs such as a batch of LLM tokens times a weight
// matrix) there is one A block, every B element is used once, and the loop is bound by reading B
// from memory: A is packed once per K block, B is packed in L2-sized chunks of 256 columns, and
// the next chunk's source lines are prefetched while the current one is multiplied. Likewise in
// the general nest the next A block is prefetched during the current one (for small N, where A
// is the streamed operand).
//
// Threads: C is split into a tm x tn grid of regions (whole micro-tiles) and each thread runs the
// nest above on its own region with its own packing buffers: no barriers, no sharing. Each thread
// packs the A rows and B columns of its region only, so the grid shape is chosen to minimise the
// per-thread compute plus packing. M == 1 or N == 1 is a matrix-vector product and goes to gemv.
#include "gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../core/thread_pool.h"
#include "gemm_kernels.h"
#include "gemv_impl.h"

namespace platform {
namespace {

// Per-thread, 64-byte aligned scratch that grows to the largest size used and is then reused.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { release(); }

  float* get(size_t floats) {
    if (floats > capacity_) {
      release();
      data_ = static_cast<float*>(::operator new(floats * sizeof(float), std::align_val_t{64}));
      capacity_ = floats;
    }
    return data_;
  }

 private:
  void release() {
    if (data_ != nullptr) ::operator delete(data_, std::align_val_t{64});
    data_ = nullptr;
    capacity_ = 0;
  }
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

thread_local ScratchBuffer t_pack_a;
thread_local ScratchBuffer t_pack_b;

const cpu::GemmKernel* select_gemm_kernel(SimdLevel level) {
  const cpu::GemmKernel* k = nullptr;
  switch (level) {
    case SimdLevel::kAvx512: k = cpu::gemm_kernel_avx512(); break;
    case SimdLevel::kAvx2: k = cpu::gemm_kernel_avx2(); break;
    case SimdLevel::kNeon: k = cpu::gemm_kernel_neon(); break;
    case SimdLevel::kScalar: break;
  }
  return k != nullptr ? k : cpu::gemm_kernel_scalar();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Strided views: op(A)(i, k) = A[i * a_rs + k * a_cs], op(B)(k, j) = B[k * b_rs + j * b_cs].
struct Problem {
  const cpu::GemmKernel* kern;
  const float* A;
  int64_t a_rs, a_cs;
  const float* B;
  int64_t b_rs, b_cs;
  float* C;
  int64_t ldc;
  int64_t K;
  float alpha, beta;
};

// A block op(A)[i0:i0+mc, p0:p0+kc] -> ceil(mc/MR) panels of [kc][MR], panel r at dst + r*MR*kc.
void pack_a_block(const Problem& p, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  p.kern->pack(p.A + i0 * p.a_rs + p0 * p.a_cs, p.a_rs, p.a_cs, kc, mc, p.kern->mr, dst);
}

// B block op(B)[p0:p0+kc, j0:j0+nc] -> ceil(nc/NR) panels of [kc][NR], panel r at dst + r*NR*kc.
void pack_b_block(const Problem& p, int64_t j0, int64_t nc, int64_t p0, int64_t kc, float* dst) {
  p.kern->pack(p.B + p0 * p.b_rs + j0 * p.b_cs, p.b_cs, p.b_rs, kc, nc, p.kern->nr, dst);
}

// Walks the cache lines of a future block of op(A) or op(B) and deals them out, a few per
// micro-kernel call, for the kernel to prefetch while it computes (cpu::PrefetchTrickle), so the
// memory reads of the next block overlap the arithmetic on this one.
// A block of a strided view (element (r, c) at base[r * rs + c * cs]) is a set of contiguous
// runs: its rows when cs == 1, its columns otherwise (rs == 1).
class BlockPrefetcher {
 public:
  static constexpr int64_t kMaxPerCall = 128;

  BlockPrefetcher() = default;
  BlockPrefetcher(const float* base, int64_t rs, int64_t cs, int64_t r0, int64_t rows, int64_t c0,
                  int64_t cols) {
    const bool runs_are_rows = cs == 1;
    base_ = reinterpret_cast<const char*>(base + r0 * rs + c0 * cs);
    runs_ = runs_are_rows ? rows : cols;
    run_stride_ = static_cast<int64_t>(sizeof(float)) * (runs_are_rows ? rs : cs);
    // Lines per run, counting lines the run only partly covers.
    const int64_t run_bytes = static_cast<int64_t>(sizeof(float)) * (runs_are_rows ? cols : rows);
    const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(base_) & (kLine - 1));
    run_lines_ = ceil_div(misalign + run_bytes, kLine);
  }
  int64_t lines() const { return runs_ * run_lines_; }

  // The next `count` (at most kMaxPerCall) line addresses, written to out.
  cpu::PrefetchList take(int64_t count, const void** out) {
    int64_t n = 0;
    for (count = std::min(count, kMaxPerCall); n < count && run_ < runs_; ++n) {
      out[n] = base_ + run_ * run_stride_ + line_ * kLine;
      if (++line_ == run_lines_) {
        line_ = 0;
        ++run_;
      }
    }
    return cpu::PrefetchList{out, n};
  }

 private:
  static constexpr int64_t kLine = 64;
  const char* base_ = nullptr;
  int64_t runs_ = 0, run_lines_ = 0, run_stride_ = 0;
  int64_t run_ = 0, line_ = 0;
};

// Source of op(A)[i0:i0+mc, p0:p0+kc] and op(B)[p0:p0+kc, j0:j0+nc].
BlockPrefetcher a_block_prefetcher(const Problem& p, int64_t i0, int64_t mc, int64_t p0,
                                   int64_t kc) {
  return BlockPrefetcher(p.A, p.a_rs, p.a_cs, i0, mc, p0, kc);
}
BlockPrefetcher b_block_prefetcher(const Problem& p, int64_t p0, int64_t kc, int64_t j0,
                                   int64_t nc) {
  return BlockPrefetcher(p.B, p.b_rs, p.b_cs, p0, kc, j0, nc);
}

// Columns of B packed at a time when the region has a single A block.
constexpr int64_t kSmallMChunk = 256;
// Most floats of packed A kept for a whole small-M region (4 MB); beyond that, A is packed per
// K block.
constexpr int64_t kMaxPackedA = int64_t{1} << 20;

// Single-threaded GEMM on C[m0:m1, n0:n1] when m1 - m0 <= MC: one A block, so every B element is
// used once and the loop is bound by reading B from memory unless that overlaps the arithmetic.
// B goes through in chunks of kSmallMChunk columns x KC, packed into an L2-sized buffer; while
// one chunk is multiplied, the next chunk's source lines are prefetched by the micro-kernels.
// Chunks are visited along B's contiguous runs so that consecutive chunks continue the same rows
// (the same pages and hardware prefetch streams): K block outermost for plain B, stored [K,N];
// column chunk outermost for transB weights, stored [N,K], with all of A packed up front.
void gemm_region_small_m(const Problem& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const cpu::GemmKernel& kern = *p.kern;
  const int64_t MR = kern.mr, NR = kern.nr, KC = kern.kc;
  const int64_t m = m1 - m0;
  const int64_t a_rows = ceil_div(m, MR) * MR;  // rows of the packed A block (zero padded)
  const int64_t chunk = std::min(ceil_div(kSmallMChunk, NR) * NR, ceil_div(n1 - n0, NR) * NR);
  const int64_t k_blocks = ceil_div(p.K, KC);
  const int64_t n_chunks = ceil_div(n1 - n0, chunk);
  const bool k_outer = p.b_cs == 1 || a_rows * p.K > kMaxPackedA;

  // k_outer: the current A block [m/MR][kc][MR]. Otherwise every K block, block b at b*a_rows*KC.
  float* pa = t_pack_a.get(static_cast<size_t>(a_rows * (k_outer ? KC : p.K)));
  float* pb = t_pack_b.get(static_cast<size_t>(chunk * KC));  // [chunk/NR][kc][NR]
  if (!k_outer) {
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      pack_a_block(p, m0, m, kb * KC, std::min(KC, p.K - kb * KC), pa + kb * a_rows * KC);
    }
  }

  struct Step {
    int64_t pc, kc, jc, nc;
    bool new_k_block;
  };
  auto step_at = [&](int64_t s) {
    const int64_t kb = k_outer ? s / n_chunks : s % k_blocks;
    const int64_t cj = k_outer ? s % n_chunks : s / k_blocks;
    const int64_t pc = kb * KC, jc = n0 + cj * chunk;
    return Step{pc, std::min(KC, p.K - pc), jc, std::min(chunk, n1 - jc), cj == 0};
  };

  const void* lines[BlockPrefetcher::kMaxPerCall];  // prefetch addresses for one kernel call
  const int64_t calls_per_chunk = ceil_div(chunk, NR) * ceil_div(m, MR);
  const int64_t steps = k_blocks * n_chunks;
  for (int64_t s = 0; s < steps; ++s) {
    const Step st = step_at(s);
    const float beta = st.pc == 0 ? p.beta : 1.0f;  // later K blocks accumulate
    const float* a_block = pa;
    if (!k_outer) {
      a_block = pa + (st.pc / KC) * a_rows * KC;
    } else if (st.new_k_block) {
      pack_a_block(p, m0, m, st.pc, st.kc, pa);
    }
    pack_b_block(p, st.jc, st.nc, st.pc, st.kc, pb);
    BlockPrefetcher next;
    if (s + 1 < steps) {
      const Step nx = step_at(s + 1);
      next = b_block_prefetcher(p, nx.pc, nx.kc, nx.jc, nx.nc);
    }
    const int64_t per_call = ceil_div(next.lines(), calls_per_chunk);
    for (int64_t jr = 0; jr < st.nc; jr += NR) {
      const int64_t nr = std::min(NR, st.nc - jr);
      for (int64_t ir = 0; ir < m; ir += MR) {
        kern.micro(st.kc, a_block + ir * st.kc, pb + jr * st.kc,
                   p.C + (m0 + ir) * p.ldc + st.jc + jr, p.ldc, p.alpha, beta,
                   std::min(MR, m - ir), nr, next.take(per_call, lines));
      }
    }
  }
}

// Single-threaded blocked GEMM on C[m0:m1, n0:n1] (the loop nest at the top of this file).
void gemm_region(const Problem& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const cpu::GemmKernel& kern = *p.kern;
  const int64_t MR = kern.mr, NR = kern.nr, KC = kern.kc, MC = kern.mc, NC = kern.nc;
  if (m1 - m0 <= MC) {
    gemm_region_small_m(p, m0, m1, n0, n1);
    return;
  }
  const void* lines[BlockPrefetcher::kMaxPerCall];  // prefetch addresses for one kernel call

  const int64_t nc_max = std::min(NC, n1 - n0);
  float* pa = t_pack_a.get(static_cast<size_t>(ceil_div(MC, MR) * MR * KC));      // [MC/MR][kc][MR]
  float* pb = t_pack_b.get(static_cast<size_t>(ceil_div(nc_max, NR) * NR * KC));  // [nc/NR][kc][NR]
  for (int64_t jc = n0; jc < n1; jc += NC) {
    const int64_t nc = std::min(NC, n1 - jc);
    for (int64_t pc = 0; pc < p.K; pc += KC) {
      const int64_t kc = std::min(KC, p.K - pc);
      const float beta = pc == 0 ? p.beta : 1.0f;
      pack_b_block(p, jc, nc, pc, kc, pb);
      for (int64_t ic = m0; ic < m1; ic += MC) {
        const int64_t mc = std::min(MC, m1 - ic);
        pack_a_block(p, ic, mc, pc, kc, pa);
        // Each A element is used for nc columns only; when nc is small the loop is bound by
        // reading A unless the next A block arrives while this one is multiplied.
        BlockPrefetcher next;
        if (ic + MC < m1) {
          next = a_block_prefetcher(p, ic + MC, std::min(MC, m1 - ic - MC), pc, kc);
        } else if (pc + KC < p.K) {
          next = a_block_prefetcher(p, m0, std::min(MC, m1 - m0), pc + KC,
                                    std::min(KC, p.K - pc - KC));
        }
        const int64_t per_call = ceil_div(next.lines(), ceil_div(nc, NR) * ceil_div(mc, MR));
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t nr = std::min(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            kern.micro(kc, pa + ir * kc, pb + jr * kc, p.C + (ic + ir) * p.ldc + jc + jr, p.ldc,
                       p.alpha, beta, std::min(MR, mc - ir), nr, next.take(per_call, lines));
          }
        }
      }
    }
  }
}

// Below this many multiply-adds per thread, waking another thread costs more than it saves.
constexpr int64_t kMinFmasPerThread = int64_t{1} << 18;

struct Grid {
  int64_t tm = 1, tn = 1;
};

// Picks tm x tn <= threads minimising one thread's cost in micro-tile units: r*c for the
// multiply-adds plus ~8*(r + c) for packing its r rows of A and c columns of B
// (a packed element costs about as much as 8-16 multiply-adds of the micro-kernel).
Grid choose_grid(int64_t m_panels, int64_t n_panels, int64_t mr, int64_t nr, int threads) {
  Grid best;
  double best_cost = -1.0;
  for (int64_t tm = 1; tm <= threads && tm <= m_panels; ++tm) {
    const int64_t tn = std::min<int64_t>(threads / tm, n_panels);
    const double r = static_cast<double>(ceil_div(m_panels, tm) * mr);
    const double c = static_cast<double>(ceil_div(n_panels, tn) * nr);
    const double cost = r * c + 8.0 * (r + c);
    if (best_cost < 0.0 || cost < best_cost) {
      best_cost = cost;
      best.tm = tm;
      best.tn = tn;
    }
  }
  return best;
}

// C = beta * C over an M x N view (beta == 0 writes zeros without reading C).
void scale_matrix(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  if (beta == 1.0f) return;
  for (int64_t i = 0; i < M; ++i) {
    float* ci = C + i * ldc;
    if (beta == 0.0f) {
      std::fill(ci, ci + N, 0.0f);
    } else {
      for (int64_t j = 0; j < N; ++j) ci[j] *= beta;
    }
  }
}

void check_dims(const char* fn, int64_t M, int64_t N, int64_t K) {
  if (M < 0 || N < 0 || K < 0) {
    throw std::invalid_argument(std::string(fn) + ": dimensions must be non-negative");
  }
}

void check_ld(const char* fn, const char* name, int64_t ld, int64_t cols) {
  if (ld < std::max<int64_t>(1, cols)) {
    throw std::invalid_argument(std::string(fn) + ": " + name + " must be >= max(1, " +
                                std::to_string(cols) + "), got " + std::to_string(ld));
  }
}

// Copies a strided vector into contiguous scratch (or returns it as is when contiguous).
const float* contiguous(const float* v, int64_t n, int64_t stride, std::vector<float>& scratch) {
  if (stride == 1) return v;
  scratch.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) scratch[static_cast<size_t>(i)] = v[i * stride];
  return scratch.data();
}

}  // namespace

SimdLevel resolve_simd_level(const GemmOptions& options) {
  return options.simd ? clamp_simd_level(*options.simd) : active_simd_level();
}

void gemm_f32(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
              const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
              int64_t ldc, const GemmOptions& options) {
  check_dims("gemm_f32", M, N, K);
  check_ld("gemm_f32", "lda", lda, transA ? M : K);
  check_ld("gemm_f32", "ldb", ldb, transB ? K : N);
  check_ld("gemm_f32", "ldc", ldc, N);
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) {
    scale_matrix(M, N, beta, C, ldc);
    return;
  }

  const SimdLevel level = resolve_simd_level(options);
  const int threads = resolve_thread_count(options.threads);
  const int64_t a_rs = transA ? 1 : lda, a_cs = transA ? lda : 1;
  const int64_t b_rs = transB ? 1 : ldb, b_cs = transB ? ldb : 1;

  if (M == 1) {
    // C[0, :] = alpha * op(B)^T op(A)[0, :] + beta * C[0, :]
    std::vector<float> x_scratch;
    const float* x = contiguous(A, K, a_cs, x_scratch);
    // op(B) stored [K,N] -> y = S^T x; stored [N,K] (transB) -> y = S x.
    detail::gemv(!transB, transB ? N : K, transB ? K : N, alpha, B, ldb, x, beta, C, level,
                 threads);
    return;
  }
  if (N == 1) {
    // C[:, 0] = alpha * op(A) op(B)[:, 0] + beta * C[:, 0]
    std::vector<float> x_scratch, y_scratch;
    const float* x = contiguous(B, K, b_rs, x_scratch);
    float* y = C;
    if (ldc != 1) {
      y_scratch.assign(static_cast<size_t>(M), 0.0f);
      if (beta != 0.0f) {
        for (int64_t i = 0; i < M; ++i) y_scratch[static_cast<size_t>(i)] = C[i * ldc];
      }
      y = y_scratch.data();
    }
    // op(A) stored [M,K] -> y = S x; stored [K,M] (transA) -> y = S^T x.
    detail::gemv(transA, transA ? K : M, transA ? M : K, alpha, A, lda, x, beta, y, level,
                 threads);
    if (y != C) {
      for (int64_t i = 0; i < M; ++i) C[i * ldc] = y[i];
    }
    return;
  }

  const Problem p{select_gemm_kernel(level), A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, K, alpha, beta};
  const int64_t MR = p.kern->mr, NR = p.kern->nr;
  const int64_t m_panels = ceil_div(M, MR), n_panels = ceil_div(N, NR);
  // In double: M * N * K can exceed int64 for callers that bypass the addon's length checks.
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const int usable = static_cast<int>(std::max(
      1.0, std::min(static_cast<double>(threads), std::floor(work / kMinFmasPerThread))));
  const Grid grid = choose_grid(m_panels, n_panels, MR, NR, usable);

  auto run_region = [&](int t) {
    const int64_t gi = t / grid.tn, gj = t % grid.tn;
    // Whole micro-tiles per region, spread as evenly as possible.
    const int64_t pm0 = m_panels * gi / grid.tm, pm1 = m_panels * (gi + 1) / grid.tm;
    const int64_t pn0 = n_panels * gj / grid.tn, pn1 = n_panels * (gj + 1) / grid.tn;
    const int64_t m0 = pm0 * MR, m1 = std::min(M, pm1 * MR);
    const int64_t n0 = pn0 * NR, n1 = std::min(N, pn1 * NR);
    if (m0 < m1 && n0 < n1) gemm_region(p, m0, m1, n0, n1);
  };
  run_tasks(static_cast<int>(grid.tm * grid.tn), run_region);
}

void gemv_f32(bool transA, int64_t M, int64_t N, float alpha, const float* A, int64_t lda,
              const float* x, float beta, float* y, const GemmOptions& options) {
  check_dims("gemv_f32", M, N, 0);
  check_ld("gemv_f32", "lda", lda, N);
  detail::gemv(transA, M, N, alpha, A, lda, x, beta, y, resolve_simd_level(options),
               resolve_thread_count(options.threads));
}

}  // namespace platform
