// ai.onnx.ml linear models and per-feature transforms: LinearRegressor, LinearClassifier, Scaler,
// Normalizer, Binarizer, Imputer. Semantics follow onnxruntime (checked against onnxruntime-node
// 1.30 in test/tabular-executor-ml.test.ts): inputs [N, F] or [F] (one row), scores in float.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "../backends/cpu/gemm.h"
#include "op.h"

namespace platform::tabular {
namespace {

void check_rank_le2(const ValueInfo& x) {
  if (x.has_shape && (x.rank() < 1 || x.rank() > 2)) fail("the input must be [N, F] or [F], got shape " + dims_str(x.dims));
}

int64_t static_features(const ValueInfo& x) {
  if (!x.has_shape || x.rank() < 1 || x.rank() > 2) return -1;
  return x.dims.back();
}

// scores[N, E] = X[N, F] * coef[E, F]^T + intercepts[E] (intercepts may be empty).
void linear_scores(const float* x, int64_t n, int64_t f, const std::vector<float>& coef,
                   const std::vector<float>& intercepts, int64_t e, float* out, int threads) {
  float beta = 0.0f;
  if (!intercepts.empty()) {
    for (int64_t i = 0; i < n; ++i) std::copy(intercepts.begin(), intercepts.end(), out + i * e);
    beta = 1.0f;
  }
  if (n == 0 || e == 0) return;
  GemmOptions opt;
  // As in ops_linalg.cc: products under 2^23 multiply-adds stay on one thread.
  opt.threads = n * e * f >= (int64_t{1} << 23) ? threads : 1;
  gemm_f32(false, true, n, e, f, 1.0f, x, std::max<int64_t>(f, 1), coef.data(), std::max<int64_t>(f, 1), beta, out,
           e, opt);
}

// ---- LinearRegressor ----

class LinearRegressorOp : public Op {
 public:
  LinearRegressorOp(std::vector<float> coef, std::vector<float> intercepts, int64_t targets, PostTransform post)
      : coef_(std::move(coef)), intercepts_(std::move(intercepts)), targets_(targets), post_(post) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const MlRows r = ml_rows(x);
    const int64_t features = static_cast<int64_t>(coef_.size()) / targets_;
    if (r.f != features) {
      fail("the input has " + std::to_string(r.f) + " features but the coefficients are for " + std::to_string(features));
    }
    std::vector<float> scratch;
    const float* xf = ml_as_float(x, scratch);
    Tensor y(DType::kFloat, {r.n, targets_});
    float* yd = y.data<float>();
    linear_scores(xf, r.n, r.f, coef_, intercepts_, targets_, yd, ctx.threads());
    if (targets_ == 1) {
      // One target: onnxruntime applies only PROBIT.
      if (post_ == PostTransform::kProbit) {
        for (int64_t i = 0; i < r.n; ++i) yd[i] = ml_probit(yd[i]);
      }
    } else if (post_ != PostTransform::kNone) {
      for (int64_t i = 0; i < r.n; ++i) apply_post_transform(yd + i * targets_, targets_, post_);
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  std::vector<float> coef_, intercepts_;
  int64_t targets_;
  PostTransform post_;
};

std::unique_ptr<Op> make_linear_regressor(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, kMlNumeric);
  check_rank_le2(ctx.input(0));
  const int64_t targets = ctx.attr_int("targets", 1);
  if (targets < 1) fail("attribute \"targets\" must be at least 1");
  std::vector<float> coef = ml_floats(ctx.attr_floats("coefficients"));
  std::vector<float> intercepts = ml_floats(ctx.attr_floats("intercepts"));
  if (coef.empty() || coef.size() % static_cast<size_t>(targets) != 0) {
    fail("has " + std::to_string(coef.size()) + " coefficients, not a positive multiple of targets = " +
         std::to_string(targets));
  }
  if (!intercepts.empty() && static_cast<int64_t>(intercepts.size()) != targets) {
    fail("has " + std::to_string(intercepts.size()) + " intercepts for " + std::to_string(targets) + " targets");
  }
  const int64_t f = static_features(ctx.input(0));
  const int64_t features = static_cast<int64_t>(coef.size()) / targets;
  if (f >= 0 && f != features) {
    fail("the input has " + std::to_string(f) + " features but the coefficients are for " + std::to_string(features));
  }
  const PostTransform post = parse_post_transform(ctx.attr_string("post_transform", "NONE"));
  ctx.outputs = {ValueInfo::of(DType::kFloat, {-1, targets})};
  return std::make_unique<LinearRegressorOp>(std::move(coef), std::move(intercepts), targets, post);
}

// ---- LinearClassifier ----

class LinearClassifierOp : public Op {
 public:
  LinearClassifierOp(std::vector<float> coef, std::vector<float> intercepts, std::vector<int64_t> int_labels,
                         std::vector<std::string> str_labels, PostTransform post)
      : coef_(std::move(coef)),
        intercepts_(std::move(intercepts)),
        int_labels_(std::move(int_labels)),
        str_labels_(std::move(str_labels)),
        post_(post) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const MlRows r = ml_rows(x);
    if (r.f == 0 || coef_.size() % static_cast<size_t>(r.f) != 0) {
      fail("the input has " + std::to_string(r.f) + " features, which does not divide the " +
           std::to_string(coef_.size()) + " coefficients");
    }
    const int64_t e = static_cast<int64_t>(coef_.size()) / r.f;
    if (!intercepts_.empty() && static_cast<int64_t>(intercepts_.size()) != e) {
      fail("the input has " + std::to_string(r.f) + " features, so the coefficients are for " + std::to_string(e) +
           " classes, but there are " + std::to_string(intercepts_.size()) + " intercepts");
    }
    const int64_t labels = static_cast<int64_t>(strings() ? str_labels_.size() : int_labels_.size());
    if (e == 1 ? labels != 2 : labels < e) {
      fail("has " + std::to_string(labels) + " class labels for " + std::to_string(e) + " score columns");
    }
    std::vector<float> scratch;
    const float* xf = ml_as_float(x, scratch);
    const bool binary = e == 1;
    const int64_t cols = binary ? 2 : e;
    std::vector<float> scores(static_cast<size_t>(r.n * e));
    linear_scores(xf, r.n, r.f, coef_, intercepts_, e, scores.data(), ctx.threads());

