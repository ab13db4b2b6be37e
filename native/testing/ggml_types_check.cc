// The test-only addon's view of the GGML type table (ggml/types.h), so that
// test/llm-gguf-types.test.ts can hold the TypeScript GGUF reader's own table
// (src/llm/gguf/ggml-types.ts, which must size tensors before any addon is loaded) to the one the
// engine decodes with: the two languages cannot share the table, so a test keeps them equal.
#include "ggml_types_check.h"

#include <cstdint>

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

}  // namespace

void register_ggml_types(Napi::Env env, Napi::Object exports) {
  exports.Set("ggmlTypes", Napi::Function::New(env, GgmlTypes, "ggmlTypes"));
}

}  // namespace platform::testing
