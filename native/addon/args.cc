#include "args.h"

#include <cmath>
#include <sstream>

#include "../core/thread_pool.h"
#include "errors.h"

namespace platform::addon {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string shape(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
}

}  // namespace

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

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
  throw_error(env(), ErrorKind::kType, code::kInvalidArgument, std::string(fn_) + ": " + message);
}

void ArgReader::range_error(const std::string& message) const {
  throw_error(env(), ErrorKind::kRange, code::kInvalidArgument, std::string(fn_) + ": " + message);
}

Napi::Value ArgReader::arg(size_t index) const {
  return index < info_.Length() ? info_[index] : info_.Env().Undefined();
}

void ArgReader::expect_count(size_t min, size_t max, const char* usage) const {
  const size_t n = info_.Length();
  if (n < min || n > max) {
    const std::string expected =
        min == max ? std::to_string(min) : std::to_string(min) + " or " + std::to_string(max);
    type_error("expected " + expected + (max == 1 ? " argument (" : " arguments (") + usage + "), got " + std::to_string(n));
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

std::vector<int32_t> ArgReader::token_ids(size_t index, const char* name) const {
  const Napi::Value v = arg(index);
  std::vector<int32_t> out;
  if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array) {
    const Napi::Int32Array a = v.As<Napi::Int32Array>();
    out.assign(a.Data(), a.Data() + a.ElementLength());
    return out;
  }
  if (!v.IsArray()) type_error(std::string(name) + " must be an Int32Array or an array of numbers, got " + describe_type(v));
  const Napi::Array a = v.As<Napi::Array>();
  out.reserve(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const Napi::Value e = a.Get(i);
    const double d = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : NAN;
    if (!(d >= -2147483648.0 && d <= 2147483647.0 && d == std::floor(d))) {
      type_error(std::string(name) + "[" + std::to_string(i) + "] must be an integer token id");
    }
    out.push_back(static_cast<int32_t>(d));
  }
  return out;
}

Napi::Object ArgReader::options_object(size_t index) const {
  const Napi::Value v = arg(index);
  if (v.IsUndefined()) return Napi::Object::New(env());
  if (!v.IsObject() || v.IsArray() || v.IsFunction() || v.IsTypedArray()) {
    type_error("options must be an object, got " + describe_type(v));
  }
  return v.As<Napi::Object>();
}

double ArgReader::option(const Napi::Object& options, const NumberOption& spec) const {
  const Napi::Value v = options.Get(spec.key);
  if (v.IsUndefined()) return spec.fallback;
  const std::string name = std::string("options.") + spec.key;
  if (!v.IsNumber()) type_error(name + " must be a number, got " + describe_type(v));
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d < spec.min || d > spec.max || (spec.integer && d != std::floor(d))) {
    range_error(name + " must be " + (spec.integer ? "an integer" : "a number") + " in [" + format_number(spec.min) +
                ", " + format_number(spec.max) + "], got " + format_number(d));
  }
  return d;
}

std::optional<std::string> ArgReader::option_choice(const Napi::Object& options, const char* key,
                                                    std::initializer_list<const char*> choices) const {
  const Napi::Value v = options.Get(key);
  if (v.IsUndefined()) return std::nullopt;
  std::string expected = std::string("options.") + key + " must be one of ";
  bool first = true;
  for (const char* c : choices) {
    expected += (first ? "" : ", ") + quoted(c);
    first = false;
  }
  if (!v.IsString()) type_error(expected + ", got " + describe_type(v));
  const std::string s = v.As<Napi::String>().Utf8Value();
  for (const char* c : choices) {
    if (s == c) return s;
  }
  range_error(expected + ", got " + quoted(s));
}

int ArgReader::threads_option(const Napi::Object& options) const {
  const Napi::Value threads = options.Get("threads");
  if (threads.IsUndefined()) return 0;
  const std::string expected =
      "options.threads must be an integer from 0 (the default) to " + std::to_string(kMaxThreads);
  if (!threads.IsNumber()) type_error(expected + ", got " + describe_type(threads));
  const double t = threads.As<Napi::Number>().DoubleValue();
  if (!(t >= 0 && t <= kMaxThreads) || std::floor(t) != t) range_error(expected + ", got " + format_number(t));
  return static_cast<int>(t);
}

std::optional<SimdLevel> ArgReader::simd_option(const Napi::Object& options) const {
  const std::optional<std::string> name = option_choice(options, "simd", {"scalar", "neon", "avx2", "avx512"});
  if (!name) return std::nullopt;
  return parse_simd_level(*name);
}

GemmOptions ArgReader::options(size_t index) const {
  const Napi::Object obj = options_object(index);
  GemmOptions options;
  options.simd = simd_option(obj);
  options.threads = threads_option(obj);
  return options;
}

Napi::Object ArgReader::object_at(const Napi::Value& v, const std::string& path) const {
  if (!v.IsObject() || v.IsArray()) type_error(path + " must be an object, got " + describe_type(v));
  return v.As<Napi::Object>();
}

Napi::Array ArgReader::array_at(const Napi::Value& v, const std::string& path) const {
  if (!v.IsArray()) type_error(path + " must be an array, got " + describe_type(v));
  return v.As<Napi::Array>();
}

std::string ArgReader::string_at(const Napi::Value& v, const std::string& path) const {
  if (!v.IsString()) type_error(path + " must be a string, got " + describe_type(v));
  return v.As<Napi::String>().Utf8Value();
}

double ArgReader::number_at(const Napi::Value& v, const std::string& path) const {
  if (!v.IsNumber()) type_error(path + " must be a number, got " + describe_type(v));
  return v.As<Napi::Number>().DoubleValue();
}

int64_t ArgReader::integer_at(const Napi::Value& v, const std::string& path) const {
  const double d = number_at(v, path);
  if (!std::isfinite(d) || std::floor(d) != d || std::abs(d) > kMaxSafeInteger) {
    range_error(path + " must be an integer, got " + format_number(d));
  }
  return static_cast<int64_t>(d);
}

std::vector<std::string> ArgReader::strings_at(const Napi::Value& v, const std::string& path) const {
  const Napi::Array a = array_at(v, path);
  std::vector<std::string> out(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) out[i] = string_at(a.Get(i), path + "[" + std::to_string(i) + "]");
  return out;
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
