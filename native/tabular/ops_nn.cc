// Softmax (both the pre-13 "coerce to 2-D" meaning and the per-axis one) and BatchNormalization
// in inference mode.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../core/thread_pool.h"
#include "op.h"

namespace platform::tabular {
namespace {

// ---- Softmax ----

// Softmax over `len` elements spaced `stride` apart.
template <typename T>
void softmax_strided(const T* x, T* y, int64_t len, int64_t stride) {
  T vmax = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < len; ++i) vmax = std::max(vmax, x[i * stride]);
  // A row of -inf (or of NaN) has no finite maximum: follow the arithmetic (NaNs), as onnxruntime.
  T sum = 0;
  for (int64_t i = 0; i < len; ++i) {
    const T e = std::exp(x[i * stride] - vmax);
    y[i * stride] = e;
    sum += e;
  }
  const T inv = T(1) / sum;
  for (int64_t i = 0; i < len; ++i) y[i * stride] *= inv;
}

class SoftmaxOp : public Op {
 public:
  SoftmaxOp(int64_t axis, bool coerce_2d) : axis_(axis), coerce_2d_(coerce_2d) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t r = static_cast<int64_t>(x.rank());
    if (r == 0) fail("the input must have at least one dimension");
    const int64_t axis = normalize_axis(axis_, r, "axis", coerce_2d_);
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t k = 0; k < r; ++k) {
      if (k < axis) outer *= x.dim(k);
      else if (coerce_2d_ || k == axis) len *= x.dim(k);
      else inner *= x.dim(k);
    }
    Tensor y = ctx.output_like(0, x.dtype(), x.shape());
    dispatch_floating(x.dtype(), "Softmax", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      if (len == 0) return;
      auto rows = [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          for (int64_t j = 0; j < inner; ++j) {
            const int64_t base = o * len * inner + j;
            softmax_strided<T>(xd + base, yd + base, len, inner);
          }
        }
      };
      if (ctx.threads() > 1 && x.size() >= (1 << 15)) {
        parallel_for(0, outer, ctx.threads(), rows);
      } else {
        rows(0, outer);
      }
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  int64_t axis_;
  bool coerce_2d_;
};

std::unique_ptr<Op> make_softmax(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, {DType::kFloat, DType::kDouble});
  const int64_t axis = ctx.attr_int("axis", ctx.version() >= 13 ? -1 : 1);
  const bool coerce = ctx.attr_int("coerce_2d", ctx.version() >= 13 ? 0 : 1) != 0;
  const ValueInfo& x = ctx.input(0);
  if (x.has_shape) {
    if (x.rank() == 0) fail("the input must have at least one dimension");
    normalize_axis(axis, x.rank(), "axis", coerce);
  }
  ValueInfo out = x;
  out.constant = nullptr;
  ctx.outputs = {out};
  return std::make_unique<SoftmaxOp>(axis, coerce);
}

// ---- BatchNormalization ----

class BatchNormOp : public Op {
 public:
  explicit BatchNormOp(double epsilon) : epsilon_(epsilon) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) fail("X must be [N, C, ...], got shape " + shape_str(x.shape()));
    const int64_t N = x.dim(0), C = x.dim(1);
    const int64_t spatial = C == 0 ? 0 : x.size() / std::max<int64_t>(N * C, 1);
    static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i) {
      const Tensor& p = ctx.input(i);
      if (!is_floating(p.dtype())) fail(std::string(kNames[i]) + " must be float or double, not " + dtype_name(p.dtype()));
      if (p.rank() != 1 || p.dim(0) != C) {
        fail(std::string(kNames[i]) + " has shape " + shape_str(p.shape()) + " but X has " + std::to_string(C) +
             " channels (expected [" + std::to_string(C) + "])");
      }
    }
    // y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = B - mean * a, folded in double.
    std::vector<double> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      const double s = ctx.input(1).as_double(c) / std::sqrt(ctx.input(4).as_double(c) + epsilon_);
      a[c] = s;
      b[c] = ctx.input(2).as_double(c) - ctx.input(3).as_double(c) * s;
    }
    Tensor y = ctx.output_like(0, x.dtype(), x.shape());
    dispatch_floating(x.dtype(), "BatchNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < C; ++c) {
          const T ac = static_cast<T>(a[c]), bc = static_cast<T>(b[c]);
          const int64_t base = (n * C + c) * spatial;
          for (int64_t s = 0; s < spatial; ++s) yd[base + s] = xd[base + s] * ac + bc;
        }
      }
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  double epsilon_;
};

std::unique_ptr<Op> make_batchnorm(CompileContext& ctx) {
  ctx.expect_inputs(5, 5);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, {DType::kFloat, DType::kDouble});
  for (size_t i = 1; i < 5; ++i) ctx.expect_type(i, {DType::kFloat, DType::kDouble});
  const double epsilon = ctx.attr_float("epsilon", 1e-5);
  const ValueInfo& x = ctx.input(0);
  if (x.has_shape && x.rank() < 2) fail("X must be [N, C, ...], got shape " + dims_str(x.dims));
  const int64_t C = x.has_shape ? x.dims[1] : -1;
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    const ValueInfo& p = ctx.input(i);
    if (!p.has_shape) continue;
    if (p.rank() != 1 || (C >= 0 && p.dims[0] >= 0 && p.dims[0] != C)) {
      fail(std::string(kNames[i]) + " has shape " + dims_str(p.dims) + " but X has " +
           (C >= 0 ? std::to_string(C) : std::string("?")) + " channels");
    }
  }
  ValueInfo out = x;
  out.constant = nullptr;
  ctx.outputs = {out};
  return std::make_unique<BatchNormOp>(epsilon);
}

}  // namespace

void add_nn_ops(OpRegistry& r) {
  r[":Softmax"] = make_softmax;
  r[":BatchNormalization"] = make_batchnorm;
}

}  // namespace platform::tabular
