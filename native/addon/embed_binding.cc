// N-API surface of the embedding encoder (native/llm/encoder.h). A loaded encoder is an opaque
// External handle; loading and every batch run on libuv worker threads, so the event loop never
// waits for a forward pass.
//
//   embedLoadModel(path, options?) -> Promise<handle>     options: {threads?, simd?}
//   embedRun(handle, inputs) -> Promise<Float32Array>      inputs: array of token-id lists; the
//                                                          result is inputs.length x embeddingLength
//   embedModelInfo(handle) -> {architecture, embeddingLength, pooling, contextLength, ...}
//   embedUnload(handle) -> Promise<void>                   (waits for a batch in flight)
// inputs are checked here, on the caller's stack (non-empty, at most contextLength tokens, ids
// below vocabSize), so a bad request is a RangeError naming inputs[i][j], never a native failure.
#include "embed_binding.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/cpu_features.h"
#include "../core/thread_pool.h"
#include "../llm/encoder.h"
#include "args.h"
#include "errors.h"
#include "promise_worker.h"

namespace platform::addon {
namespace {

using llm::Encoder;

const napi_type_tag kEncoderTag = {0x656d6265645f656eULL, 0x636f6465725f6864ULL};

struct Handle {
  std::shared_ptr<Encoder> encoder;  // null once unloaded
};

Handle& get_handle(const ArgReader& r, const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || info[0].Type() != napi_external || !info[0].As<Napi::External<Handle>>().CheckTypeTag(&kEncoderTag)) {
    r.type_error("handle must be an encoder handle from embedLoadModel");
  }
  return *info[0].As<Napi::External<Handle>>().Data();
}

std::shared_ptr<Encoder> get_encoder(const ArgReader& r, const Napi::CallbackInfo& info) {
  Handle& h = get_handle(r, info);
  if (!h.encoder) throw_error(info.Env(), ErrorKind::kError, code::kUnloaded, "the embedding model has been unloaded");
  return h.encoder;
}

class LoadWorker : public PromiseWorker {
 public:
  LoadWorker(Napi::Env env, std::string path, int threads, SimdLevel level)
      : PromiseWorker(env, "platform.embedLoadModel", code::kLoadFailed), path_(std::move(path)), threads_(threads), level_(level) {}

 protected:
  void work() override { encoder_ = Encoder::load(path_, threads_, level_); }

  Napi::Value result() override {
    auto ext = Napi::External<Handle>::New(Env(), new Handle{std::move(encoder_)}, [](Napi::Env, Handle* h) { delete h; });
    ext.TypeTag(&kEncoderTag);
    return ext;
  }

 private:
  std::string path_;
  int threads_;
  SimdLevel level_;
  std::shared_ptr<Encoder> encoder_;
};

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  ArgReader r(info, "embedLoadModel");
  r.expect_count(1, 2, "path, options?");
  if (!info[0].IsString()) r.type_error("path must be a string, got " + describe_type(info[0]));
  const Napi::Object o = r.options_object(1);
  const int threads = resolve_thread_count(r.threads_option(o));
  const SimdLevel level = clamp_simd_level(r.simd_option(o).value_or(active_simd_level()));
  auto* worker = new LoadWorker(info.Env(), info[0].As<Napi::String>().Utf8Value(), threads, level);
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

class RunWorker : public PromiseWorker {
 public:
  RunWorker(Napi::Env env, std::shared_ptr<Encoder> encoder, std::vector<std::vector<int32_t>> inputs)
      : PromiseWorker(env, "platform.embedRun", code::kInternal), encoder_(std::move(encoder)), inputs_(std::move(inputs)) {}

 protected:
  void work() override {
    out_.resize(inputs_.size() * static_cast<size_t>(encoder_->config().dim));
    try {
      encoder_->embed(inputs_, out_.data());
    } catch (const std::invalid_argument& e) {
      throw CodedFailure(code::kInvalidArgument, e.what());
    }
  }

  Napi::Value result() override {
    Napi::Float32Array a = Napi::Float32Array::New(Env(), out_.size());
    std::copy(out_.begin(), out_.end(), a.Data());
    return a;
  }

