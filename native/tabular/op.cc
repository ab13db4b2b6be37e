#include "op.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace platform::tabular {

bool ValueInfo::fully_known() const {
  return has_shape && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

void fail(const std::string& message) { throw std::runtime_error(message); }

std::string dims_str(const Shape& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s + "]";
}

// ---- CompileContext ----

CompileContext::CompileContext(const NodeDesc& node, std::vector<const ValueInfo*> inputs)
    : node_(node), inputs_(std::move(inputs)) {}

const ValueInfo& CompileContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required");
  return *inputs_[i];
}

void CompileContext::expect_inputs(size_t min, size_t max) const {
  const size_t n = inputs_.size();
  if (n < min || n > max) {
    const std::string takes = min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max);
    fail("has " + std::to_string(n) + " inputs but takes " + takes);
  }
  for (size_t i = 0; i < min; ++i) {
    if (inputs_[i] == nullptr) fail("leaves its required input " + std::to_string(i) + " empty");
  }
}

void CompileContext::expect_outputs(size_t min, size_t max) const {
  const size_t n = node_.outputs.size();
  if (n < min || n > max) {
    const std::string has = min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max);
    fail("has " + std::to_string(n) + " outputs but produces " + has);
  }
}

void CompileContext::expect_type(size_t input, std::initializer_list<DType> allowed) const {
  if (!has_input(input)) return;
  const DType t = inputs_[input]->dtype;
  if (t == DType::kUndefined) return;
  if (std::find(allowed.begin(), allowed.end(), t) != allowed.end()) return;
  std::string list;
  for (DType a : allowed) {
    if (!list.empty()) list += ", ";
    list += dtype_name(a);
  }
  fail("input " + std::to_string(input) + " has element type " + dtype_name(t) + "; expected " + list);
}

namespace {

const char* kind_article(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kFloat: return "a float";
    case Attribute::Kind::kInt: return "an int";
    case Attribute::Kind::kString: return "a string";
    case Attribute::Kind::kTensor: return "a tensor";
    case Attribute::Kind::kFloats: return "a list of floats";
    case Attribute::Kind::kInts: return "a list of ints";
    case Attribute::Kind::kStrings: return "a list of strings";
    default: return "another type";
  }
}

}  // namespace

bool CompileContext::has_attr(const char* name) const { return node_.attributes.count(name) != 0; }

const Attribute& CompileContext::attr(const char* name, Attribute::Kind kind, const char* what) const {
  auto it = node_.attributes.find(name);
  if (it == node_.attributes.end()) fail(std::string("lacks the required attribute \"") + name + "\"");
  if (it->second.kind != kind) {
    fail(std::string("attribute \"") + name + "\" must be " + what + ", not " + kind_article(it->second.kind));
  }
  return it->second;
}

double CompileContext::attr_float(const char* name) const {
  return attr(name, Attribute::Kind::kFloat, "a float").f;
}
double CompileContext::attr_float(const char* name, double fallback) const {
  return has_attr(name) ? attr_float(name) : fallback;
}
int64_t CompileContext::attr_int(const char* name) const { return attr(name, Attribute::Kind::kInt, "an int").i; }
int64_t CompileContext::attr_int(const char* name, int64_t fallback) const {
  return has_attr(name) ? attr_int(name) : fallback;
}
std::string CompileContext::attr_string(const char* name) const {
  return attr(name, Attribute::Kind::kString, "a string").s;
}
std::string CompileContext::attr_string(const char* name, const std::string& fallback) const {
  return has_attr(name) ? attr_string(name) : fallback;
}
std::vector<double> CompileContext::attr_floats(const char* name) const {
  if (!has_attr(name)) return {};
  return attr(name, Attribute::Kind::kFloats, "a list of floats").floats;
}
std::vector<int64_t> CompileContext::attr_ints(const char* name) const {
  if (!has_attr(name)) return {};
  return attr(name, Attribute::Kind::kInts, "a list of ints").ints;
}
std::vector<std::string> CompileContext::attr_strings(const char* name) const {
  if (!has_attr(name)) return {};
  return attr(name, Attribute::Kind::kStrings, "a list of strings").strings;
}
const Tensor& CompileContext::attr_tensor(const char* name) const {
  return attr(name, Attribute::Kind::kTensor, "a tensor").t;
}

// ---- OpContext ----

OpContext::OpContext(std::vector<const Tensor*> inputs, std::vector<Tensor*> reusable,
                             size_t num_outputs, int threads)
    : inputs_(std::move(inputs)), reusable_(std::move(reusable)), outputs_(num_outputs), threads_(threads) {}

const Tensor& OpContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required");
  return *inputs_[i];
}

void OpContext::set_output(size_t i, Tensor t) {
  if (i >= outputs_.size()) return;  // an omitted trailing output: nobody reads it
  outputs_[i] = std::move(t);
}

