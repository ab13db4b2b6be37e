// Elementwise operators: Add, Sub, Mul, Div (numpy broadcasting), Relu, LeakyRelu, Sigmoid, Tanh,
// Exp, Log, Clip, Identity, Cast.
//
// Binary ops coalesce the broadcast into an outer loop over "rows" and an inner loop whose operand
// strides are 0 or 1, so [N, F] + [F], [N, F] * [N, 1] and scalar cases all run as tight
// vectorisable loops. Integer arithmetic wraps (computed in the unsigned type: no UB) and integer
// division by zero is an error rather than a crash.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "../core/thread_pool.h"
#include "op.h"

namespace platform::tabular {
namespace {

// Below this many elements a transcendental op stays on one thread.
constexpr int64_t kParallelTranscendental = 1 << 15;

// ---- binary arithmetic ----

enum class BinOp { kAdd, kSub, kMul, kDiv };

// The unsigned type of an integer type (the type itself otherwise).
template <typename T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct UnsignedOf {
  using type = T;
};
template <typename T>
struct UnsignedOf<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
struct Arith {
  // Signed overflow is UB in C++: integer +,-,* run in the unsigned type of the same width.
  using U = typename UnsignedOf<T>::type;

  template <BinOp op>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (op == BinOp::kAdd) return a + b;
      if constexpr (op == BinOp::kSub) return a - b;
      if constexpr (op == BinOp::kMul) return a * b;
      if constexpr (op == BinOp::kDiv) return a / b;
    } else {
      if constexpr (op == BinOp::kAdd) return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      if constexpr (op == BinOp::kSub) return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      if constexpr (op == BinOp::kMul) return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      if constexpr (op == BinOp::kDiv) {
        // b == 0 is rejected before the loop; MIN / -1 traps on x86, so negate instead.
        if constexpr (std::is_signed_v<T>) {
          if (b == -1) return static_cast<T>(U(0) - static_cast<U>(a));
        }
        return static_cast<T>(a / b);
      }
    }
  }
};

// Strides of `shape` (aligned right to `rank`) as seen from an output of `out` dims: 0 where the
// operand is broadcast.
Shape broadcast_strides(const Shape& shape, const Shape& out) {
  const size_t r = out.size();
  Shape strides(r, 0);
  int64_t s = 1;
  for (size_t k = r; k-- > 0;) {
    const size_t off = r - shape.size();
    const int64_t d = k < off ? 1 : shape[k - off];
    strides[k] = (d == 1 && out[k] != 1) ? 0 : s;
    s *= d;
  }
  return strides;
}

template <typename T, BinOp op>
void binary_loop(const T* a, const Shape& as, const T* b, const Shape& bs, T* y, const Shape& ys) {
  const int64_t n = shape_size(ys);
  if (n == 0) return;
  const int64_t na = shape_size(as);
  const int64_t nb = shape_size(bs);
  if (na == n && nb == n) {
    for (int64_t i = 0; i < n; ++i) y[i] = Arith<T>::template apply<op>(a[i], b[i]);
    return;
  }
  if (nb == 1) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = Arith<T>::template apply<op>(a[i], bv);
    return;
  }
  if (na == 1) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = Arith<T>::template apply<op>(av, b[i]);
    return;
  }
  // General case: coalesce dimensions whose strides compose, then loop rows x inner.
  Shape sa = broadcast_strides(as, ys), sb = broadcast_strides(bs, ys);
  Shape dims;
  Shape csa, csb;
  for (size_t k = 0; k < ys.size(); ++k) {
    if (ys[k] == 1) continue;
    if (!dims.empty() && csa.back() == sa[k] * ys[k] && csb.back() == sb[k] * ys[k]) {
      dims.back() *= ys[k];
      csa.back() = sa[k];
      csb.back() = sb[k];
    } else {
      dims.push_back(ys[k]);
      csa.push_back(sa[k]);
      csb.push_back(sb[k]);
    }
  }
  const size_t r = dims.size();
  const int64_t inner = dims[r - 1];
  const int64_t ia = csa[r - 1], ib = csb[r - 1];
  const int64_t rows = n / inner;
  Shape idx(r, 0);
  int64_t offa = 0, offb = 0;
  for (int64_t row = 0; row < rows; ++row) {
    T* yr = y + row * inner;
    const T* ar = a + offa;
    const T* br = b + offb;
    if (ia == 1 && ib == 1) {
      for (int64_t i = 0; i < inner; ++i) yr[i] = Arith<T>::template apply<op>(ar[i], br[i]);
    } else if (ia == 1) {
      const T bv = br[0];
      for (int64_t i = 0; i < inner; ++i) yr[i] = Arith<T>::template apply<op>(ar[i], bv);
    } else if (ib == 1) {
      const T av = ar[0];
      for (int64_t i = 0; i < inner; ++i) yr[i] = Arith<T>::template apply<op>(av, br[i]);
    } else {
      const T av = ar[0], bv = br[0];
      for (int64_t i = 0; i < inner; ++i) yr[i] = Arith<T>::template apply<op>(av, bv);
    }
    // Advance the outer index (dims 0..r-2) like an odometer.
    for (size_t k = r - 1; k-- > 0;) {
      ++idx[k];
      offa += csa[k];
      offb += csb[k];
      if (idx[k] < dims[k]) break;
      offa -= csa[k] * dims[k];
      offb -= csb[k] * dims[k];
      idx[k] = 0;
    }
  }
}

