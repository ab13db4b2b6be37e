// ai.onnx.ml encoders and selectors: ArrayFeatureExtractor, OneHotEncoder, LabelEncoder (string,
// int64, int32, int16, float and double keys and values) and ZipMap (whose output is the [N, C]
// probability tensor tagged with the map keys; the host formats the maps).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "op.h"

namespace platform::tabular {
namespace {

// Copies element `from` of `src` to element `to` of `dst` (same element type).
void copy_one(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  if (src.dtype() == DType::kString) {
    dst.strings()[to] = src.strings()[from];
    return;
  }
  const size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + to * es, static_cast<const char*>(src.raw()) + from * es, es);
}

// ---- ArrayFeatureExtractor ----

class ArrayFeatureExtractorOp : public Op {
 public:
  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (y.dtype() != DType::kInt64) fail(std::string("the indices must be int64, not ") + dtype_name(y.dtype()));
    if (x.rank() == 0) fail("X must have at least one dimension");
    const int64_t stride = x.dim(x.rank() - 1);
    const int64_t m = y.size();
    if (m == 0) fail("the indices are empty");
    const int64_t* idx = y.data<int64_t>();
    for (int64_t j = 0; j < m; ++j) {
      if (idx[j] < 0 || idx[j] >= stride) {
        fail("index " + std::to_string(idx[j]) + " (element " + std::to_string(j) + " of the indices) is out of range for " +
             std::to_string(stride) + " features");
      }
    }
    Shape out = x.shape();
    if (x.rank() == 1) {
      out = {1, m};  // onnxruntime's 1-D special case
    } else {
      out.back() = m;
    }
    Tensor z(x.dtype(), out);
    const int64_t rows = stride == 0 ? 0 : x.size() / stride;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < m; ++j) copy_one(x, r * stride + idx[j], z, r * m + j);
    }
    ctx.set_output(0, std::move(z));
  }
};

std::unique_ptr<Op> make_array_feature_extractor(CompileContext& ctx) {
  ctx.expect_inputs(2, 2);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(1, {DType::kInt64});
  const ValueInfo& x = ctx.input(0);
  const ValueInfo& y = ctx.input(1);
  ValueInfo out = ValueInfo::of_type(x.dtype);
  if (y.constant != nullptr && x.has_shape && x.rank() >= 1) {
    const int64_t stride = x.dims.back();
    const Tensor& t = *y.constant;
    if (t.size() == 0) fail("the indices are empty");
    for (int64_t j = 0; j < t.size(); ++j) {
      const int64_t v = t.data<int64_t>()[j];
      if (v < 0 || (stride >= 0 && v >= stride)) {
        fail("index " + std::to_string(v) + " is out of range for " + std::to_string(stride) + " features");
      }
    }
    out.has_shape = true;
    out.dims = x.rank() == 1 ? Shape{1, t.size()} : x.dims;
    out.dims.back() = t.size();
  }
  ctx.outputs = {out};
  return std::make_unique<ArrayFeatureExtractorOp>();
}

// ---- OneHotEncoder ----

