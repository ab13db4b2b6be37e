// ai.onnx.ml support vector machines: SVMClassifier and SVMRegressor (libsvm's models as
// scikit-learn's SVC, NuSVC, SVR, NuSVR and OneClassSVM convert to them). Semantics follow
// onnxruntime (checked against onnxruntime-node 1.30 in test/tabular-executor-svm.test.ts):
// inputs [N, F] or [F] of float, double, int32 or int64, computed in float.
//
// Two modes, chosen by the attributes:
// - support vectors (vectors_per_class / n_supports > 0): K[n, v] = kernel(x_n, sv_v); the
//   regressor is K * coefficients + rho[0]; the classifier scores each pair of classes (i < j) as
//   libsvm does (one-vs-one, coefficients laid out [C - 1, V]) and votes;
// - no support vectors ("liblinear" mode): coefficients are per-class weights [C, F] (one row for
//   the regressor), scores = X * W^T + rho[0], the kernel is linear whatever kernel_type says.
// The kernel matrix is one GEMM for LINEAR, POLY and SIGMOID (then the power or tanh) and a direct
// distance for RBF (the |x|^2 + |sv|^2 - 2 x.sv expansion loses the small distances in float).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../backends/cpu/gemm.h"
#include "../core/thread_pool.h"
#include "op.h"

namespace platform::tabular {
namespace {

// Products and distances under this many multiply-adds stay on one thread (see native/README.md,
// Threads: a parallel region costs more than it saves below ~0.5 ms).
constexpr int64_t kParallelWork = int64_t{1} << 21;
// One-vs-one scoring keeps C x C pairwise probabilities per row; libsvm models have a handful of
// classes, so this only stops a malformed model from asking for gigabytes.
constexpr int64_t kMaxPairwiseClasses = 4096;

std::string count(size_t n) { return std::to_string(n); }

// out = a * b for sizes taken from attributes (or from them and an input); false when the product
// does not fit. Every such product is checked before it is compared with an array size or used to
// size one, so that a hostile model cannot wrap it onto a size that passes.
bool product_fits(size_t a, size_t b, size_t& out) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a) return false;
  out = a * b;
  return true;
}

// rows * columns elements of a run-time buffer (the kernel matrix), refusing a product that
// overflows int64 rather than allocating or indexing with a wrapped size.
int64_t elements(int64_t rows, int64_t columns, const char* what) {
  size_t out = 0;
  if (rows < 0 || columns < 0 || !product_fits(static_cast<size_t>(rows), static_cast<size_t>(columns), out) ||
      out > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    fail(std::string("the ") + what + " of " + std::to_string(rows) + " rows by " + std::to_string(columns) +
         " columns is too large");
  }
  return static_cast<int64_t>(out);
}