    Tensor label(strings() ? DType::kString : DType::kInt64, {r.n});
    Tensor z(DType::kFloat, {r.n, cols});
    float* zd = z.data<float>();
    for (int64_t i = 0; i < r.n; ++i) {
      const float* s = scores.data() + i * e;
      int64_t cls;
      if (binary) {
        cls = s[0] > 0 ? 1 : 0;
        // One score column: [1 - p, p]; onnxruntime applies LOGISTIC first and no other transform.
        float p = s[0];
        if (post_ == PostTransform::kLogistic) p = ml_logistic(p);
        if (post_ == PostTransform::kProbit) p = ml_probit(p);
        zd[i * 2] = 1.0f - p;
        zd[i * 2 + 1] = p;
      } else {
        cls = 0;
        for (int64_t j = 1; j < e; ++j) {
          if (s[j] > s[cls]) cls = j;
        }
        std::copy(s, s + e, zd + i * e);
        apply_post_transform(zd + i * e, e, post_);
      }
      if (strings()) {
        label.strings()[i] = str_labels_[cls];
      } else {
        label.data<int64_t>()[i] = int_labels_[cls];
      }
    }
    ctx.set_output(0, std::move(label));
    ctx.set_output(1, std::move(z));
  }

 private:
  bool strings() const { return !str_labels_.empty(); }
  std::vector<float> coef_, intercepts_;
  std::vector<int64_t> int_labels_;
  std::vector<std::string> str_labels_;
  PostTransform post_;
};

std::unique_ptr<Op> make_linear_classifier(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 2);
  ctx.expect_type(0, kMlNumeric);
  check_rank_le2(ctx.input(0));
  std::vector<float> coef = ml_floats(ctx.attr_floats("coefficients"));
  std::vector<float> intercepts = ml_floats(ctx.attr_floats("intercepts"));
  std::vector<int64_t> ints = ctx.attr_ints("classlabels_ints");
  std::vector<std::string> strs = ctx.attr_strings("classlabels_strings");
  if (coef.empty()) fail("has no coefficients");
  if (ints.empty() == strs.empty()) fail("needs exactly one of classlabels_ints and classlabels_strings");
  const int64_t labels = static_cast<int64_t>(strs.empty() ? ints.size() : strs.size());
  const int64_t f = static_features(ctx.input(0));
  int64_t e = -1;
  if (!intercepts.empty()) {
    e = static_cast<int64_t>(intercepts.size());
    if (coef.size() % intercepts.size() != 0) {
      fail("has " + std::to_string(coef.size()) + " coefficients for " + std::to_string(e) + " intercepts");
    }
  }
  if (f > 0) {
    if (coef.size() % static_cast<size_t>(f) != 0) {
      fail("the input has " + std::to_string(f) + " features, which does not divide the " + std::to_string(coef.size()) +
           " coefficients");
    }
    const int64_t ef = static_cast<int64_t>(coef.size()) / f;
    if (e >= 0 && ef != e) {
      fail("the input has " + std::to_string(f) + " features, so the coefficients are for " + std::to_string(ef) +
           " classes, but there are " + std::to_string(e) + " intercepts");
    }
    e = ef;
  }
  if (e >= 0 && (e == 1 ? labels != 2 : labels < e)) {
    fail("has " + std::to_string(labels) + " class labels for " + std::to_string(e) + " score columns");
  }
  const PostTransform post = parse_post_transform(ctx.attr_string("post_transform", "NONE"));
  ctx.outputs = {ValueInfo::of(strs.empty() ? DType::kInt64 : DType::kString, {-1}),
                 ValueInfo::of(DType::kFloat, {-1, e < 0 ? -1 : (e == 1 ? 2 : e)})};
  return std::make_unique<LinearClassifierOp>(std::move(coef), std::move(intercepts), std::move(ints),
                                                  std::move(strs), post);
}