class OneHotEncoderOp : public Op {
 public:
  OneHotEncoderOp(std::vector<int64_t> ints, std::vector<std::string> strs, bool zeros)
      : zeros_(zeros), count_(static_cast<int64_t>(ints.empty() ? strs.size() : ints.size())) {
    for (size_t k = 0; k < ints.size(); ++k) ints_.emplace(ints[k], static_cast<int64_t>(k));
    for (size_t k = 0; k < strs.size(); ++k) strs_.emplace(strs[k], static_cast<int64_t>(k));
  }

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape out = x.shape();
    out.push_back(count_);
    Tensor y(DType::kFloat, out);
    float* yd = y.data<float>();
    std::fill(yd, yd + y.size(), 0.0f);
    const int64_t n = x.size();
    if (x.dtype() == DType::kString) {
      if (strs_.empty()) fail("the input is string but the categories are cats_int64s");
      for (int64_t i = 0; i < n; ++i) {
        auto it = strs_.find(x.strings()[i]);
        if (it != strs_.end()) {
          yd[i * count_ + it->second] = 1.0f;
        } else if (!zeros_) {
          fail("input element " + std::to_string(i) + " (\"" + x.strings()[i] + "\") is not a category and zeros = 0");
        }
      }
    } else {
      if (ints_.empty()) fail(std::string("the input is ") + dtype_name(x.dtype()) + " but the categories are cats_strings");
      for (int64_t i = 0; i < n; ++i) {
        // Numbers are truncated to int64 before the lookup (onnxruntime casts them).
        const int64_t v = x.as_int64(i);
        auto it = ints_.find(v);
        if (it != ints_.end()) {
          yd[i * count_ + it->second] = 1.0f;
        } else if (!zeros_) {
          fail("input element " + std::to_string(i) + " (" + std::to_string(v) + ") is not a category and zeros = 0");
        }
      }
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  std::unordered_map<int64_t, int64_t> ints_;
  std::unordered_map<std::string, int64_t> strs_;
  bool zeros_;
  int64_t count_;
};

std::unique_ptr<Op> make_one_hot_encoder(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, {DType::kString, DType::kInt64, DType::kInt32, DType::kFloat, DType::kDouble});
  std::vector<int64_t> ints = ctx.attr_ints("cats_int64s");
  std::vector<std::string> strs = ctx.attr_strings("cats_strings");
  if (ints.empty() == strs.empty()) fail("needs exactly one non-empty list of cats_int64s and cats_strings");
  const DType t = ctx.input(0).dtype;
  if (t == DType::kString && strs.empty()) fail("the input is string but the categories are cats_int64s");
  if (t != DType::kString && t != DType::kUndefined && ints.empty()) {
    fail(std::string("the input is ") + dtype_name(t) + " but the categories are cats_strings");
  }
  const bool zeros = ctx.attr_int("zeros", 1) != 0;
  const ValueInfo& x = ctx.input(0);
  ValueInfo out = ValueInfo::of_type(DType::kFloat);
  if (x.has_shape) {
    out.has_shape = true;
    out.dims = x.dims;
    out.dims.push_back(static_cast<int64_t>(ints.empty() ? strs.size() : ints.size()));
  }
  ctx.outputs = {out};
  return std::make_unique<OneHotEncoderOp>(std::move(ints), std::move(strs), zeros);
}

// ---- LabelEncoder ----

class LabelEncoderOp : public Op {
 public:
  LabelEncoderOp(const Tensor& keys, Tensor values, Tensor fallback)
      : key_type_(keys.dtype()), values_(std::move(values)), default_(std::move(fallback)) {
    // First occurrence wins for duplicate keys, as in onnxruntime.
    for (int64_t k = 0; k < keys.size(); ++k) {
      if (key_type_ == DType::kString) {
        strs_.emplace(keys.strings()[k], k);
      } else if (is_floating(key_type_)) {
        const double v = keys.as_double(k);
        if (std::isnan(v)) {
          if (nan_index_ < 0) nan_index_ = k;  // a NaN key matches NaN inputs (LabelEncoder 4)
        } else {
          floats_.emplace(v, k);
        }
      } else {
        ints_.emplace(keys.as_int64(k), k);
      }
    }
  }

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != key_type_) {
      fail(std::string("the input is ") + dtype_name(x.dtype()) + " but the keys are " + dtype_name(key_type_));
    }
    Tensor y(values_.dtype(), x.shape());
    const int64_t n = x.size();
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = -1;
      if (key_type_ == DType::kString) {
        auto it = strs_.find(x.strings()[i]);
        if (it != strs_.end()) k = it->second;
      } else if (is_floating(key_type_)) {
        const double v = x.as_double(i);
        if (std::isnan(v)) {
          k = nan_index_;
        } else {
          auto it = floats_.find(v);
          if (it != floats_.end()) k = it->second;
        }
      } else {
        auto it = ints_.find(x.as_int64(i));
        if (it != ints_.end()) k = it->second;
      }
      if (k >= 0) {
        copy_one(values_, k, y, i);
      } else {
        copy_one(default_, 0, y, i);
      }
    }
    ctx.set_output(0, std::move(y));
  }

 private:
  DType key_type_;
  Tensor values_, default_;
  std::unordered_map<std::string, int64_t> strs_;
  std::unordered_map<int64_t, int64_t> ints_;
  std::unordered_map<double, int64_t> floats_;
  int64_t nan_index_ = -1;
};

