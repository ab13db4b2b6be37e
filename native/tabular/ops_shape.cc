// Shape operators: Flatten, Reshape, Squeeze, Unsqueeze (views of the input buffer, no copy),
// Concat and Transpose (copies). All work on every element type, strings included.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>

#include "op.h"

namespace platform::tabular {
namespace {

// Copies `count` elements of any type (memcpy for numbers, assignment for strings).
void copy_elements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DType::kString) {
    std::copy(src.strings() + src_off, src.strings() + src_off + count, dst.strings() + dst_off);
    return;
  }
  const size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + dst_off * es, static_cast<const char*>(src.raw()) + src_off * es,
              static_cast<size_t>(count) * es);
}

ValueInfo same_type(const ValueInfo& in) {
  ValueInfo v;
  v.dtype = in.dtype;
  return v;
}

// ---- Flatten ----

Shape flatten_dims(const Shape& d, int64_t axis) {
  int64_t outer = 1, inner = 1;
  bool outer_known = true, inner_known = true;
  for (int64_t k = 0; k < static_cast<int64_t>(d.size()); ++k) {
    if (k < axis) {
      if (d[k] < 0) outer_known = false; else outer *= d[k];
    } else {
      if (d[k] < 0) inner_known = false; else inner *= d[k];
    }
  }
  return {outer_known ? outer : -1, inner_known ? inner : -1};
}

class FlattenOp : public Op {
 public:
  explicit FlattenOp(int64_t axis) : axis_(axis) {}
  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t axis = normalize_axis(axis_, static_cast<int64_t>(x.rank()), "axis", true);
    ctx.set_output(0, x.reshaped(flatten_dims(x.shape(), axis)));
  }

 private:
  int64_t axis_;
};

std::unique_ptr<Op> make_flatten(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  const int64_t axis = ctx.attr_int("axis", 1);
  const ValueInfo& x = ctx.input(0);
  ValueInfo out = same_type(x);
  out.has_shape = true;
  out.dims = {-1, -1};
  if (x.has_shape) out.dims = flatten_dims(x.dims, normalize_axis(axis, x.rank(), "axis", true));
  ctx.outputs = {out};
  return std::make_unique<FlattenOp>(axis);
}

// ---- Reshape ----

// The target shape; `in` may hold -1 (unknown) at compile time, then so may the result.
Shape reshape_dims(const Shape& in, const std::vector<int64_t>& spec, bool allowzero) {
  Shape out(spec.size());
  int64_t infer = -1;
  int64_t known = 1;
  bool unknown = false, overflow = false;
  for (size_t k = 0; k < spec.size(); ++k) {
    const int64_t s = spec[k];
    if (s == -1) {
      if (infer >= 0) fail("the shape " + shape_str(spec) + " has more than one -1");
      infer = static_cast<int64_t>(k);
      continue;
    }
    if (s < -1) fail("the shape " + shape_str(spec) + " has the invalid dimension " + std::to_string(s));
    if (s == 0 && !allowzero) {
      if (k >= in.size()) {
        fail("the shape " + shape_str(spec) + " copies dimension " + std::to_string(k) + " (0) but the input " +
             dims_str(in) + " has only " + std::to_string(in.size()));
      }
      out[k] = in[k];
    } else {
      out[k] = s;
    }
    if (out[k] < 0) {
      unknown = true;
    } else if (known != 0 && out[k] > std::numeric_limits<int64_t>::max() / known) {
      // Found by the fuzzer (test/data/fuzz-regressions/tabular_graph_fuzz/reshape-overflow): the
      // product overflowed (undefined behaviour), and a wrapped product could even match the
      // input's element count. Only a later 0 dimension makes such a shape a tensor.
      overflow = true;
    } else {
      known *= out[k];
    }
  }
  if (overflow && known != 0) fail("the shape " + shape_str(spec) + " has too many elements");
  if (allowzero && infer >= 0 && std::find(spec.begin(), spec.end(), 0) != spec.end()) {
    fail("the shape " + shape_str(spec) + " has both 0 and -1, which allowzero = 1 forbids");
  }
  const bool in_known = std::all_of(in.begin(), in.end(), [](int64_t d) { return d >= 0; });
  const int64_t total = in_known ? shape_size(in) : -1;
  if (infer >= 0) {
    if (unknown || total < 0) {
      out[infer] = -1;
    } else if (known == 0) {
      if (total != 0) fail("cannot infer the -1 in " + shape_str(spec) + " for an input " + dims_str(in));
      out[infer] = 0;
    } else {
      if (total % known != 0) {
        fail("cannot reshape an input of shape " + dims_str(in) + " (" + std::to_string(total) + " elements) to " +
             shape_str(spec));
      }
      out[infer] = total / known;
    }
  } else if (!unknown && total >= 0 && known != total) {
    fail("cannot reshape an input of shape " + dims_str(in) + " (" + std::to_string(total) + " elements) to " +
         dims_str(out));
  }
  return out;
}