// n * v * f multiply-adds, saturating (it only chooses between one thread and many).
int64_t work(int64_t n, int64_t v, int64_t f) {
  size_t nv = 0, nvf = 0;
  if (!product_fits(static_cast<size_t>(n), static_cast<size_t>(v), nv) ||
      !product_fits(nv, static_cast<size_t>(f), nvf) || nvf > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(nvf);
}

// ---- kernels ----

enum class KernelType { kLinear, kPoly, kRbf, kSigmoid };

struct Kernel {
  KernelType type = KernelType::kLinear;
  float gamma = 0, coef0 = 0, degree = 0;
};

Kernel read_kernel(const CompileContext& ctx) {
  Kernel k;
  const std::string name = ctx.attr_string("kernel_type", "LINEAR");
  if (name == "LINEAR") k.type = KernelType::kLinear;
  else if (name == "POLY") k.type = KernelType::kPoly;
  else if (name == "RBF") k.type = KernelType::kRbf;
  else if (name == "SIGMOID") k.type = KernelType::kSigmoid;
  else fail("kernel_type \"" + name + "\" is not supported (LINEAR, POLY, RBF or SIGMOID)");
  const std::vector<double> params = ctx.attr_floats("kernel_params");
  if (!params.empty()) {
    if (params.size() != 3) fail("kernel_params has " + count(params.size()) + " values; it must be [gamma, coef0, degree]");
    k.gamma = static_cast<float>(params[0]);
    k.coef0 = static_cast<float>(params[1]);
    k.degree = static_cast<float>(params[2]);
  }
  return k;
}

// out[n, v] = kernel(x[n, :], sv[v, :]) for a batch of n rows of f features against v vectors.
void kernel_matrix(const Kernel& k, const float* x, int64_t n, int64_t f, const std::vector<float>& sv, int64_t v,
                   float* out, int threads) {
  if (n == 0 || v == 0) return;
  const bool parallel = threads > 1 && n > 1 && work(n, v, f) >= kParallelWork;
  if (k.type == KernelType::kRbf) {
    auto rows = [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float* xi = x + i * f;
        for (int64_t j = 0; j < v; ++j) {
          const float* s = sv.data() + j * f;
          float sum = 0;
          for (int64_t q = 0; q < f; ++q) {
            const float d = xi[q] - s[q];
            sum += d * d;
          }
          out[i * v + j] = std::exp(-k.gamma * sum);
        }
      }
    };
    if (parallel) {
      parallel_for(0, n, threads, rows);
    } else {
      rows(0, n);
    }
    return;
  }
  // LINEAR: x.sv; POLY: (gamma x.sv + coef0)^degree; SIGMOID: tanh(gamma x.sv + coef0).
  const bool linear = k.type == KernelType::kLinear;
  const float alpha = linear ? 1.0f : k.gamma;
  const float c = linear ? 0.0f : k.coef0;
  if (c != 0) std::fill(out, out + n * v, c);
  GemmOptions opt;
  opt.threads = parallel ? threads : 1;
  gemm_f32(false, true, n, v, f, alpha, x, std::max<int64_t>(f, 1), sv.data(), std::max<int64_t>(f, 1),
           c != 0 ? 1.0f : 0.0f, out, v, opt);
  const int64_t size = n * v;
  if (k.type == KernelType::kPoly) {
    if (k.degree == 2) {
      for (int64_t i = 0; i < size; ++i) out[i] = out[i] * out[i];
    } else if (k.degree == 3) {
      for (int64_t i = 0; i < size; ++i) out[i] = out[i] * out[i] * out[i];
    } else {
      for (int64_t i = 0; i < size; ++i) out[i] = std::pow(out[i], k.degree);
    }
  } else if (k.type == KernelType::kSigmoid) {
    for (int64_t i = 0; i < size; ++i) out[i] = std::tanh(out[i]);
  }
}

// scores[n, e] = x[n, f] * w[e, f]^T + bias (the liblinear mode of both operators).
void weights_times(const float* x, int64_t n, int64_t f, const std::vector<float>& w, int64_t e, float bias, float* out,
                   int threads) {
  if (n == 0 || e == 0) return;
  if (bias != 0) std::fill(out, out + n * e, bias);
  GemmOptions opt;
  opt.threads = threads > 1 && work(n, e, f) >= kParallelWork ? threads : 1;
  gemm_f32(false, true, n, e, f, 1.0f, x, std::max<int64_t>(f, 1), w.data(), std::max<int64_t>(f, 1),
           bias != 0 ? 1.0f : 0.0f, out, e, opt);
}

[[noreturn]] void wrong_features(int64_t f, int64_t features) {
  fail("the input has " + std::to_string(f) + " features but the model is for " + std::to_string(features));
}

// The input's static shape against the model's features (when it is known at compile time)...
void check_input(const CompileContext& ctx, int64_t features) {
  const ValueInfo& x = ctx.input(0);
  if (!x.has_shape) return;
  if (x.rank() < 1 || x.rank() > 2) fail("the input must be [N, F] or [F], got shape " + dims_str(x.dims));
  const int64_t f = x.dims.back();
  if (f >= 0 && f != features) wrong_features(f, features);
}

// ... and at run time: its n rows of the model's `features`, as float (a view when it already is).
struct FloatRows {
  int64_t n = 0;
  const float* x = nullptr;
};

FloatRows input_rows(const Tensor& x, int64_t features, std::vector<float>& scratch) {
  const MlRows r = ml_rows(x);
  if (r.f != features) wrong_features(r.f, features);
  return {r.n, ml_as_float(x, scratch)};
}

// ---- pairwise coupling (Wu, Lin and Weng 2004, libsvm's multiclass_probability) ----

