// A small typed tensor for the tabular executor: an element type, a shape and a shared,
// immutable-once-written buffer (64-byte aligned bytes, or std::strings for string tensors).
//
// Tensors are cheap to copy (the buffer is shared), so shape-only operators (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity) return views of their input without copying, and elementwise
// operators may write into an input's buffer when the graph says the input dies at that node and
// nothing else holds the buffer (see OpContext::reusable in op.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace platform::tabular {

// ONNX element types the executor stores. Names (dtype_name) are the lower-case ONNX names used
// by the TypeScript parser (src/tabular/onnx/types.ts ElementType). bool is stored as one byte.
enum class DType : uint8_t {
  kUndefined = 0,
  kFloat,
  kDouble,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kBool,
  kString,
};

const char* dtype_name(DType type);
// kUndefined for names the executor cannot store (float16 is decoded to float by the parser).
DType dtype_from_name(const std::string& name);
// Bytes per element; 0 for strings.
size_t dtype_size(DType type);
inline bool is_floating(DType t) { return t == DType::kFloat || t == DType::kDouble; }
bool is_integer(DType t);  // signed or unsigned integer types, not bool
inline bool is_numeric(DType t) { return is_floating(t) || is_integer(t); }

using Shape = std::vector<int64_t>;

// Product of the dimensions; throws std::runtime_error on a negative dimension or overflow.
int64_t shape_size(const Shape& shape);
// "[2, 3]" (scalars: "[]").
std::string shape_str(const Shape& shape);

// Storage of one tensor. Numeric data is 64-byte aligned; strings live in a vector.
class Buffer {
 public:
  static std::shared_ptr<Buffer> bytes(size_t count);
  static std::shared_ptr<Buffer> strings(size_t count);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t byte_size() const { return bytes_; }
  std::vector<std::string>& str() { return strings_; }
  const std::vector<std::string>& str() const { return strings_; }

 private:
  Buffer() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  std::vector<std::string> strings_;
};

// Keys of the maps a ZipMap output stands for (seq(map(int64|string, float))): the output itself
// is the [N, C] probability tensor and these are its C column keys.
struct MapKeys {
  bool strings = false;
  std::vector<int64_t> ints;
  std::vector<std::string> strs;
};

template <typename T>
struct TypeTag {
  using type = T;
};

// C++ type <-> DType. bool is C++ bool (one byte); strings are std::string.
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat;
  else if constexpr (std::is_same_v<T, double>) return DType::kDouble;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::kUInt64;
  else if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, std::string>) return DType::kString;
  else return DType::kUndefined;
}

class Tensor {
 public:
  Tensor() = default;
  // Allocates (uninitialised numeric data; empty strings).
  Tensor(DType type, Shape shape);

  bool defined() const { return type_ != DType::kUndefined; }
  DType dtype() const { return type_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t size() const { return size_; }
  const std::shared_ptr<Buffer>& buffer() const { return buf_; }

  // The same data under another shape of the same element count (no copy).
  Tensor reshaped(Shape shape) const;
  // A tensor of `type`/`shape` that writes into this tensor's buffer (caller checks sizes).
  Tensor sharing_buffer(DType type, Shape shape) const;

  template <typename T>
  T* data() {
    check_type<T>();
    return static_cast<T*>(buf_->data());
  }
  template <typename T>
  const T* data() const {
    check_type<T>();
    return static_cast<const T*>(buf_->data());
  }
  std::string* strings() { return buf_->str().data(); }
  const std::string* strings() const { return buf_->str().data(); }
  void* raw() { return buf_->data(); }
  const void* raw() const { return buf_->data(); }

  const std::shared_ptr<const MapKeys>& map_keys() const { return map_keys_; }
  void set_map_keys(std::shared_ptr<const MapKeys> keys) { map_keys_ = std::move(keys); }

  // Element `i` converted to double (numeric tensors only).
  double as_double(int64_t i) const;
  // Element `i` converted to int64 (numeric tensors only; floats truncate).
  int64_t as_int64(int64_t i) const;

 private:
  template <typename T>
  void check_type() const {
    if (dtype_of<T>() != type_) {
      throw std::logic_error(std::string("tensor of ") + dtype_name(type_) + " read as " +
                             dtype_name(dtype_of<T>()));
    }
  }

  DType type_ = DType::kUndefined;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<Buffer> buf_;
  std::shared_ptr<const MapKeys> map_keys_;
};

// Calls f(TypeTag<T>{}) with T the C++ type of `type`, for the numeric types (and bool when
// `with_bool`). Throws std::runtime_error("<what> does not support <type>") otherwise.
template <typename F>
decltype(auto) dispatch_numeric(DType type, const char* what, F&& f, bool with_bool = false) {
  switch (type) {
    case DType::kFloat: return f(TypeTag<float>{});
    case DType::kDouble: return f(TypeTag<double>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kUInt16: return f(TypeTag<uint16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kUInt32: return f(TypeTag<uint32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kUInt64: return f(TypeTag<uint64_t>{});
    case DType::kBool:
      if (with_bool) return f(TypeTag<bool>{});
      break;
    default: break;
  }
  throw std::runtime_error(std::string(what) + " does not support element type " + dtype_name(type));
}

// Like dispatch_numeric, but every storable type including bool and string.
template <typename F>
decltype(auto) dispatch_any(DType type, const char* what, F&& f) {
  if (type == DType::kString) return f(TypeTag<std::string>{});
  return dispatch_numeric(type, what, std::forward<F>(f), true);
}

// Only float and double.
template <typename F>
decltype(auto) dispatch_floating(DType type, const char* what, F&& f) {
  switch (type) {
    case DType::kFloat: return f(TypeTag<float>{});
    case DType::kDouble: return f(TypeTag<double>{});
    default: break;
  }
  throw std::runtime_error(std::string(what) + " does not support element type " + dtype_name(type) +
                           " (float or double only)");
}

}  // namespace platform::tabular