 private:
  std::shared_ptr<Encoder> encoder_;  // kept alive by the batch even if unloaded meanwhile
  std::vector<std::vector<int32_t>> inputs_;
  std::vector<float> out_;
};

Napi::Value Run(const Napi::CallbackInfo& info) {
  ArgReader r(info, "embedRun");
  r.expect_count(2, 2, "handle, inputs");
  std::shared_ptr<Encoder> encoder = get_encoder(r, info);
  const llm::EncoderConfig& c = encoder->config();
  if (!info[1].IsArray()) r.type_error("inputs must be an array of token-id lists, got " + describe_type(info[1]));
  const Napi::Array list = info[1].As<Napi::Array>();
  if (list.Length() == 0) r.range_error("inputs is empty");
  std::vector<std::vector<int32_t>> inputs;
  inputs.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); ++i) {
    const std::string name = "inputs[" + std::to_string(i) + "]";
    const Napi::Value v = list.Get(i);
    std::vector<int32_t> ids;
    if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array) {
      const Napi::Int32Array a = v.As<Napi::Int32Array>();
      ids.assign(a.Data(), a.Data() + a.ElementLength());
    } else if (v.IsArray()) {
      const Napi::Array a = v.As<Napi::Array>();
      ids.reserve(a.Length());
      for (uint32_t j = 0; j < a.Length(); ++j) {
        const Napi::Value e = a.Get(j);
        if (!e.IsNumber()) r.type_error(name + "[" + std::to_string(j) + "] must be an integer token id, got " + describe_type(e));
        const double d = e.As<Napi::Number>().DoubleValue();
        if (!(d >= 0 && d < static_cast<double>(c.vocab) && d == std::floor(d))) {
          r.range_error(name + "[" + std::to_string(j) + "] = " + format_number(d) + " is not a token id (vocabulary of " + std::to_string(c.vocab) + ")");
        }
        ids.push_back(static_cast<int32_t>(d));
      }
    } else {
      r.type_error(name + " must be an Int32Array or an array of token ids, got " + describe_type(v));
    }
    if (ids.empty()) r.range_error(name + " is empty");
    if (static_cast<int64_t>(ids.size()) > c.context) {
      r.range_error(name + " has " + std::to_string(ids.size()) + " tokens, more than the model's context of " + std::to_string(c.context));
    }
    for (size_t j = 0; j < ids.size(); ++j) {
      if (ids[j] < 0 || ids[j] >= c.vocab) {
        r.range_error(name + "[" + std::to_string(j) + "] = " + std::to_string(ids[j]) + " is not a token id (vocabulary of " + std::to_string(c.vocab) + ")");
      }
    }
    inputs.push_back(std::move(ids));
  }
  auto* worker = new RunWorker(info.Env(), std::move(encoder), std::move(inputs));
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

Napi::Value ModelInfo(const Napi::CallbackInfo& info) {
  ArgReader r(info, "embedModelInfo");
  r.expect_count(1, 1, "handle");
  const std::shared_ptr<Encoder> e = get_encoder(r, info);
  const llm::EncoderConfig& c = e->config();
  Napi::Env env = info.Env();
  auto num = [&](double v) { return Napi::Number::New(env, v); };
  Napi::Object o = Napi::Object::New(env);
  o.Set("architecture", c.architecture);
  o.Set("ggufVersion", num(e->file().version()));
  o.Set("embeddingLength", num(static_cast<double>(c.dim)));
  o.Set("blockCount", num(static_cast<double>(c.n_layers)));
  o.Set("headCount", num(static_cast<double>(c.n_heads)));
  o.Set("feedForwardLength", num(static_cast<double>(c.ffn_dim)));
  o.Set("vocabSize", num(static_cast<double>(c.vocab)));
  o.Set("contextLength", num(static_cast<double>(c.context)));
  o.Set("layerNormEpsilon", num(c.norm_eps));
  o.Set("pooling", llm::pooling_name(c.pooling));
  if (c.rope) o.Set("ropeFreqBase", num(c.rope_base));
  Napi::Object types = Napi::Object::New(env);
  for (const auto& [name, count] : e->tensor_types()) types.Set(name, num(static_cast<double>(count)));
  o.Set("tensorTypes", types);
  o.Set("mappedBytes", num(static_cast<double>(e->file().file_size())));
  o.Set("threads", num(e->threads()));
  o.Set("kernels", e->kernels());
  o.Set("backend", "cpu");
  return o;
}

class UnloadWorker : public PromiseWorker {
 public:
  UnloadWorker(Napi::Env env, std::shared_ptr<Encoder> encoder)
      : PromiseWorker(env, "platform.embedUnload", code::kInternal), encoder_(std::move(encoder)) {}

 protected:
  // Unmapping happens when the last reference goes: a batch in flight holds one of its own.
  void work() override { encoder_.reset(); }
  Napi::Value result() override { return Env().Undefined(); }

 private:
  std::shared_ptr<Encoder> encoder_;
};

Napi::Value Unload(const Napi::CallbackInfo& info) {
  ArgReader r(info, "embedUnload");
  r.expect_count(1, 1, "handle");
  Handle& h = get_handle(r, info);
  auto* worker = new UnloadWorker(info.Env(), std::move(h.encoder));
  h.encoder.reset();
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

}  // namespace

void register_embed(Napi::Env env, Napi::Object exports) {
  exports.Set("embedLoadModel", Napi::Function::New(env, LoadModel, "embedLoadModel"));
  exports.Set("embedRun", Napi::Function::New(env, Run, "embedRun"));
  exports.Set("embedModelInfo", Napi::Function::New(env, ModelInfo, "embedModelInfo"));
  exports.Set("embedUnload", Napi::Function::New(env, Unload, "embedUnload"));
}

}  // namespace platform::addon