template <BinOp op>
class BinaryOp : public Op {
 public:
  void run(OpContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype()) {
      fail(std::string("inputs have different element types (") + dtype_name(a.dtype()) + " and " +
           dtype_name(b.dtype()) + ")");
    }
    const Shape ys = broadcast_shapes(a.shape(), b.shape());
    // Write in place into whichever input already has the output's shape and dies here.
    const int64_t n = shape_size(ys);
    const size_t reuse = (a.size() == n && a.shape() == ys) ? 0 : 1;
    Tensor y = ctx.output_like(reuse, a.dtype(), ys);
    dispatch_numeric(a.dtype(), kName(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (op == BinOp::kDiv && std::is_integral_v<T>) {
        const T* bd = b.data<T>();
        for (int64_t i = 0; i < b.size(); ++i) {
          if (bd[i] == 0) fail("integer division by zero");
        }
      }
      binary_loop<T, op>(a.data<T>(), a.shape(), b.data<T>(), b.shape(), y.data<T>(), ys);
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  static const char* kName() {
    switch (op) {
      case BinOp::kAdd: return "Add";
      case BinOp::kSub: return "Sub";
      case BinOp::kMul: return "Mul";
      default: return "Div";
    }
  }
};

template <BinOp op>
std::unique_ptr<Op> make_binary(CompileContext& ctx) {
  ctx.expect_inputs(2, 2);
  ctx.expect_outputs(1, 1);
  const ValueInfo& a = ctx.input(0);
  const ValueInfo& b = ctx.input(1);
  for (size_t i = 0; i < 2; ++i) {
    const DType t = ctx.input(i).dtype;
    if (t != DType::kUndefined && !is_numeric(t)) {
      fail("input " + std::to_string(i) + " has element type " + dtype_name(t) + "; expected a numeric type");
    }
  }
  if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype) {
    fail(std::string("inputs have different element types (") + dtype_name(a.dtype) + " and " + dtype_name(b.dtype) +
         ")");
  }
  ValueInfo out;
  out.dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
  if (a.has_shape && b.has_shape) {
    out.has_shape = true;
    out.dims = broadcast_dims(a.dims, b.dims);
  }
  if constexpr (op == BinOp::kDiv) {
    if (b.constant != nullptr && is_integer(b.constant->dtype())) {
      for (int64_t i = 0; i < b.constant->size(); ++i) {
        if (b.constant->as_int64(i) == 0) fail("integer division by zero (the divisor is a constant holding 0)");
      }
    }
  }
  ctx.outputs = {out};
  return std::make_unique<BinaryOp<op>>();
}

// ---- unary ----

enum class UnOp { kRelu, kLeakyRelu, kSigmoid, kTanh, kExp, kLog };

template <UnOp op, typename T>
inline T unary_apply(T x, T alpha) {
  if constexpr (op == UnOp::kRelu) return x > T(0) ? x : T(0);
  if constexpr (op == UnOp::kLeakyRelu) return x < T(0) ? alpha * x : x;
  if constexpr (op == UnOp::kSigmoid) {
    // Stable on both sides: exp never overflows.
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
  if constexpr (op == UnOp::kTanh) return std::tanh(x);
  if constexpr (op == UnOp::kExp) return std::exp(x);
  if constexpr (op == UnOp::kLog) return std::log(x);
}

template <UnOp op>
class UnaryOp : public Op {
 public:
  explicit UnaryOp(double alpha) : alpha_(alpha) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor y = ctx.output_like(0, x.dtype(), x.shape());
    auto body = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      const T alpha = static_cast<T>(alpha_);
      const int64_t n = x.size();
      constexpr bool heavy = op == UnOp::kSigmoid || op == UnOp::kTanh || op == UnOp::kExp || op == UnOp::kLog;
      if (heavy && n >= kParallelTranscendental && ctx.threads() > 1) {
        parallel_for(0, n, ctx.threads(), [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) yd[i] = unary_apply<op, T>(xd[i], alpha);
        });
      } else {
        for (int64_t i = 0; i < n; ++i) yd[i] = unary_apply<op, T>(xd[i], alpha);
      }
    };
    if constexpr (op == UnOp::kRelu) {
      switch (x.dtype()) {
        case DType::kFloat: body(TypeTag<float>{}); break;
        case DType::kDouble: body(TypeTag<double>{}); break;
        case DType::kInt8: body(TypeTag<int8_t>{}); break;
        case DType::kInt16: body(TypeTag<int16_t>{}); break;
        case DType::kInt32: body(TypeTag<int32_t>{}); break;
        case DType::kInt64: body(TypeTag<int64_t>{}); break;
        default: fail(std::string("does not support element type ") + dtype_name(x.dtype()));
      }
    } else {
      dispatch_floating(x.dtype(), "the operator", body);
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  double alpha_;
};

template <UnOp op>
std::unique_ptr<Op> make_unary(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  if constexpr (op == UnOp::kRelu) {
    ctx.expect_type(0, {DType::kFloat, DType::kDouble, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64});
  } else {
    ctx.expect_type(0, {DType::kFloat, DType::kDouble});
  }
  double alpha = 0;
  if constexpr (op == UnOp::kLeakyRelu) alpha = ctx.attr_float("alpha", 0.01);
  ValueInfo out = ctx.input(0);
  out.constant = nullptr;
  ctx.outputs = {out};
  return std::make_unique<UnaryOp<op>>(alpha);
}

// ---- Identity ----

class IdentityOp : public Op {
 public:
  void run(OpContext& ctx) const override { ctx.set_output(0, ctx.input(0)); }
};

std::unique_ptr<Op> make_identity(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ValueInfo out = ctx.input(0);
  out.constant = nullptr;
  ctx.outputs = {out};
  return std::make_unique<IdentityOp>();
}

// ---- Clip ----

class ClipOp : public Op {
 public:
  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    for (size_t i = 1; i < 3; ++i) {
      if (ctx.has_input(i) && ctx.input(i).size() != 1) {
        fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " + shape_str(ctx.input(i).shape()));
      }
    }
    Tensor y = ctx.output_like(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "Clip", [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Bounds may come in another type (the float32 initializers of Clip 1/6): convert to T.
      auto bound = [&](size_t i, T fallback) -> T {
        if (!ctx.has_input(i)) return fallback;
        const Tensor& b = ctx.input(i);
        if constexpr (std::is_floating_point_v<T>) {
          return static_cast<T>(b.as_double(0));
        } else {
          if (is_floating(b.dtype())) {
            const double v = b.as_double(0);
            if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
            if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
            return static_cast<T>(v);
          }
          return static_cast<T>(b.as_int64(0));
        }
      };
      const T lo = bound(1, std::numeric_limits<T>::lowest());
      const T hi = bound(2, std::numeric_limits<T>::max());
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      for (int64_t i = 0; i < x.size(); ++i) {
        T v = xd[i];
        // NaN passes through (comparisons are false), as in onnxruntime.
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        yd[i] = v;
      }
    });
    ctx.set_output(0, std::move(y));
  }
};