// r[i * c + j]: the probability that class i beats class j (diagonal unused). Writes p[c].
// Float arithmetic in onnxruntime's order, so that the iteration stops at the same step.
void couple_probabilities(int64_t c, const float* r, float* q, float* qp, float* p) {
  std::fill(q, q + c * c, 0.0f);
  for (int64_t i = 0; i < c; ++i) {
    p[i] = 1.0f / static_cast<float>(c);
    for (int64_t j = 0; j < i; ++j) {
      q[i * c + i] += r[j * c + i] * r[j * c + i];
      q[i * c + j] = q[j * c + i];
    }
    for (int64_t j = i + 1; j < c; ++j) {
      q[i * c + i] += r[j * c + i] * r[j * c + i];
      q[i * c + j] = -r[j * c + i] * r[i * c + j];
    }
  }
  const float eps = 0.005f / static_cast<float>(c);
  for (int iter = 0; iter < 100; ++iter) {
    float pqp = 0;
    for (int64_t i = 0; i < c; ++i) {
      qp[i] = 0;
      for (int64_t j = 0; j < c; ++j) qp[i] += q[i * c + j] * p[j];
      pqp += p[i] * qp[i];
    }
    float max_error = 0;
    for (int64_t i = 0; i < c; ++i) max_error = std::max(max_error, std::fabs(qp[i] - pqp));
    if (max_error < eps) break;
    for (int64_t i = 0; i < c; ++i) {
      const float diff = (-qp[i] + pqp) / q[i * c + i];
      p[i] += diff;
      pqp = (pqp + diff * (diff * q[i * c + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < c; ++j) {
        qp[j] = (qp[j] + diff * q[i * c + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

// ---- SVMClassifier ----

struct ClassifierModel {
  bool linear = false;  // no support vectors: coefficients are weights [C, F]
  Kernel kernel;
  int64_t classes = 0, features = 0, vectors = 0;
  std::vector<int64_t> per_class, first;  // support vectors of each class, and where they start
  std::vector<float> support_vectors, coefficients, rho, prob_a, prob_b;
  std::vector<int64_t> int_labels;
  std::vector<std::string> str_labels;
  PostTransform post = PostTransform::kNone;

  bool strings() const { return !str_labels.empty(); }
  int64_t pairs() const { return classes * (classes - 1) / 2; }
  bool probabilities() const { return !prob_a.empty(); }
  // Columns of Z: one per class (linear, probabilities), two for a binary decision value, else
  // one per pair of classes.
  int64_t score_columns() const {
    if (linear || probabilities()) return classes;
    return classes == 2 ? 2 : pairs();
  }
};

class SvmClassifierOp : public Op {
 public:
  explicit SvmClassifierOp(ClassifierModel m) : m_(std::move(m)) {}

  void run(OpContext& ctx) const override {
    std::vector<float> scratch;
    const auto [n, xf] = input_rows(ctx.input(0), m_.features, scratch);
    const int64_t cols = m_.score_columns();
    Tensor label(m_.strings() ? DType::kString : DType::kInt64, {n});
    Tensor z(DType::kFloat, {n, cols});
    float* zd = z.data<float>();
    std::vector<int64_t> winners(static_cast<size_t>(n));
    if (m_.linear) {
      run_linear(xf, n, zd, winners.data(), ctx.threads());
    } else {
      run_pairwise(xf, n, zd, winners.data(), ctx.threads());
    }
    for (int64_t i = 0; i < n; ++i) {
      const size_t w = static_cast<size_t>(winners[i]);
      if (m_.strings()) {
        label.strings()[i] = m_.str_labels[w];
      } else {
        label.data<int64_t>()[i] = m_.int_labels[w];
      }
    }
    ctx.set_output(0, std::move(label));
    ctx.set_output(1, std::move(z));
  }

 private:
  void run_linear(const float* x, int64_t n, float* z, int64_t* winners, int threads) const {
    const int64_t c = m_.classes;
    weights_times(x, n, m_.features, m_.coefficients, c, m_.rho[0], z, threads);
    for (int64_t i = 0; i < n; ++i) {
      float* s = z + i * c;
      // The label is the class of the highest score (for two classes onnxruntime prefers class 1
      // whenever a score is positive; see native/tabular/README.md).
      winners[i] = std::max_element(s, s + c) - s;
      if (c >= 2) {
        apply_post_transform(s, c, m_.post);
      } else if (m_.post == PostTransform::kProbit) {
        s[0] = ml_probit(s[0]);  // one score: only PROBIT applies, as in onnxruntime
      }
    }
  }

  void run_pairwise(const float* x, int64_t n, float* z, int64_t* winners, int threads) const {
    const int64_t c = m_.classes, v = m_.vectors, p = m_.pairs();
    std::vector<float> kernels(static_cast<size_t>(elements(n, v, "kernel matrix")));
    kernel_matrix(m_.kernel, x, n, m_.features, m_.support_vectors, v, kernels.data(), threads);
    std::vector<float> decision(static_cast<size_t>(p));
    std::vector<int64_t> votes(static_cast<size_t>(c));
    std::vector<float> pairwise, q, qp;
    if (m_.probabilities()) {
      pairwise.assign(static_cast<size_t>(c * c), 0.0f);
      q.resize(static_cast<size_t>(c * c));
      qp.resize(static_cast<size_t>(c));
    }
    for (int64_t row = 0; row < n; ++row) {
      const float* k = kernels.data() + row * v;
      std::fill(votes.begin(), votes.end(), 0);
      // Pair (i, j): the coefficients of class i's vectors are in row j - 1, those of class j's
      // in row i (libsvm's sv_coef layout). Summed in double, as onnxruntime does.
      int64_t pair = 0;
      for (int64_t i = 0; i < c - 1; ++i) {
        for (int64_t j = i + 1; j < c; ++j, ++pair) {
          double sum = 0;
          const float* ci = m_.coefficients.data() + (j - 1) * v + m_.first[i];
          const float* ki = k + m_.first[i];
          for (int64_t t = 0; t < m_.per_class[i]; ++t) sum += ci[t] * ki[t];
          const float* cj = m_.coefficients.data() + i * v + m_.first[j];
          const float* kj = k + m_.first[j];
          for (int64_t t = 0; t < m_.per_class[j]; ++t) sum += cj[t] * kj[t];
          sum += m_.rho[pair];
          decision[pair] = static_cast<float>(sum);
          ++votes[sum > 0 ? i : j];
        }
      }
      // The label is the class with the most votes (the first on a tie), with or without
      // probabilities, as libsvm's and scikit-learn's predict.
      winners[row] = std::max_element(votes.begin(), votes.end()) - votes.begin();
      float* s = z + row * m_.score_columns();
      if (m_.probabilities()) {
        pair = 0;
        for (int64_t i = 0; i < c - 1; ++i) {
          for (int64_t j = i + 1; j < c; ++j, ++pair) {
            // Platt scaling, clamped away from 0 and 1 as libsvm does.
            const float sigmoid = 1.0f - ml_logistic(decision[pair] * m_.prob_a[pair] + m_.prob_b[pair]);
            const float prob = std::min(std::max(sigmoid, 1.0e-7f), 1 - 1.0e-7f);
            pairwise[i * c + j] = prob;
            pairwise[j * c + i] = 1 - prob;
          }
        }
        couple_probabilities(c, pairwise.data(), q.data(), qp.data(), s);
        apply_post_transform(s, c, m_.post);
      } else if (c == 2) {
        // One decision value d (> 0 votes for class 0), two columns as onnxruntime 1.30 writes
        // them: NONE [-d, d]; LOGISTIC [1 - p, p] with p = logistic(d); SOFTMAX and SOFTMAX_ZERO
        // [1 - d, d], d untransformed; PROBIT [probit(d), 0] (onnxruntime leaves the second unset).
        const float d = decision[0];
        if (m_.post == PostTransform::kNone) {
          s[0] = -d;
          s[1] = d;
        } else if (m_.post == PostTransform::kLogistic) {
          const float prob = ml_logistic(d);
          s[0] = 1 - prob;
          s[1] = prob;
        } else if (m_.post == PostTransform::kProbit) {
          s[0] = ml_probit(d);
          s[1] = 0;
        } else {
          s[0] = 1 - d;
          s[1] = d;
        }
      } else {
        std::copy(decision.begin(), decision.end(), s);
        apply_post_transform(s, p, m_.post);
      }
    }
  }

  ClassifierModel m_;
};

std::unique_ptr<Op> make_svm_classifier(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 2);
  ctx.expect_type(0, kMlNumeric);
  ClassifierModel m;
  m.kernel = read_kernel(ctx);
  m.post = parse_post_transform(ctx.attr_string("post_transform", "NONE"));
  m.int_labels = ctx.attr_ints("classlabels_ints");
  m.str_labels = ctx.attr_strings("classlabels_strings");
  if (m.int_labels.empty() == m.str_labels.empty()) fail("needs exactly one of classlabels_ints and classlabels_strings");
  m.classes = static_cast<int64_t>(m.strings() ? m.str_labels.size() : m.int_labels.size());
  m.coefficients = ml_floats(ctx.attr_floats("coefficients"));
  m.support_vectors = ml_floats(ctx.attr_floats("support_vectors"));
  m.rho = ml_floats(ctx.attr_floats("rho"));
  m.prob_a = ml_floats(ctx.attr_floats("prob_a"));
  m.prob_b = ml_floats(ctx.attr_floats("prob_b"));
  m.per_class = ctx.attr_ints("vectors_per_class");
  if (m.coefficients.empty()) fail("has no coefficients");
  if (m.prob_a.size() != m.prob_b.size()) {
    fail("has " + count(m.prob_a.size()) + " prob_a but " + count(m.prob_b.size()) + " prob_b values");
  }
  // Each support vector has at least one value, so the counts must add up to at most the number of
  // support vector values; checked before each addition, so that the sum cannot wrap (entries may
  // be up to 2^53 - 1 and there may be thousands of them) onto a small count that the later checks
  // would accept while the counts themselves index far past the arrays.
  const size_t sv_values = m.support_vectors.size();
  size_t vectors = 0;
  for (size_t i = 0; i < m.per_class.size(); ++i) {
    const int64_t k = m.per_class[i];
    if (k < 0) fail("vectors_per_class has a negative count " + std::to_string(k));
    if (static_cast<uint64_t>(k) > sv_values - vectors) {
      fail("vectors_per_class counts more support vectors than the " + count(sv_values) +
           " support vector values hold (entry " + count(i) + " is " + std::to_string(k) + ")");
    }
    vectors += static_cast<size_t>(k);
  }
  m.vectors = static_cast<int64_t>(vectors);
  const size_t classes = static_cast<size_t>(m.classes);
  if (m.vectors == 0) {
    // liblinear mode: one row of weights per class and one bias.
    if (!m.support_vectors.empty()) fail("has support vectors but vectors_per_class counts none");
    if (!m.prob_a.empty()) fail("has prob_a and prob_b but no support vectors (they calibrate pairwise decisions)");
    if (m.coefficients.size() % classes != 0) {
      fail("has " + count(m.coefficients.size()) + " coefficients without support vectors, not a multiple of the " +
           count(classes) + " classes");
    }
    if (m.rho.size() != 1) fail("has " + count(m.rho.size()) + " rho values without support vectors; it needs 1");
    m.linear = true;
    m.features = static_cast<int64_t>(m.coefficients.size() / classes);
  } else {
    if (m.per_class.size() != classes) {
      fail("vectors_per_class has " + count(m.per_class.size()) + " entries for " + count(classes) + " classes");
    }
    if (m.classes < 2) fail("has support vectors but only one class");
    if (m.classes > kMaxPairwiseClasses) {
      fail("has " + count(classes) + " classes; at most " + std::to_string(kMaxPairwiseClasses) + " are supported");
    }
    const size_t v = static_cast<size_t>(m.vectors);
    if (m.support_vectors.empty() || m.support_vectors.size() % v != 0) {
      fail("has " + count(m.support_vectors.size()) + " support vector values, not a positive multiple of the " +
           count(v) + " vectors that vectors_per_class counts");
    }
    size_t needed = 0;
    const bool fits = product_fits(classes - 1, v, needed);
    if (!fits || m.coefficients.size() != needed) {
      fail("has " + count(m.coefficients.size()) + " coefficients; " + count(classes) + " classes and " + count(v) +
           " support vectors need (classes - 1) * vectors = " + (fits ? count(needed) : std::string("too many")));
    }
    size_t pairs = 0;  // classes * (classes - 1) / 2, classes <= kMaxPairwiseClasses
    if (!product_fits(classes, classes - 1, pairs)) fail("has too many classes (" + count(classes) + ")");
    pairs /= 2;
    if (m.rho.size() != pairs) {
      fail("has " + count(m.rho.size()) + " rho values; " + count(classes) + " classes need one per pair, " + count(pairs));
    }
    if (!m.prob_a.empty() && m.prob_a.size() != pairs) {
      fail("has " + count(m.prob_a.size()) + " prob_a and prob_b values; " + count(classes) +
           " classes need one per pair, " + count(pairs));
    }
    m.features = static_cast<int64_t>(m.support_vectors.size() / v);
    int64_t start = 0;
    for (int64_t k : m.per_class) {
      m.first.push_back(start);
      start += k;
    }
  }
  check_input(ctx, m.features);
  ctx.outputs = {ValueInfo::of(m.strings() ? DType::kString : DType::kInt64, {-1}),
                 ValueInfo::of(DType::kFloat, {-1, m.score_columns()})};
  return std::make_unique<SvmClassifierOp>(std::move(m));
}

// ---- SVMRegressor ----

struct RegressorModel {
  Kernel kernel;
  int64_t features = 0, vectors = 0;  // vectors == 0: coefficients are the weights of a linear model
  std::vector<float> support_vectors, coefficients;
  float rho = 0;
  bool one_class = false;
};

class SvmRegressorOp : public Op {
 public:
  explicit SvmRegressorOp(RegressorModel m) : m_(std::move(m)) {}

  void run(OpContext& ctx) const override {
    std::vector<float> scratch;
    const auto [n, xf] = input_rows(ctx.input(0), m_.features, scratch);
    Tensor y(DType::kFloat, {n, 1});
    float* yd = y.data<float>();
    if (m_.vectors == 0) {
      weights_times(xf, n, m_.features, m_.coefficients, 1, m_.rho, yd, ctx.threads());
    } else {
      std::vector<float> kernels(static_cast<size_t>(elements(n, m_.vectors, "kernel matrix")));
      kernel_matrix(m_.kernel, xf, n, m_.features, m_.support_vectors, m_.vectors, kernels.data(), ctx.threads());
      weights_times(kernels.data(), n, m_.vectors, m_.coefficients, 1, m_.rho, yd, ctx.threads());
    }
    if (m_.one_class) {
      // OneClassSVM: +1 inside the learned region, -1 outside.
      for (int64_t i = 0; i < n; ++i) yd[i] = yd[i] > 0 ? 1.0f : -1.0f;
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  RegressorModel m_;
};

std::unique_ptr<Op> make_svm_regressor(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, kMlNumeric);
  RegressorModel m;
  m.kernel = read_kernel(ctx);
  // onnxruntime ignores post_transform here; we run only models for which that changes nothing.
  const std::string post = ctx.attr_string("post_transform", "NONE");
  if (post != "NONE") fail("post_transform \"" + post + "\" is not supported (only NONE)");
  const int64_t one_class = ctx.attr_int("one_class", 0);
  if (one_class != 0 && one_class != 1) fail("one_class must be 0 or 1, not " + std::to_string(one_class));
  m.one_class = one_class == 1;
  m.vectors = ctx.attr_int("n_supports", 0);
  if (m.vectors < 0) fail("n_supports must not be negative, not " + std::to_string(m.vectors));
  m.coefficients = ml_floats(ctx.attr_floats("coefficients"));
  m.support_vectors = ml_floats(ctx.attr_floats("support_vectors"));
  const std::vector<float> rho = ml_floats(ctx.attr_floats("rho"));
  if (m.coefficients.empty()) fail("has no coefficients");
  if (rho.size() != 1) fail("has " + count(rho.size()) + " rho values; it needs 1");
  m.rho = rho[0];
  if (m.vectors == 0) {
    if (!m.support_vectors.empty()) fail("has support vectors but n_supports is 0");
    m.features = static_cast<int64_t>(m.coefficients.size());
  } else {
    const size_t v = static_cast<size_t>(m.vectors);
    // One coefficient per support vector, each of at least one value: n_supports is bounded by both
    // arrays before it is used to divide them (the product n_supports * features is then the
    // number of support vector values exactly).
    if (v > m.support_vectors.size()) {
      fail("n_supports = " + count(v) + " counts more support vectors than the " + count(m.support_vectors.size()) +
           " support vector values hold");
    }
    if (m.support_vectors.empty() || m.support_vectors.size() % v != 0) {
      fail("has " + count(m.support_vectors.size()) + " support vector values, not a positive multiple of n_supports = " +
           count(v));
    }
    if (m.coefficients.size() != v) {
      fail("has " + count(m.coefficients.size()) + " coefficients for n_supports = " + count(v) + " support vectors");
    }
    m.features = static_cast<int64_t>(m.support_vectors.size() / v);
  }
  check_input(ctx, m.features);
  ctx.outputs = {ValueInfo::of(DType::kFloat, {-1, 1})};
  return std::make_unique<SvmRegressorOp>(std::move(m));
}

}  // namespace

void add_ml_svm_ops(OpRegistry& r) {
  r["ai.onnx.ml:SVMClassifier"] = make_svm_classifier;
  r["ai.onnx.ml:SVMRegressor"] = make_svm_regressor;
}

}  // namespace platform::tabular
