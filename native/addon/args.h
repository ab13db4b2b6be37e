// Argument checking at the N-API boundary: the one reader every binding uses. Every check
// throws a JavaScript TypeError (wrong type) or RangeError (right type, unusable value) with code
// "invalid_argument" (errors.h) and a message that names the function, the argument (or the path
// to a value inside one, e.g. "model.graph.nodes[3].name") and what was received, so bad input
// never reaches the engines. Defaults and ranges of options are written once, as NumberOption
// values beside the binding that reads them.
#pragma once

#include <napi.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "../backends/cpu/gemm.h"
#include "../core/cpu_features.h"

namespace platform::addon {

// Dimensions and leading dimensions are limited to int32 so that every product the kernels
// form (rows * ld) fits comfortably in int64.
constexpr int64_t kMaxDim = 2147483647;

// "number", "string", "Float64Array", "null", "array", ...: how a received value is described.
std::string describe_type(const Napi::Value& value);
// A number as a message shows it: 1.5, -2, 9007199254740991, NaN.
std::string format_number(double value);

// A numeric field of an options object: its default and its inclusive range.
struct NumberOption {
  const char* key;
  double fallback;
  double min;
  double max;
  bool integer;
};

class ArgReader {
 public:
  ArgReader(const Napi::CallbackInfo& info, const char* fn) : info_(info), fn_(fn) {}

  const char* fn() const { return fn_; }
  Napi::Env env() const { return info_.Env(); }
  const Napi::CallbackInfo& info() const { return info_; }

  [[noreturn]] void type_error(const std::string& message) const;
  [[noreturn]] void range_error(const std::string& message) const;

  // Throws unless the call has between min and max arguments; `usage` lists them.
  void expect_count(size_t min, size_t max, const char* usage) const;

  bool boolean(size_t index, const char* name) const;
  double number(size_t index, const char* name) const;
  // A non-negative integer up to kMaxDim.
  int64_t dim(size_t index, const char* name) const;
  Napi::Float32Array f32_array(size_t index, const char* name) const;
  // A list of token ids: an Int32Array or an array of integers in int32 range (copied).
  std::vector<int32_t> token_ids(size_t index, const char* name) const;

  // --- options objects ---
  // The object at `index`; an empty object when the argument is absent or undefined.
  Napi::Object options_object(size_t index) const;
  // options.key as a number within spec's range, or spec.fallback when absent.
  double option(const Napi::Object& options, const NumberOption& spec) const;
  // options.key, one of `choices`, or nullopt when absent.
  std::optional<std::string> option_choice(const Napi::Object& options, const char* key,
                                           std::initializer_list<const char*> choices) const;
  // options.threads: 0 (the default thread count) to kMaxThreads; 0 when absent.
  int threads_option(const Napi::Object& options) const;
  // options.simd: a level name; nullopt when absent.
  std::optional<SimdLevel> simd_option(const Napi::Object& options) const;
  // The kernels' options object at `index` (absent or undefined: defaults): {simd?, threads?}.
  GemmOptions options(size_t index) const;

  // --- values inside an argument, named by their path in messages ---
  Napi::Object object_at(const Napi::Value& v, const std::string& path) const;
  Napi::Array array_at(const Napi::Value& v, const std::string& path) const;
  std::string string_at(const Napi::Value& v, const std::string& path) const;
  double number_at(const Napi::Value& v, const std::string& path) const;
  // An integer number of magnitude at most 2^53 - 1.
  int64_t integer_at(const Napi::Value& v, const std::string& path) const;
  std::vector<std::string> strings_at(const Napi::Value& v, const std::string& path) const;

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
