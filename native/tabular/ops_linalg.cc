// Gemm and MatMul. float runs on the engine's gemm_f32 (SIMD, blocked, threaded; M == 1 goes to
// its GEMV kernels); double and the integer types of MatMul use a plain i-k-j loop, which the
// compiler vectorises and which is ample for tabular model sizes.
//
// On a model compiled for CUDA, a float product of at least the model's crossover row count runs
// on its GemmDevice instead (backends/tabular_device.h, every operand copied up and the result
// back). Most
// Gemm / MatMul nodes never get here with such batches: the graph runs chains of them (with
// constant weights resident on the device) itself; see graph.cc.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "../backends/cpu/gemm.h"
#include "../core/thread_pool.h"
#include "op.h"

namespace platform::tabular {
namespace {

// Below this many multiply-adds the fallback loop stays on one thread.
constexpr int64_t kParallelRowsWork = 1 << 16;
// Below this many multiply-adds (~0.2 ms on one core) a float GEMM runs on one thread: a parallel
// region costs 10-300 us when the other cores are busy or asleep (measured on a shared 2-vCPU
// VM), more than it saves on smaller products.
constexpr int64_t kParallelGemmWork = 1 << 23;

int gemm_threads(int64_t M, int64_t N, int64_t K, int threads) {
  return M * N * K >= kParallelGemmWork ? threads : 1;
}

// C[M,N] (+)= alpha * op(A) * op(B), row-major with leading dimensions; `accumulate` keeps C's
// contents (beta 1), otherwise C is overwritten.
template <typename T>
void gemm_loop(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
               const T* B, int64_t ldb, bool accumulate, T* C, int64_t ldc, int threads) {
  auto rows = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      T* c = C + i * ldc;
      if (!accumulate) std::fill(c, c + N, T(0));
      if (!transB) {
        for (int64_t k = 0; k < K; ++k) {
          const T a = alpha * (transA ? A[k * lda + i] : A[i * lda + k]);
          const T* b = B + k * ldb;
          for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
      } else {
        for (int64_t j = 0; j < N; ++j) {
          const T* b = B + j * ldb;
          T sum = 0;
          if (!transA) {
            const T* a = A + i * lda;
            for (int64_t k = 0; k < K; ++k) sum += a[k] * b[k];
          } else {
            for (int64_t k = 0; k < K; ++k) sum += A[k * lda + i] * b[k];
          }
          c[j] += alpha * sum;
        }
      }
    }
  };
  if (threads > 1 && M > 1 && M * N * K >= kParallelRowsWork) {
    parallel_for(0, M, threads, rows);
  } else {
    rows(0, M);
  }
}

// Where the model runs float products of at least `min_rows` rows on a device.
struct DeviceChoice {
  std::shared_ptr<GemmDevice> device;
  int64_t min_rows = 0;

  explicit DeviceChoice(const CompileContext& ctx) : device(ctx.device), min_rows(ctx.device_min_rows) {}

  // Runs C = alpha op(A) op(B) + beta C on the device when it applies; false: use the CPU.
  bool gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
            const float* B, int64_t ldb, float beta, float* C, int64_t ldc) const {
    if (!device || M < min_rows) return false;
    device->gemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return true;
  }
};

// ---- Gemm ----

class GemmOp : public Op {
 public:
  GemmOp(double alpha, double beta, bool transA, bool transB, DeviceChoice device)
      : alpha_(alpha), beta_(beta), transA_(transA), transB_(transB), device_(std::move(device)) {}