std::vector<int64_t> shape_values(const Tensor& t) {
  if (t.dtype() != DType::kInt64) fail(std::string("the shape input must be int64, not ") + dtype_name(t.dtype()));
  if (t.rank() != 1) fail("the shape input must be 1-D, got shape " + shape_str(t.shape()));
  const int64_t* d = t.data<int64_t>();
  return std::vector<int64_t>(d, d + t.size());
}

class ReshapeOp : public Op {
 public:
  explicit ReshapeOp(bool allowzero) : allowzero_(allowzero) {}
  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape out = reshape_dims(x.shape(), shape_values(ctx.input(1)), allowzero_);
    ctx.set_output(0, x.reshaped(out));
  }

 private:
  bool allowzero_;
};

std::unique_ptr<Op> make_reshape(CompileContext& ctx) {
  ctx.expect_inputs(2, 2);
  ctx.expect_outputs(1, 1);
  const bool allowzero = ctx.attr_int("allowzero", 0) != 0;
  ctx.expect_type(1, {DType::kInt64});
  const ValueInfo& x = ctx.input(0);
  const ValueInfo& s = ctx.input(1);
  ValueInfo out = same_type(x);
  if (s.constant != nullptr) {
    const std::vector<int64_t> spec = shape_values(*s.constant);
    out.has_shape = true;
    if (x.has_shape) {
      out.dims = reshape_dims(x.dims, spec, allowzero);
    } else {
      out.dims.assign(spec.size(), -1);
      for (size_t k = 0; k < spec.size(); ++k) {
        if (spec[k] > 0 || (spec[k] == 0 && allowzero)) out.dims[k] = spec[k];
      }
    }
  } else if (s.fully_known() && s.rank() == 1) {
    out.has_shape = true;
    out.dims.assign(static_cast<size_t>(s.dims[0]), -1);
  }
  ctx.outputs = {out};
  return std::make_unique<ReshapeOp>(allowzero);
}

// ---- Squeeze / Unsqueeze ----

Shape squeeze_dims(const Shape& in, const std::vector<int64_t>& axes, bool has_axes) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (!has_axes) {
    for (int64_t k = 0; k < r; ++k) drop[k] = in[k] == 1;
  } else {
    for (int64_t a : axes) {
      const int64_t k = normalize_axis(a, r, "axis");
      if (drop[k]) fail("axis " + std::to_string(a) + " is given twice");
      if (in[k] >= 0 && in[k] != 1) {
        fail("cannot squeeze axis " + std::to_string(a) + " of shape " + dims_str(in) + ": its size is " +
             std::to_string(in[k]) + ", not 1");
      }
      drop[k] = true;
    }
  }
  Shape out;
  for (int64_t k = 0; k < r; ++k) {
    if (!drop[k]) out.push_back(in[k]);
  }
  return out;
}

Shape unsqueeze_dims(const Shape& in, const std::vector<int64_t>& axes) {
  const int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> insert(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    const int64_t k = normalize_axis(a, r, "axis");
    if (insert[k]) fail("axis " + std::to_string(a) + " is given twice");
    insert[k] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t k = 0; k < r; ++k) out.push_back(insert[k] ? 1 : in[j++]);
  return out;
}

class SqueezeOp : public Op {
 public:
  SqueezeOp(std::vector<int64_t> axes, bool has_axes, bool unsqueeze)
      : axes_(std::move(axes)), has_axes_(has_axes), unsqueeze_(unsqueeze) {}
  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ctx.set_output(0, x.reshaped(unsqueeze_ ? unsqueeze_dims(x.shape(), axes_) : squeeze_dims(x.shape(), axes_, has_axes_)));
  }

 private:
  std::vector<int64_t> axes_;
  bool has_axes_, unsqueeze_;
};

