#include "tensor.h"

#include <cstdlib>
#include <limits>
#include <new>

namespace platform::tabular {

const char* dtype_name(DType type) {
  switch (type) {
    case DType::kFloat: return "float";
    case DType::kDouble: return "double";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
    case DType::kInt32: return "int32";
    case DType::kUInt32: return "uint32";
    case DType::kInt64: return "int64";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    case DType::kUndefined: break;
  }
  return "undefined";
}

DType dtype_from_name(const std::string& name) {
  static const std::pair<const char*, DType> kNames[] = {
      {"float", DType::kFloat},   {"double", DType::kDouble}, {"int8", DType::kInt8},
      {"uint8", DType::kUInt8},   {"int16", DType::kInt16},   {"uint16", DType::kUInt16},
      {"int32", DType::kInt32},   {"uint32", DType::kUInt32}, {"int64", DType::kInt64},
      {"uint64", DType::kUInt64}, {"bool", DType::kBool},     {"string", DType::kString},
  };
  for (const auto& [n, t] : kNames) {
    if (name == n) return t;
  }
  return DType::kUndefined;
}

size_t dtype_size(DType type) {
  switch (type) {
    case DType::kFloat: return 4;
    case DType::kDouble: return 8;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
    case DType::kInt16:
    case DType::kUInt16: return 2;
    case DType::kInt32:
    case DType::kUInt32: return 4;
    case DType::kInt64:
    case DType::kUInt64: return 8;
    default: return 0;
  }
}

bool is_integer(DType t) {
  switch (t) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kInt64:
    case DType::kUInt64: return true;
    default: return false;
  }
}

// Tensors above this many elements are refused: every index the operators form stays far from
// int64 overflow, and a hostile model cannot ask for an absurd allocation.
constexpr int64_t kMaxElements = int64_t{1} << 40;

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::runtime_error("negative dimension in shape " + shape_str(shape));
    if (d != 0 && n > kMaxElements / d) {
      throw std::runtime_error("shape " + shape_str(shape) + " has too many elements");
    }
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::shared_ptr<Buffer> Buffer::bytes(size_t count) {
  std::shared_ptr<Buffer> b(new Buffer());
  // Always allocate at least one line so data() is never null.
  const size_t rounded = ((count + 63) / 64) * 64 + (count == 0 ? 64 : 0);
  b->data_ = ::operator new(rounded, std::align_val_t{64});
  b->bytes_ = count;
  return b;
}

std::shared_ptr<Buffer> Buffer::strings(size_t count) {
  std::shared_ptr<Buffer> b(new Buffer());
  b->strings_.resize(count);
  return b;
}

Buffer::~Buffer() {
  if (data_ != nullptr) ::operator delete(data_, std::align_val_t{64});
}

// No tensor may exceed this many bytes: a model or input that asks for more (say a broadcast of
// [N, 1] against [1, N], or a tree ensemble declaring a billion targets) gets an error instead of
// an allocation the operating system would kill the process for when it is touched.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 31;

Tensor::Tensor(DType type, Shape shape) : type_(type), shape_(std::move(shape)) {
  if (type == DType::kUndefined) throw std::logic_error("tensor of undefined element type");
  size_ = shape_size(shape_);
  const int64_t element = type == DType::kString ? static_cast<int64_t>(sizeof(std::string))
                                                 : static_cast<int64_t>(dtype_size(type));
  if (size_ > kMaxTensorBytes / element) {
    throw std::runtime_error("a tensor of shape " + shape_str(shape_) + " (" + dtype_name(type) +
                             ") would exceed the 2 GiB limit per tensor");
  }
  if (type == DType::kString) {
    buf_ = Buffer::strings(static_cast<size_t>(size_));
  } else {
    buf_ = Buffer::bytes(static_cast<size_t>(size_) * dtype_size(type));
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  const int64_t n = shape_size(shape);
  if (n != size_) {
    throw std::runtime_error("cannot view " + shape_str(shape_) + " as " + shape_str(shape));
  }
  t.shape_ = std::move(shape);
  t.map_keys_.reset();
  return t;
}

Tensor Tensor::sharing_buffer(DType type, Shape shape) const {
  Tensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.size_ = shape_size(t.shape_);
  t.buf_ = buf_;
  return t;
}

double Tensor::as_double(int64_t i) const {
  return dispatch_numeric(
      type_, "as_double", [&](auto tag) -> double {
        using T = typename decltype(tag)::type;
        return static_cast<double>(static_cast<const T*>(buf_->data())[i]);
      },
      true);
}

int64_t Tensor::as_int64(int64_t i) const {
  return dispatch_numeric(
      type_, "as_int64", [&](auto tag) -> int64_t {
        using T = typename decltype(tag)::type;
        const T v = static_cast<const T*>(buf_->data())[i];
        if constexpr (std::is_floating_point_v<T>) {
          // Defined for every input: NaN and out-of-range values become INT64_MIN (x86's answer).
          if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
            return std::numeric_limits<int64_t>::min();
          }
        }
        return static_cast<int64_t>(v);
      },
      true);
}

}  // namespace platform::tabular