  void run(OpContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.rank() != 2 || b.rank() != 2) {
      fail("A and B must be 2-D, got A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()));
    }
    if (a.dtype() != b.dtype()) {
      fail(std::string("A is ") + dtype_name(a.dtype()) + " but B is " + dtype_name(b.dtype()));
    }
    const int64_t M = transA_ ? a.dim(1) : a.dim(0);
    const int64_t K = transA_ ? a.dim(0) : a.dim(1);
    const int64_t Kb = transB_ ? b.dim(1) : b.dim(0);
    const int64_t N = transB_ ? b.dim(0) : b.dim(1);
    if (K != Kb) {
      fail("A " + shape_str(a.shape()) + (transA_ ? " (transposed)" : "") + " and B " + shape_str(b.shape()) +
           (transB_ ? " (transposed)" : "") + " have different inner dimensions (" + std::to_string(K) + " and " +
           std::to_string(Kb) + ")");
    }
    const bool has_c = ctx.has_input(2) && beta_ != 0.0;
    if (ctx.has_input(2)) {
      const Tensor& c = ctx.input(2);
      if (c.dtype() != a.dtype()) fail(std::string("C is ") + dtype_name(c.dtype()) + " but A is " + dtype_name(a.dtype()));
      check_c_broadcast(c.shape(), M, N);
    }
    Tensor y(a.dtype(), {M, N});
    dispatch_floating(a.dtype(), "Gemm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* yd = y.data<T>();
      if (has_c) fill_broadcast<T>(ctx.input(2), M, N, yd);
      if (M == 0 || N == 0) return;
      if constexpr (std::is_same_v<T, float>) {
        if (device_.gemm(transA_, transB_, M, N, K, static_cast<float>(alpha_), a.data<float>(),
                         std::max<int64_t>(a.dim(1), 1), b.data<float>(), std::max<int64_t>(b.dim(1), 1),
                         has_c ? static_cast<float>(beta_) : 0.0f, yd, N)) {
          return;
        }
        GemmOptions opt;
        opt.threads = gemm_threads(M, N, K, ctx.threads());
        gemm_f32(transA_, transB_, M, N, K, static_cast<float>(alpha_), a.data<float>(), std::max<int64_t>(a.dim(1), 1),
                 b.data<float>(), std::max<int64_t>(b.dim(1), 1), has_c ? static_cast<float>(beta_) : 0.0f, yd, N, opt);
      } else {
        if (has_c && beta_ != 1.0) {
          for (int64_t i = 0; i < M * N; ++i) yd[i] *= static_cast<T>(beta_);
        }
        gemm_loop<T>(transA_, transB_, M, N, K, static_cast<T>(alpha_), a.data<T>(), a.dim(1), b.data<T>(), b.dim(1),
                     has_c, yd, N, ctx.threads());
      }
    });
    ctx.set_output(0, std::move(y));
  }

  static void check_c_broadcast(const Shape& c, int64_t M, int64_t N) {
    // Unidirectional: C's shape, right-aligned, must match [M, N] or be 1 in each dimension.
    bool ok = c.size() <= 2;
    if (ok && c.size() >= 1) ok = c.back() == N || c.back() == 1;
    if (ok && c.size() == 2) ok = c[0] == M || c[0] == 1;
    if (!ok) {
      fail("C " + shape_str(c) + " cannot be broadcast to the output [" + std::to_string(M) + ", " +
           std::to_string(N) + "]");
    }
  }

 private:
  template <typename T>
  static void fill_broadcast(const Tensor& c, int64_t M, int64_t N, T* y) {
    const T* cd = c.data<T>();
    const Shape& s = c.shape();
    const int64_t cols = s.empty() ? 1 : s.back();
    const int64_t rows = s.size() == 2 ? s[0] : 1;
    for (int64_t i = 0; i < M; ++i) {
      const T* src = cd + (rows == 1 ? 0 : i * cols);
      T* dst = y + i * N;
      if (cols == 1) {
        std::fill(dst, dst + N, src[0]);
      } else {
        std::memcpy(dst, src, sizeof(T) * static_cast<size_t>(N));
      }
    }
  }

  double alpha_, beta_;
  bool transA_, transB_;
  DeviceChoice device_;
};