template <bool unsqueeze>
std::unique_ptr<Op> make_squeeze(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  const bool has_axes = ctx.has_attr("axes");
  if (unsqueeze && !has_axes) fail("lacks the required attribute \"axes\"");
  const std::vector<int64_t> axes = ctx.attr_ints("axes");
  const ValueInfo& x = ctx.input(0);
  ValueInfo out = same_type(x);
  if (x.has_shape) {
    out.has_shape = true;
    if constexpr (unsqueeze) {
      out.dims = unsqueeze_dims(x.dims, axes);
    } else if (!has_axes && !x.fully_known()) {
      out.has_shape = false;  // which dims are 1 is only known at run time
    } else {
      out.dims = squeeze_dims(x.dims, axes, has_axes);
    }
  }
  ctx.outputs = {out};
  return std::make_unique<SqueezeOp>(axes, has_axes, unsqueeze);
}

// ---- Concat ----

class ConcatOp : public Op {
 public:
  explicit ConcatOp(int64_t axis) : axis_(axis) {}
  void run(OpContext& ctx) const override {
    const Tensor& first = ctx.input(0);
    const int64_t r = static_cast<int64_t>(first.rank());
    if (r == 0) fail("cannot concatenate scalars");
    const int64_t axis = normalize_axis(axis_, r, "axis");
    Shape out = first.shape();
    out[axis] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.input(i);
      if (t.dtype() != first.dtype()) {
        fail("input " + std::to_string(i) + " is " + dtype_name(t.dtype()) + " but input 0 is " + dtype_name(first.dtype()));
      }
      if (static_cast<int64_t>(t.rank()) != r) {
        fail("input " + std::to_string(i) + " has shape " + shape_str(t.shape()) + ", of another rank than input 0's " +
             shape_str(first.shape()));
      }
      for (int64_t k = 0; k < r; ++k) {
        if (k != axis && t.dim(k) != first.dim(k)) {
          fail("input " + std::to_string(i) + " has shape " + shape_str(t.shape()) + " but input 0 has " +
               shape_str(first.shape()) + " (only axis " + std::to_string(axis) + " may differ)");
        }
      }
      out[axis] += t.dim(axis);
    }
    Tensor y(first.dtype(), out);
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= out[k];
    int64_t inner = 1;
    for (int64_t k = axis + 1; k < r; ++k) inner *= out[k];
    const int64_t row = out[axis] * inner;
    int64_t col = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& t = ctx.input(i);
      const int64_t chunk = t.dim(axis) * inner;
      for (int64_t o = 0; o < outer; ++o) copy_elements(t, o * chunk, y, o * row + col, chunk);
      col += chunk;
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  int64_t axis_;
};

std::unique_ptr<Op> make_concat(CompileContext& ctx) {
  ctx.expect_outputs(1, 1);
  if (ctx.num_inputs() == 0) fail("needs at least one input");
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) fail("leaves input " + std::to_string(i) + " empty");
  }
  const int64_t axis = ctx.attr_int("axis");
  const ValueInfo& first = ctx.input(0);
  ValueInfo out = same_type(first);
  bool all_shapes = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ValueInfo& v = ctx.input(i);
    if (v.dtype != DType::kUndefined && out.dtype != DType::kUndefined && v.dtype != out.dtype) {
      fail("input " + std::to_string(i) + " is " + dtype_name(v.dtype) + " but input 0 is " + dtype_name(out.dtype));
    }
    if (out.dtype == DType::kUndefined) out.dtype = v.dtype;
    if (!v.has_shape) all_shapes = false;
  }
  if (all_shapes) {
    const int64_t r = first.rank();
    if (r == 0) fail("cannot concatenate scalars");
    const int64_t ax = normalize_axis(axis, r, "axis");
    out.has_shape = true;
    out.dims = first.dims;
    out.dims[ax] = 0;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ValueInfo& v = ctx.input(i);
      if (v.rank() != r) {
        fail("input " + std::to_string(i) + " has shape " + dims_str(v.dims) + ", of another rank than input 0's " +
             dims_str(first.dims));
      }
      for (int64_t k = 0; k < r; ++k) {
        if (k == ax) continue;
        if (v.dims[k] >= 0 && out.dims[k] >= 0 && v.dims[k] != out.dims[k]) {
          fail("input " + std::to_string(i) + " has shape " + dims_str(v.dims) + " but input 0 has " +
               dims_str(first.dims) + " (only axis " + std::to_string(ax) + " may differ)");
        }
        if (out.dims[k] < 0) out.dims[k] = v.dims[k];
      }
      out.dims[ax] = (out.dims[ax] < 0 || v.dims[ax] < 0) ? -1 : out.dims[ax] + v.dims[ax];
    }
  }
  ctx.outputs = {out};
  return std::make_unique<ConcatOp>(axis);
}