Tensor OpContext::output_like(size_t i, DType type, const Shape& shape) {
  if (i < reusable_.size() && reusable_[i] != nullptr && type != DType::kString) {
    Tensor* slot = reusable_[i];
    const auto& buf = slot->buffer();
    if (buf && buf.use_count() == 1 && slot->dtype() != DType::kString) {
      const int64_t n = shape_size(shape);
      if (static_cast<size_t>(n) * dtype_size(type) == buf->byte_size()) {
        return slot->sharing_buffer(type, shape);
      }
    }
  }
  return Tensor(type, shape);
}

// ---- helpers ----

int64_t normalize_axis(int64_t axis, int64_t rank, const char* what, bool inclusive) {
  // [-rank, rank - 1], or [-rank, rank] when the axis may point past the last dimension (Flatten).
  const int64_t hi = inclusive ? rank : rank - 1;
  if (axis < -rank || axis > hi) {
    fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_dims(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da == 1) {
      out[k] = db;
    } else if (db == 1) {
      out[k] = da;
    } else if (da < 0 || db < 0) {
      out[k] = da < 0 ? db : da;  // the known one (or unknown when both are)
      if (da < 0 && db < 0) out[k] = -1;
    } else if (da == db) {
      out[k] = da;
    } else {
      fail("shapes " + dims_str(a) + " and " + dims_str(b) + " cannot be broadcast together");
    }
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    const int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da == db || db == 1) {
      out[k] = da;
    } else if (da == 1) {
      out[k] = db;
    } else {
      fail("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together");
    }
  }
  return out;
}

PostTransform parse_post_transform(const std::string& name) {
  if (name == "NONE") return PostTransform::kNone;
  if (name == "SOFTMAX") return PostTransform::kSoftmax;
  if (name == "LOGISTIC") return PostTransform::kLogistic;
  if (name == "SOFTMAX_ZERO") return PostTransform::kSoftmaxZero;
  if (name == "PROBIT") return PostTransform::kProbit;
  fail("post_transform \"" + name + "\" is not supported");
}

// onnxruntime computes these in float; the same formulas give the same values.
float ml_logistic(float x) {
  const float v = 1.0f / (1.0f + std::exp(-std::abs(x)));
  return x < 0 ? 1.0f - v : v;
}

namespace {

float erf_inv(float x) {
  // The approximation onnxruntime uses (Winitzki, a = 0.147), so PROBIT scores agree.
  const float sgn = x < 0 ? -1.0f : 1.0f;
  x = (1 - x) * (1 + x);
  const float lg = std::log(x);
  const float v = 2 / (3.14159265358979323846f * 0.147f) + 0.5f * lg;
  const float v2 = 1 / 0.147f * lg;
  const float v3 = -v + std::sqrt(v * v - v2);
  return sgn * std::sqrt(v3);
}

}  // namespace

float ml_probit(float x) { return 1.41421356237309504880f * erf_inv(2 * x - 1); }

void apply_post_transform(float* s, int64_t n, PostTransform t) {
  switch (t) {
    case PostTransform::kNone: return;
    case PostTransform::kLogistic:
      for (int64_t i = 0; i < n; ++i) s[i] = ml_logistic(s[i]);
      return;
    case PostTransform::kProbit:
      for (int64_t i = 0; i < n; ++i) s[i] = ml_probit(s[i]);
      return;
    case PostTransform::kSoftmax: {
      float vmax = -std::numeric_limits<float>::max();
      for (int64_t i = 0; i < n; ++i) vmax = std::max(vmax, s[i]);
      float sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        s[i] = std::exp(s[i] - vmax);
        sum += s[i];
      }
      for (int64_t i = 0; i < n; ++i) s[i] /= sum;
      return;
    }
    case PostTransform::kSoftmaxZero: {
      // Zeros stay zero (they mean "no score"), as in onnxruntime.
      float vmax = -std::numeric_limits<float>::max();
      for (int64_t i = 0; i < n; ++i) vmax = std::max(vmax, s[i]);
      const float exp_neg_max = std::exp(-vmax);
      float sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (s[i] > 0.0000001f || s[i] < -0.0000001f) {
          s[i] = std::exp(s[i] - vmax);
          sum += s[i];
        } else {
          s[i] *= exp_neg_max;
        }
      }
      for (int64_t i = 0; i < n; ++i) s[i] /= sum;
      return;
    }
  }
}

MlRows ml_rows(const Tensor& x) {
  if (x.rank() == 1) return {1, x.dim(0)};
  if (x.rank() == 2) return {x.dim(0), x.dim(1)};
  fail("the input must be [N, F] or [F], got shape " + shape_str(x.shape()));
}

const float* ml_as_float(const Tensor& x, std::vector<float>& scratch) {
  if (x.dtype() == DType::kFloat) return x.data<float>();
  scratch.resize(static_cast<size_t>(x.size()));
  dispatch_numeric(x.dtype(), "the operator", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d = x.data<T>();
    for (int64_t i = 0; i < x.size(); ++i) scratch[i] = static_cast<float>(d[i]);
  });
  return scratch.data();
}

std::vector<float> ml_floats(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

}  // namespace platform::tabular
