#include "args.h"

#include <cmath>
#include <sstream>

#include "../core/thread_pool.h"

namespace platform::addon {
namespace {

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

std::string shape(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
}

}  // namespace

std::string describe_type(const Napi::Value& value) {
  switch (value.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return "boolean";
    case napi_number: return "number";
    case napi_string: return "string";
    case napi_symbol: return "symbol";
    case napi_function: return "function";
    case napi_bigint: return "bigint";
    case napi_external: return "external";
    case napi_object: break;
  }
  if (value.IsArray()) return "array";
  if (value.IsTypedArray()) {
    switch (value.As<Napi::TypedArray>().TypedArrayType()) {
      case napi_int8_array: return "Int8Array";
      case napi_uint8_array: return "Uint8Array";
      case napi_uint8_clamped_array: return "Uint8ClampedArray";
      case napi_int16_array: return "Int16Array";
      case napi_uint16_array: return "Uint16Array";
      case napi_int32_array: return "Int32Array";
      case napi_uint32_array: return "Uint32Array";
      case napi_float32_array: return "Float32Array";
      case napi_float64_array: return "Float64Array";
      case napi_bigint64_array: return "BigInt64Array";
      case napi_biguint64_array: return "BigUint64Array";
      default: return "TypedArray";
    }
  }
  if (value.IsArrayBuffer()) return "ArrayBuffer";
  if (value.IsDataView()) return "DataView";
  return "object";
}

void ArgReader::type_error(const std::string& message) const {
  throw Napi::TypeError::New(env(), std::string(fn_) + ": " + message);
}

void ArgReader::range_error(const std::string& message) const {
  throw Napi::RangeError::New(env(), std::string(fn_) + ": " + message);
}

Napi::Value ArgReader::arg(size_t index) const {
  return index < info_.Length() ? info_[index] : info_.Env().Undefined();
}

void ArgReader::expect_count(size_t min, size_t max, const char* usage) const {
  const size_t n = info_.Length();
  if (n < min || n > max) {
    const std::string expected =
        min == max ? std::to_string(min) : std::to_string(min) + " or " + std::to_string(max);
    type_error("expected " + expected + " arguments (" + usage + "), got " + std::to_string(n));
  }
}

bool ArgReader::boolean(size_t index, const char* name) const {
  const Napi::Value v = arg(index);
  if (!v.IsBoolean()) type_error(std::string(name) + " must be a boolean, got " + describe_type(v));
  return v.As<Napi::Boolean>().Value();
}

double ArgReader::number(size_t index, const char* name) const {
  const Napi::Value v = arg(index);
  if (!v.IsNumber()) type_error(std::string(name) + " must be a number, got " + describe_type(v));
  return v.As<Napi::Number>().DoubleValue();
}

int64_t ArgReader::dim(size_t index, const char* name) const {
  const double v = number(index, name);
  if (!(v >= 0) || std::floor(v) != v || std::isinf(v)) {
    range_error(std::string(name) + " must be a non-negative integer, got " + format_number(v));
  }
  if (v > static_cast<double>(kMaxDim)) {
    range_error(std::string(name) + " must be at most " + std::to_string(kMaxDim) + ", got " +
                format_number(v));
  }
  return static_cast<int64_t>(v);
}

Napi::Float32Array ArgReader::f32_array(size_t index, const char* name) const {
  const Napi::Value v = arg(index);
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    type_error(std::string(name) + " must be a Float32Array, got " + describe_type(v));
  }
  return v.As<Napi::Float32Array>();
}

GemmOptions ArgReader::options(size_t index) const {
  GemmOptions options;
  const Napi::Value v = arg(index);
  if (v.IsUndefined()) return options;
  if (!v.IsObject() || v.IsArray() || v.IsFunction() || v.IsTypedArray()) {
    type_error("options must be an object, got " + describe_type(v));
  }
  const Napi::Object obj = v.As<Napi::Object>();
  const Napi::Value simd = obj.Get("simd");
  if (!simd.IsUndefined()) {
    const char* expected = "options.simd must be one of \"scalar\", \"neon\", \"avx2\", \"avx512\"";
    if (!simd.IsString()) type_error(std::string(expected) + ", got " + describe_type(simd));
    const std::string name = simd.As<Napi::String>().Utf8Value();
    const auto level = parse_simd_level(name);
    if (!level) range_error(std::string(expected) + ", got \"" + name + "\"");
    options.simd = *level;
  }
  const Napi::Value threads = obj.Get("threads");
  if (!threads.IsUndefined()) {
    const std::string expected =
        "options.threads must be an integer from 0 (the default) to " + std::to_string(kMaxThreads);
    if (!threads.IsNumber()) type_error(expected + ", got " + describe_type(threads));
    const double t = threads.As<Napi::Number>().DoubleValue();
    if (!(t >= 0 && t <= kMaxThreads) || std::floor(t) != t) {
      range_error(expected + ", got " + format_number(t));
    }
    options.threads = static_cast<int>(t);
  }
  return options;
}

void ArgReader::check_matrix(const Napi::Float32Array& array, const char* array_name,
                             const char* ld_name, int64_t rows, int64_t cols, int64_t ld,
                             const std::string& why) const {
  const int64_t min_ld = cols > 1 ? cols : 1;
  if (ld < min_ld) {
    range_error(std::string(ld_name) + " must be at least " + std::to_string(min_ld) + " (" + why +
                "), got " + std::to_string(ld));
  }
  const int64_t need = rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
  const int64_t have = static_cast<int64_t>(array.ElementLength());
  if (have < need) {
    range_error(std::string(array_name) + " has " + std::to_string(have) +
                " elements but needs at least " + std::to_string(need) + " (" + why + ", " +
                shape(rows, cols) + " with " + ld_name + " " + std::to_string(ld) + ")");
  }
}

void ArgReader::check_vector(const Napi::Float32Array& array, const char* name, int64_t n,
                             const std::string& why) const {
  const int64_t have = static_cast<int64_t>(array.ElementLength());
  if (have < n) {
    range_error(std::string(name) + " has " + std::to_string(have) +
                " elements but needs at least " + std::to_string(n) + " (" + why + ")");
  }
}

void ArgReader::check_disjoint(const Napi::Float32Array& out, const char* out_name,
                               const Napi::Float32Array& in, const char* in_name) const {
  const auto* o0 = reinterpret_cast<const char*>(out.Data());
  const auto* i0 = reinterpret_cast<const char*>(in.Data());
  const char* o1 = o0 + out.ByteLength();
  const char* i1 = i0 + in.ByteLength();
  if (o0 < i1 && i0 < o1) {
    range_error(std::string(out_name) + " must not share memory with " + in_name);
  }
}

void ArgReader::check_fixed_length(const Napi::Float32Array& array, const char* name) const {
  const Napi::Value buffer = array.Get("buffer");
  if (buffer.IsObject()) {
    const Napi::Object b = buffer.As<Napi::Object>();
    // A growable SharedArrayBuffer never moves or shrinks, so only `resizable` matters.
    const Napi::Value resizable = b.Get("resizable");
    if (resizable.IsBoolean() && resizable.As<Napi::Boolean>().Value()) {
      type_error(std::string(name) + " must not be backed by a resizable buffer in an async call");
    }
  }
}

}  // namespace platform::addon