std::unique_ptr<Op> make_gemm(CompileContext& ctx) {
  ctx.expect_inputs(2, 3);
  ctx.expect_outputs(1, 1);
  const double alpha = ctx.attr_float("alpha", 1.0);
  const double beta = ctx.attr_float("beta", 1.0);
  const int64_t ta = ctx.attr_int("transA", 0);
  const int64_t tb = ctx.attr_int("transB", 0);
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1)) fail("attributes transA and transB must be 0 or 1");
  for (size_t i = 0; i < ctx.num_inputs(); ++i) ctx.expect_type(i, {DType::kFloat, DType::kDouble});
  const ValueInfo& a = ctx.input(0);
  const ValueInfo& b = ctx.input(1);
  if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype) {
    fail(std::string("A is ") + dtype_name(a.dtype) + " but B is " + dtype_name(b.dtype));
  }
  ValueInfo out;
  out.dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
  out.has_shape = true;
  out.dims = {-1, -1};
  if (a.has_shape && a.rank() != 2) fail("A must be 2-D, got " + dims_str(a.dims));
  if (b.has_shape && b.rank() != 2) fail("B must be 2-D, got " + dims_str(b.dims));
  int64_t K = -1, Kb = -1;
  if (a.has_shape) {
    out.dims[0] = ta ? a.dims[1] : a.dims[0];
    K = ta ? a.dims[0] : a.dims[1];
  }
  if (b.has_shape) {
    out.dims[1] = tb ? b.dims[0] : b.dims[1];
    Kb = tb ? b.dims[1] : b.dims[0];
  }
  if (K >= 0 && Kb >= 0 && K != Kb) {
    fail("A " + dims_str(a.dims) + (ta ? " (transposed)" : "") + " and B " + dims_str(b.dims) +
         (tb ? " (transposed)" : "") + " have different inner dimensions (" + std::to_string(K) + " and " +
         std::to_string(Kb) + ")");
  }
  if (ctx.has_input(2)) {
    const ValueInfo& c = ctx.input(2);
    if (c.dtype != DType::kUndefined && out.dtype != DType::kUndefined && c.dtype != out.dtype) {
      fail(std::string("C is ") + dtype_name(c.dtype) + " but A is " + dtype_name(out.dtype));
    }
    if (c.fully_known() && out.dims[0] >= 0 && out.dims[1] >= 0) {
      GemmOp::check_c_broadcast(c.dims, out.dims[0], out.dims[1]);
    } else if (c.fully_known()) {
      if (c.rank() > 2) fail("C " + dims_str(c.dims) + " has more than 2 dimensions");
      if (c.rank() >= 1 && out.dims[1] >= 0 && c.dims.back() != 1 && c.dims.back() != out.dims[1]) {
        fail("C " + dims_str(c.dims) + " cannot be broadcast to the output's " + std::to_string(out.dims[1]) +
             " columns");
      }
    }
  }
  ctx.outputs = {out};
  return std::make_unique<GemmOp>(alpha, beta, ta != 0, tb != 0, DeviceChoice(ctx));
}

// ---- MatMul ----

// Output shape of numpy matmul for concrete or partial (-1) shapes; also returns M, K, N and the
// broadcast batch shape.
struct MatMulShape {
  Shape batch;  // broadcast batch dims
  Shape out;
  int64_t M = 1, K = 1, N = 1, Kb = 1;
  bool a_vec = false, b_vec = false;
};

MatMulShape matmul_shape(const Shape& a, const Shape& b, bool partial) {
  if (a.empty() || b.empty()) {
    fail("inputs must have at least one dimension (got " + dims_str(a) + " and " + dims_str(b) + ")");
  }
  MatMulShape s;
  s.a_vec = a.size() == 1;
  s.b_vec = b.size() == 1;
  s.M = s.a_vec ? 1 : a[a.size() - 2];
  s.K = a.back();
  s.Kb = s.b_vec ? b[0] : b[b.size() - 2];
  s.N = s.b_vec ? 1 : b.back();
  if (s.K >= 0 && s.Kb >= 0 && s.K != s.Kb) {
    fail("A " + dims_str(a) + " and B " + dims_str(b) + " have different inner dimensions (" + std::to_string(s.K) +
         " and " + std::to_string(s.Kb) + ")");
  }
  const Shape ab(a.begin(), a.end() - (s.a_vec ? 1 : 2));
  const Shape bb(b.begin(), b.end() - (s.b_vec ? 1 : 2));
  s.batch = partial ? broadcast_dims(ab, bb) : broadcast_shapes(ab, bb);
  s.out = s.batch;
  if (!s.a_vec) s.out.push_back(s.M);
  if (!s.b_vec) s.out.push_back(s.N);
  return s;
}

class MatMulOp : public Op {
 public:
  explicit MatMulOp(DeviceChoice device) : device_(std::move(device)) {}