// ---- Scaler ----

class ScalerOp : public Op {
 public:
  ScalerOp(std::vector<float> offset, std::vector<float> scale) : offset_(std::move(offset)), scale_(std::move(scale)) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() == 0) fail("the input must have at least one dimension");
    const int64_t stride = x.rank() == 1 ? x.dim(0) : x.dim(1);
    const bool per_feature = static_cast<int64_t>(offset_.size()) == stride;
    if (!per_feature && offset_.size() != 1) {
      fail("offset and scale have " + std::to_string(offset_.size()) + " entries but the input has " +
           std::to_string(stride) + " features (they must have 1 or one per feature)");
    }
    Tensor y(DType::kFloat, x.shape());
    float* yd = y.data<float>();
    dispatch_numeric(x.dtype(), "Scaler", [&](auto tag) {
      using T = typename decltype(tag)::type;
      // double input computes in double, the others in float, as onnxruntime does.
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* xd = x.data<T>();
      const int64_t n = x.size();
      if (per_feature && stride > 0) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t k = i % stride;
          yd[i] = static_cast<float>((static_cast<C>(xd[i]) - static_cast<C>(offset_[k])) * static_cast<C>(scale_[k]));
        }
      } else {
        const C o = offset_[0], s = scale_[0];
        for (int64_t i = 0; i < n; ++i) yd[i] = static_cast<float>((static_cast<C>(xd[i]) - o) * s);
      }
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  std::vector<float> offset_, scale_;
};

std::unique_ptr<Op> make_scaler(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, kMlNumeric);
  std::vector<float> offset = ml_floats(ctx.attr_floats("offset"));
  std::vector<float> scale = ml_floats(ctx.attr_floats("scale"));
  if (scale.empty()) fail("has an empty scale");
  if (offset.size() != scale.size()) {
    fail("has " + std::to_string(offset.size()) + " offsets but " + std::to_string(scale.size()) + " scales");
  }
  const ValueInfo& x = ctx.input(0);
  if (x.has_shape && x.rank() >= 1) {
    const int64_t stride = x.rank() == 1 ? x.dims[0] : x.dims[1];
    if (stride >= 0 && scale.size() != 1 && static_cast<int64_t>(scale.size()) != stride) {
      fail("offset and scale have " + std::to_string(scale.size()) + " entries but the input has " +
           std::to_string(stride) + " features");
    }
  }
  ValueInfo out = x;
  out.constant = nullptr;
  out.dtype = DType::kFloat;
  ctx.outputs = {out};
  return std::make_unique<ScalerOp>(std::move(offset), std::move(scale));
}

