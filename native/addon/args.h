// Argument checking at the N-API boundary. Every check throws a JavaScript TypeError (wrong
// type) or RangeError (right type, unusable value) whose message names the function, the
// argument and what was received, so bad input never reaches the kernels.
#pragma once

#include <napi.h>

#include <cstdint>
#include <optional>
#include <string>

#include "../backends/cpu/gemm.h"

namespace platform::addon {

// Dimensions and leading dimensions are limited to int32 so that every product the kernels
// form (rows * ld) fits comfortably in int64.
constexpr int64_t kMaxDim = 2147483647;

// "number", "string", "Float64Array", "null", "array", ...: how a received value is described.
std::string describe_type(const Napi::Value& value);

class ArgReader {
 public:
  ArgReader(const Napi::CallbackInfo& info, const char* fn) : info_(info), fn_(fn) {}

  const char* fn() const { return fn_; }
  Napi::Env env() const { return info_.Env(); }

  [[noreturn]] void type_error(const std::string& message) const;
  [[noreturn]] void range_error(const std::string& message) const;

  // Throws unless the call has between min and max arguments; `usage` lists them.
  void expect_count(size_t min, size_t max, const char* usage) const;

  bool boolean(size_t index, const char* name) const;
  double number(size_t index, const char* name) const;
  // A non-negative integer up to kMaxDim.
  int64_t dim(size_t index, const char* name) const;
  Napi::Float32Array f32_array(size_t index, const char* name) const;
  // Options object (index may be past the end or hold undefined): {simd?, threads?}.
  GemmOptions options(size_t index) const;

  // A matrix stored [rows, cols] (row-major) with leading dimension ld:
  // ld >= max(1, cols) and array length >= (rows - 1) * ld + cols.
  // `why` explains the stored shape, e.g. "A is stored [M,K] because transA is false".
  void check_matrix(const Napi::Float32Array& array, const char* array_name, const char* ld_name,
                    int64_t rows, int64_t cols, int64_t ld, const std::string& why) const;
  // A vector of at least n elements.
  void check_vector(const Napi::Float32Array& array, const char* name, int64_t n,
                    const std::string& why) const;
  // The output must not share memory with an input (the kernels read inputs while writing it).
  void check_disjoint(const Napi::Float32Array& out, const char* out_name,
                      const Napi::Float32Array& in, const char* in_name) const;
  // Async calls keep buffers referenced but cannot stop a resizable buffer from shrinking.
  void check_fixed_length(const Napi::Float32Array& array, const char* name) const;

 private:
  Napi::Value arg(size_t index) const;
  const Napi::CallbackInfo& info_;
  const char* fn_;
};

}  // namespace platform::addon