// ---- Transpose ----

std::vector<int64_t> resolve_perm(const std::vector<int64_t>& perm, bool has_perm, int64_t r) {
  std::vector<int64_t> p(static_cast<size_t>(r));
  if (!has_perm) {
    for (int64_t k = 0; k < r; ++k) p[k] = r - 1 - k;
    return p;
  }
  if (static_cast<int64_t>(perm.size()) != r) {
    fail("perm " + shape_str(perm) + " has " + std::to_string(perm.size()) + " entries for an input of rank " +
         std::to_string(r));
  }
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (int64_t k = 0; k < r; ++k) {
    const int64_t a = normalize_axis(perm[k], r, "perm entry");
    if (seen[a]) fail("perm " + shape_str(perm) + " is not a permutation");
    seen[a] = true;
    p[k] = a;
  }
  return p;
}

class TransposeOp : public Op {
 public:
  TransposeOp(std::vector<int64_t> perm, bool has_perm) : perm_(std::move(perm)), has_perm_(has_perm) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t r = static_cast<int64_t>(x.rank());
    const std::vector<int64_t> p = resolve_perm(perm_, has_perm_, r);
    Shape out(static_cast<size_t>(r));
    for (int64_t k = 0; k < r; ++k) out[k] = x.dim(p[k]);
    Tensor y(x.dtype(), out);
    Shape in_strides(static_cast<size_t>(r), 1);
    for (int64_t k = r - 1; k > 0; --k) in_strides[k - 1] = in_strides[k] * x.dim(k);
    Shape src_strides(static_cast<size_t>(r));  // input stride of each output dim
    for (int64_t k = 0; k < r; ++k) src_strides[k] = in_strides[p[k]];
    const int64_t n = x.size();
    dispatch_any(x.dtype(), "Transpose", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd;
      T* yd;
      if constexpr (std::is_same_v<T, std::string>) {
        xd = x.strings();
        yd = y.strings();
      } else {
        xd = x.data<T>();
        yd = y.data<T>();
      }
      if (n == 0) return;
      if (r == 0) {
        yd[0] = xd[0];
        return;
      }
      // Odometer over the output; innermost dim as a strided loop.
      const int64_t inner = out[r - 1];
      const int64_t istride = src_strides[r - 1];
      Shape idx(static_cast<size_t>(r), 0);
      int64_t src = 0;
      for (int64_t o = 0; o < n; o += inner) {
        for (int64_t j = 0; j < inner; ++j) yd[o + j] = xd[src + j * istride];
        for (int64_t k = r - 1; k-- > 0;) {
          src += src_strides[k];
          if (++idx[k] < out[k]) break;
          src -= src_strides[k] * out[k];
          idx[k] = 0;
        }
      }
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  std::vector<int64_t> perm_;
  bool has_perm_;
};

std::unique_ptr<Op> make_transpose(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  const bool has_perm = ctx.has_attr("perm");
  const std::vector<int64_t> perm = ctx.attr_ints("perm");
  const ValueInfo& x = ctx.input(0);
  ValueInfo out = same_type(x);
  if (x.has_shape) {
    const std::vector<int64_t> p = resolve_perm(perm, has_perm, x.rank());
    out.has_shape = true;
    for (int64_t a : p) out.dims.push_back(x.dims[a]);
  }
  ctx.outputs = {out};
  return std::make_unique<TransposeOp>(perm, has_perm);
}

}  // namespace

void add_shape_ops(OpRegistry& r) {
  r[":Flatten"] = make_flatten;
  r[":Reshape"] = make_reshape;
  r[":Squeeze"] = make_squeeze<false>;
  r[":Unsqueeze"] = make_squeeze<true>;
  r[":Concat"] = make_concat;
  r[":Transpose"] = make_transpose;
}

}  // namespace platform::tabular