// ---- Normalizer ----

enum class Norm { kMax, kL1, kL2 };

class NormalizerOp : public Op {
 public:
  explicit NormalizerOp(Norm norm) : norm_(norm) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() == 0) fail("the input must have at least one dimension");
    Tensor y(DType::kFloat, x.shape());
    float* out = y.data<float>();
    // Normalises along axis 1 (axis 0 for 1-D input), like onnxruntime.
    const int64_t stride = x.rank() == 1 ? x.dim(0) : x.dim(1);
    int64_t inc = 1;
    for (size_t k = 2; k < x.rank(); ++k) inc *= x.dim(k);
    const int64_t loops = stride == 0 ? 0 : x.size() / stride;
    dispatch_numeric(x.dtype(), "Normalizer", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      for (int64_t l = 0; l < loops; ++l) {
        const int64_t off = (l % inc) + (l / inc) * (stride * inc);
        auto at = [&](int64_t s) { return off + s * inc; };
        float d = 0;
        if (norm_ == Norm::kMax) {
          d = std::numeric_limits<float>::lowest();
          for (int64_t s = 0; s < stride; ++s) d = std::max(d, static_cast<float>(in[at(s)]));
          if (d != 0.f) {
            for (int64_t s = 0; s < stride; ++s) out[at(s)] = static_cast<float>(in[at(s)]) / d;
            continue;
          }
        } else if (norm_ == Norm::kL1) {
          for (int64_t s = 0; s < stride; ++s) d += static_cast<float>(std::abs(static_cast<double>(in[at(s)])));
          if (d != 0.f) {
            for (int64_t s = 0; s < stride; ++s) out[at(s)] = static_cast<float>(in[at(s)]) / d;
            continue;
          }
        } else {
          // Squares in the input type (double for integers, which must not overflow).
          using W = std::conditional_t<std::is_integral_v<T>, double, T>;
          for (int64_t s = 0; s < stride; ++s) {
            const W v = static_cast<W>(in[at(s)]);
            d += static_cast<float>(v * v);
          }
          if (d != 0.f) {
            for (int64_t s = 0; s < stride; ++s) {
              const W v = static_cast<W>(in[at(s)]);
              const float r = std::sqrt(static_cast<float>(v * v) / d);
              out[at(s)] = v < 0 ? -r : r;
            }
            continue;
          }
        }
        // A zero divisor leaves the row unchanged.
        for (int64_t s = 0; s < stride; ++s) out[at(s)] = static_cast<float>(in[at(s)]);
      }
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  Norm norm_;
};

std::unique_ptr<Op> make_normalizer(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, kMlNumeric);
  const std::string norm = ctx.attr_string("norm", "MAX");
  Norm n;
  if (norm == "MAX") n = Norm::kMax;
  else if (norm == "L1") n = Norm::kL1;
  else if (norm == "L2") n = Norm::kL2;
  else fail("attribute \"norm\"=\"" + norm + "\" is not supported (MAX, L1 or L2)");
  ValueInfo out = ctx.input(0);
  out.constant = nullptr;
  out.dtype = DType::kFloat;
  ctx.outputs = {out};
  return std::make_unique<NormalizerOp>(n);
}

// ---- Binarizer ----

class BinarizerOp : public Op {
 public:
  explicit BinarizerOp(float threshold) : threshold_(threshold) {}
  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor y = ctx.output_like(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "Binarizer", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      for (int64_t i = 0; i < x.size(); ++i) {
        const T v = xd[i];
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(v)) fail("input element " + std::to_string(i) + " is NaN");
        }
        yd[i] = static_cast<C>(v) > static_cast<C>(threshold_) ? T(1) : T(0);
      }
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  float threshold_;
};

std::unique_ptr<Op> make_binarizer(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, kMlNumeric);
  const float threshold = static_cast<float>(ctx.attr_float("threshold", 0.0));
  ValueInfo out = ctx.input(0);
  out.constant = nullptr;
  ctx.outputs = {out};
  return std::make_unique<BinarizerOp>(threshold);
}