  void run(OpContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype()) {
      fail(std::string("A is ") + dtype_name(a.dtype()) + " but B is " + dtype_name(b.dtype()));
    }
    const MatMulShape s = matmul_shape(a.shape(), b.shape(), false);
    Tensor y(a.dtype(), s.out);
    const int64_t M = s.M, N = s.N, K = s.K;
    const int64_t batches = shape_size(s.batch);
    auto body = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* ad = a.data<T>();
      const T* bd = b.data<T>();
      T* yd = y.data<T>();
      if (y.size() == 0) return;
      auto one = [&](const T* ap, const T* bp, T* yp, int64_t rows) {
        if constexpr (std::is_same_v<T, float>) {
          if (device_.gemm(false, false, rows, N, K, 1.0f, ap, std::max<int64_t>(K, 1), bp, std::max<int64_t>(N, 1),
                           0.0f, yp, std::max<int64_t>(N, 1))) {
            return;
          }
          GemmOptions opt;
          opt.threads = gemm_threads(rows, N, K, ctx.threads());
          gemm_f32(false, false, rows, N, K, 1.0f, ap, std::max<int64_t>(K, 1), bp, std::max<int64_t>(N, 1), 0.0f, yp,
                   std::max<int64_t>(N, 1), opt);
        } else {
          gemm_loop<T>(false, false, rows, N, K, T(1), ap, K, bp, N, false, yp, N, ctx.threads());
        }
      };
      const Shape a_batch(a.shape().begin(), a.shape().end() - (s.a_vec ? 1 : 2));
      const Shape b_batch(b.shape().begin(), b.shape().end() - (s.b_vec ? 1 : 2));
      // B shared by every batch and A's batches contiguous: one GEMM with batch*M rows.
      if (shape_size(b_batch) == 1 && shape_size(a_batch) == batches) {
        one(ad, bd, yd, batches * M);
        return;
      }
      const Shape sa = strides_for(a_batch, s.batch), sb = strides_for(b_batch, s.batch);
      Shape idx(s.batch.size());  // all zeros
      for (int64_t n = 0; n < batches; ++n) {
        int64_t oa = 0, ob = 0;
        for (size_t k = 0; k < idx.size(); ++k) {
          oa += idx[k] * sa[k];
          ob += idx[k] * sb[k];
        }
        one(ad + oa * M * K, bd + ob * K * N, yd + n * M * N, M);
        for (size_t k = idx.size(); k-- > 0;) {
          if (++idx[k] < s.batch[k]) break;
          idx[k] = 0;
        }
      }
    };
    switch (a.dtype()) {
      case DType::kFloat: body(TypeTag<float>{}); break;
      case DType::kDouble: body(TypeTag<double>{}); break;
      case DType::kInt32: body(TypeTag<int32_t>{}); break;
      case DType::kInt64: body(TypeTag<int64_t>{}); break;
      case DType::kUInt32: body(TypeTag<uint32_t>{}); break;
      case DType::kUInt64: body(TypeTag<uint64_t>{}); break;
      default: fail(std::string("does not support element type ") + dtype_name(a.dtype()));
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  // Batch strides (in matrices) of an operand's batch dims, right-aligned to the output's, 0 where
  // broadcast.
  static Shape strides_for(const Shape& dims, const Shape& out) {
    Shape st(out.size(), 0);
    int64_t s = 1;
    for (size_t k = out.size(); k-- > 0;) {
      const size_t off = out.size() - dims.size();
      const int64_t d = k < off ? 1 : dims[k - off];
      st[k] = d == 1 ? 0 : s;
      s *= d;
    }
    return st;
  }

  DeviceChoice device_;
};

std::unique_ptr<Op> make_matmul(CompileContext& ctx) {
  ctx.expect_inputs(2, 2);
  ctx.expect_outputs(1, 1);
  const std::initializer_list<DType> types = {DType::kFloat, DType::kDouble, DType::kInt32,
                                              DType::kInt64, DType::kUInt32, DType::kUInt64};
  ctx.expect_type(0, types);
  ctx.expect_type(1, types);
  const ValueInfo& a = ctx.input(0);
  const ValueInfo& b = ctx.input(1);
  if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype) {
    fail(std::string("A is ") + dtype_name(a.dtype) + " but B is " + dtype_name(b.dtype));
  }
  ValueInfo out;
  out.dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
  if (a.has_shape && b.has_shape) {
    out.has_shape = true;
    out.dims = matmul_shape(a.dims, b.dims, true).out;
  }
  ctx.outputs = {out};
  return std::make_unique<MatMulOp>(DeviceChoice(ctx));
}

}  // namespace

void add_linalg_ops(OpRegistry& r) {
  r[":Gemm"] = make_gemm;
  r[":MatMul"] = make_matmul;
}

}  // namespace platform::tabular