std::unique_ptr<Op> make_clip(CompileContext& ctx) {
  ctx.expect_inputs(1, 3);
  ctx.expect_outputs(1, 1);
  const DType t = ctx.input(0).dtype;
  if (t != DType::kUndefined && !is_numeric(t)) fail(std::string("does not support element type ") + dtype_name(t));
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    const ValueInfo& b = ctx.input(i);
    if (b.dtype != DType::kUndefined && !is_numeric(b.dtype)) {
      fail(std::string(i == 1 ? "min" : "max") + " has element type " + dtype_name(b.dtype));
    }
    if (b.fully_known() && shape_size(b.dims) != 1) {
      fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " + dims_str(b.dims));
    }
  }
  ValueInfo out = ctx.input(0);
  out.constant = nullptr;
  ctx.outputs = {out};
  return std::make_unique<ClipOp>();
}

// ---- Cast ----

// Text of a number as onnxruntime's Cast writes it: "%.8g" for float and double alike, NaN and
// the infinities as NaN, INF, -INF (measured against onnxruntime 1.30).
template <typename T>
std::string number_to_string(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v < 0 ? "-INF" : "INF";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.8g", static_cast<double>(v));
    return buf;
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "1" : "0";
  } else {
    return std::to_string(v);
  }
}

template <typename T>
T string_to_number(const std::string& s) {
  if constexpr (std::is_floating_point_v<T>) {
    // strtod accepts "nan", "inf", "INF", "-INF", "NaN"...
    const char* begin = s.c_str();
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    if (end == begin) fail("cannot cast the string \"" + s + "\" to a number");
    return static_cast<T>(v);
  } else {
    const char* begin = s.c_str();
    char* end = nullptr;
    errno = 0;
    if constexpr (std::is_same_v<T, bool>) {
      const double v = std::strtod(begin, &end);
      if (end == begin) fail("cannot cast the string \"" + s + "\" to bool");
      return v != 0;
    } else if constexpr (std::is_signed_v<T>) {
      const long long v = std::strtoll(begin, &end, 10);
      if (end == begin || errno == ERANGE || v < std::numeric_limits<T>::lowest() || v > std::numeric_limits<T>::max()) {
        fail("cannot cast the string \"" + s + "\" to " + dtype_name(dtype_of<T>()));
      }
      return static_cast<T>(v);
    } else {
      const unsigned long long v = std::strtoull(begin, &end, 10);
      if (end == begin || errno == ERANGE || v > std::numeric_limits<T>::max()) {
        fail("cannot cast the string \"" + s + "\" to " + dtype_name(dtype_of<T>()));
      }
      return static_cast<T>(v);
    }
  }
}