// ---- Imputer ----

class ImputerOp : public Op {
 public:
  ImputerOp(std::vector<double> floats, std::vector<int64_t> ints, float replaced_float, int64_t replaced_int)
      : floats_(std::move(floats)), ints_(std::move(ints)), replaced_float_(replaced_float), replaced_int_(replaced_int) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() == 0) fail("the input must have at least one dimension");
    const int64_t stride = x.rank() == 1 ? x.dim(0) : x.dim(1);
    Tensor y = ctx.output_like(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "Imputer", [&](auto tag) {
      using T = typename decltype(tag)::type;
      constexpr bool fl = std::is_floating_point_v<T>;
      const size_t count = fl ? floats_.size() : ints_.size();
      if (count == 0) {
        fail(std::string("the input is ") + dtype_name(x.dtype()) + " but only imputed_value_" +
             (fl ? "int64s" : "floats") + " is set");
      }
      if (count != 1 && static_cast<int64_t>(count) != stride) {
        fail("has " + std::to_string(count) + " imputed values but the input has " + std::to_string(stride) +
             " features (1 or one per feature)");
      }
      const T* xd = x.data<T>();
      T* yd = y.data<T>();
      const bool nan_replaced = fl && std::isnan(replaced_float_);
      const T replaced = fl ? static_cast<T>(replaced_float_) : static_cast<T>(replaced_int_);
      for (int64_t i = 0; i < x.size(); ++i) {
        const T v = xd[i];
        bool hit = v == replaced;
        if constexpr (fl) hit = hit || (nan_replaced && std::isnan(v));
        if (hit) {
          const size_t k = count == 1 ? 0 : static_cast<size_t>(i % stride);
          yd[i] = fl ? static_cast<T>(floats_[k]) : static_cast<T>(ints_[k]);
        } else {
          yd[i] = v;
        }
      }
    });
    ctx.set_output(0, std::move(y));
  }

 private:
  std::vector<double> floats_;
  std::vector<int64_t> ints_;
  float replaced_float_;
  int64_t replaced_int_;
};

std::unique_ptr<Op> make_imputer(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, kMlNumeric);
  std::vector<double> floats;
  for (double v : ctx.attr_floats("imputed_value_floats")) floats.push_back(static_cast<float>(v));
  std::vector<int64_t> ints = ctx.attr_ints("imputed_value_int64s");
  if (floats.empty() == ints.empty()) fail("needs exactly one of imputed_value_floats and imputed_value_int64s");
  const float rf = static_cast<float>(ctx.attr_float("replaced_value_float", 0.0));
  const int64_t ri = ctx.attr_int("replaced_value_int64", 0);
  const ValueInfo& x = ctx.input(0);
  if (x.dtype != DType::kUndefined) {
    const bool fl = is_floating(x.dtype);
    if (fl ? floats.empty() : ints.empty()) {
      fail(std::string("the input is ") + dtype_name(x.dtype) + " but only imputed_value_" + (fl ? "int64s" : "floats") +
           " is set");
    }
  }
  if (x.has_shape && x.rank() >= 1) {
    const int64_t stride = x.rank() == 1 ? x.dims[0] : x.dims[1];
    const size_t count = floats.empty() ? ints.size() : floats.size();
    if (stride >= 0 && count != 1 && static_cast<int64_t>(count) != stride) {
      fail("has " + std::to_string(count) + " imputed values but the input has " + std::to_string(stride) + " features");
    }
  }
  ValueInfo out = x;
  out.constant = nullptr;
  ctx.outputs = {out};
  return std::make_unique<ImputerOp>(std::move(floats), std::move(ints), rf, ri);
}

}  // namespace

void add_ml_linear_ops(OpRegistry& r) {
  r["ai.onnx.ml:LinearRegressor"] = make_linear_regressor;
  r["ai.onnx.ml:LinearClassifier"] = make_linear_classifier;
  r["ai.onnx.ml:Scaler"] = make_scaler;
  r["ai.onnx.ml:Normalizer"] = make_normalizer;
  r["ai.onnx.ml:Binarizer"] = make_binarizer;
  r["ai.onnx.ml:Imputer"] = make_imputer;
}

}  // namespace platform::tabular