std::unique_ptr<Op> make_label_encoder(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  const Tensor& keys = ctx.attr_tensor("keys_tensor");
  const Tensor& values = ctx.attr_tensor("values_tensor");
  const Tensor& fallback = ctx.attr_tensor("default_tensor");
  const auto supported = [](DType t) {
    return t == DType::kString || t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt16 ||
           t == DType::kFloat || t == DType::kDouble;
  };
  if (!supported(keys.dtype())) fail(std::string("keys of element type ") + dtype_name(keys.dtype()) + " are not supported");
  if (!supported(values.dtype())) {
    fail(std::string("values of element type ") + dtype_name(values.dtype()) + " are not supported");
  }
  if (keys.size() != values.size()) {
    fail("has " + std::to_string(keys.size()) + " keys but " + std::to_string(values.size()) + " values");
  }
  if (fallback.dtype() != values.dtype() || fallback.size() != 1) {
    fail("default_tensor must hold one element of the values' type " + std::string(dtype_name(values.dtype())));
  }
  const DType t = ctx.input(0).dtype;
  if (t != DType::kUndefined && t != keys.dtype()) {
    fail(std::string("the input is ") + dtype_name(t) + " but the keys are " + dtype_name(keys.dtype()));
  }
  ValueInfo out = ctx.input(0);
  out.constant = nullptr;
  out.dtype = values.dtype();
  ctx.outputs = {out};
  return std::make_unique<LabelEncoderOp>(keys, values, fallback);
}

// ---- ZipMap ----

class ZipMapOp : public Op {
 public:
  explicit ZipMapOp(std::shared_ptr<const MapKeys> keys) : keys_(std::move(keys)) {}

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat) fail(std::string("the input must be float, not ") + dtype_name(x.dtype()));
    if (x.rank() < 1 || x.rank() > 2) fail("the input must be [N, C] or [C], got shape " + shape_str(x.shape()));
    const int64_t c = x.dim(x.rank() - 1);
    const int64_t labels = static_cast<int64_t>(keys_->strings ? keys_->strs.size() : keys_->ints.size());
    if (c != labels) {
      fail("the input has " + std::to_string(c) + " columns but there are " + std::to_string(labels) + " class labels");
    }
    Tensor y = x.reshaped({x.rank() == 1 ? 1 : x.dim(0), c});
    y.set_map_keys(keys_);
    ctx.set_output(0, std::move(y));
  }

 private:
  std::shared_ptr<const MapKeys> keys_;
};

std::unique_ptr<Op> make_zipmap(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, 1);
  ctx.expect_type(0, {DType::kFloat});
  auto keys = std::make_shared<MapKeys>();
  keys->ints = ctx.attr_ints("classlabels_int64s");
  keys->strs = ctx.attr_strings("classlabels_strings");
  if (keys->ints.empty() == keys->strs.empty()) fail("needs exactly one of classlabels_int64s and classlabels_strings");
  keys->strings = !keys->strs.empty();
  const int64_t labels = static_cast<int64_t>(keys->strings ? keys->strs.size() : keys->ints.size());
  const ValueInfo& x = ctx.input(0);
  if (x.has_shape) {
    if (x.rank() < 1 || x.rank() > 2) fail("the input must be [N, C] or [C], got shape " + dims_str(x.dims));
    if (x.dims.back() >= 0 && x.dims.back() != labels) {
      fail("the input has " + std::to_string(x.dims.back()) + " columns but there are " + std::to_string(labels) +
           " class labels");
    }
  }
  ValueInfo out = ValueInfo::of(DType::kFloat, {-1, labels});
  out.is_map = true;
  ctx.outputs = {out};
  return std::make_unique<ZipMapOp>(std::move(keys));
}

}  // namespace

void add_ml_encode_ops(OpRegistry& r) {
  r["ai.onnx.ml:ArrayFeatureExtractor"] = make_array_feature_extractor;
  r["ai.onnx.ml:OneHotEncoder"] = make_one_hot_encoder;
  r["ai.onnx.ml:LabelEncoder"] = make_label_encoder;
  r["ai.onnx.ml:ZipMap"] = make_zipmap;
}

}  // namespace platform::tabular