// Numeric conversion with defined results for every input: floats to integers truncate; NaN and
// out-of-range values give the minimum of the target (what x86 produces for int32/int64).
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if constexpr (sizeof(To) == 8) {
      if (!(v >= From(-9223372036854775808.0) && v < From(9223372036854775808.0))) {
        return static_cast<To>(std::numeric_limits<int64_t>::min());
      }
      return static_cast<To>(static_cast<int64_t>(v));
    } else {
      if (!(v >= From(-2147483648.0) && v < From(2147483648.0))) {
        return static_cast<To>(std::numeric_limits<int32_t>::min());
      }
      return static_cast<To>(static_cast<int32_t>(v));  // narrower targets wrap, as a C cast does
    }
  } else {
    return static_cast<To>(v);
  }
}

class CastOp : public Op {
 public:
  explicit CastOp(DType to) : to_(to) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == to_) {
      ctx.set_output(0, x);
      return;
    }
    Tensor y = (to_ == DType::kString || x.dtype() == DType::kString) ? Tensor(to_, x.shape())
                                                                       : ctx.output_like(0, to_, x.shape());
    const int64_t n = x.size();
    dispatch_any(x.dtype(), "Cast", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      dispatch_any(to_, "Cast", [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        if constexpr (std::is_same_v<From, std::string> && std::is_same_v<To, std::string>) {
          for (int64_t i = 0; i < n; ++i) y.strings()[i] = x.strings()[i];
        } else if constexpr (std::is_same_v<From, std::string>) {
          To* yd = y.data<To>();
          for (int64_t i = 0; i < n; ++i) yd[i] = string_to_number<To>(x.strings()[i]);
        } else if constexpr (std::is_same_v<To, std::string>) {
          const From* xd = x.data<From>();
          for (int64_t i = 0; i < n; ++i) y.strings()[i] = number_to_string<From>(xd[i]);
        } else {
          const From* xd = x.data<From>();
          To* yd = y.data<To>();
          if (static_cast<const void*>(xd) == static_cast<void*>(yd) && sizeof(To) == sizeof(From)) {
            // In place: read each element before it is overwritten.
            for (int64_t i = 0; i < n; ++i) {
              const From v = xd[i];
              yd[i] = convert<To, From>(v);
            }
          } else {
            for (int64_t i = 0; i < n; ++i) yd[i] = convert<To, From>(xd[i]);
          }
        }
      });
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  DType to_;
};

std::unique_ptr<Op> make_cast(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  const std::string to_name = ctx.attr_string("to");
  const DType to = dtype_from_name(to_name);
  if (to == DType::kUndefined) fail("attribute \"to\"=\"" + to_name + "\" is not a supported element type");
  ValueInfo out = ctx.input(0);
  out.constant = nullptr;
  out.dtype = to;
  ctx.outputs = {out};
  return std::make_unique<CastOp>(to);
}

}  // namespace

void add_elementwise_ops(OpRegistry& r) {
  r[":Add"] = make_binary<BinOp::kAdd>;
  r[":Sub"] = make_binary<BinOp::kSub>;
  r[":Mul"] = make_binary<BinOp::kMul>;
  r[":Div"] = make_binary<BinOp::kDiv>;
  r[":Relu"] = make_unary<UnOp::kRelu>;
  r[":LeakyRelu"] = make_unary<UnOp::kLeakyRelu>;
  r[":Sigmoid"] = make_unary<UnOp::kSigmoid>;
  r[":Tanh"] = make_unary<UnOp::kTanh>;
  r[":Exp"] = make_unary<UnOp::kExp>;
  r[":Log"] = make_unary<UnOp::kLog>;
  r[":Identity"] = make_identity;
  r[":Clip"] = make_clip;
  r[":Cast"] = make_cast;
}

}  // namespace platform::tabular
