// The test-only addon's view of the GGML type table (ggml/types.h), so that
// test/llm-gguf-types.test.ts can hold the TypeScript GGUF reader's own table
// (src/llm/gguf/ggml-types.ts, which must size tensors before any addon is loaded) to the one the
// engine decodes with: the two languages cannot share the table, so a test keeps them equal. And
// the engine's dequantize_row (the host reference every backend is checked against) on the test's
// blocks, which the test compares with ggml's own floats.
#include "ggml_types_check.h"

#include <cstdint>
#include <string>

#include "../ggml/types.h"

namespace platform::testing {
namespace {

// ggmlTypes() -> [{id, name, blockElements, blockBytes}] for every type id the engine supports.
Napi::Value GgmlTypes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  constexpr uint32_t kIdsToTry = 256;  // ggml's ids are far below this
  for (uint32_t id = 0; id < kIdsToTry; ++id) {
    const ggml::TypeInfo* t = ggml::type_info(id);
    if (t == nullptr) continue;
    Napi::Object o = Napi::Object::New(env);
    o.Set("id", id);
    o.Set("name", t->name);
    o.Set("blockElements", static_cast<double>(t->block_elems));
    o.Set("blockBytes", static_cast<double>(t->block_bytes));
    out.Set(out.Length(), o);
  }
  return out;
}

// ggmlDequantize(id, bytes: Uint8Array, n) -> Float32Array: ggml::dequantize_row of n elements.
Napi::Value GgmlDequantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3 || !info[0].IsNumber() || !info[1].IsTypedArray() || !info[2].IsNumber()) {
    throw Napi::TypeError::New(env, "ggmlDequantize(typeId, bytes: Uint8Array, n)");
  }
  const uint32_t id = info[0].As<Napi::Number>().Uint32Value();
  const ggml::TypeInfo* t = ggml::type_info(id);
  if (t == nullptr) throw Napi::RangeError::New(env, "unsupported type id " + std::to_string(id));
  const int64_t n = info[2].As<Napi::Number>().Int64Value();
  const Napi::TypedArray arr = info[1].As<Napi::TypedArray>();
  if (arr.TypedArrayType() != napi_uint8_array) throw Napi::TypeError::New(env, "bytes must be a Uint8Array");
  const Napi::Uint8Array bytes = arr.As<Napi::Uint8Array>();
  if (n < 0 || n % t->block_elems != 0 || n / t->block_elems * t->block_bytes > static_cast<int64_t>(bytes.ByteLength())) {
    throw Napi::RangeError::New(env, "n must be whole blocks within bytes");
  }
  Napi::Float32Array out = Napi::Float32Array::New(env, static_cast<size_t>(n));
  ggml::dequantize_row(static_cast<ggml::Type>(id), bytes.Data(), out.Data(), n);
  return out;
}

}  // namespace

void register_ggml_types(Napi::Env env, Napi::Object exports) {
  exports.Set("ggmlTypes", Napi::Function::New(env, GgmlTypes, "ggmlTypes"));
  exports.Set("ggmlDequantize", Napi::Function::New(env, GgmlDequantize, "ggmlDequantize"));
}

}  // namespace platform::testing
