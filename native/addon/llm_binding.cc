// N-API surface of the LLM engine. A loaded model is an opaque External handle; its scheduler
// thread sends each step's events (tokens, finishes, logits) to one JavaScript callback through
// a ThreadSafeFunction, so tokens reach JS as they are produced without blocking the loop.
// The ThreadSafeFunction keeps the event loop alive only while sequences are in flight.
//
//   llmLoadModel(path, options, onEvents) -> Promise<handle>   (parsing + mapping off-thread)
//   llmGenerate(handle, tokens, options) -> id                 (throws {code} when refused)
//   llmLogits(handle, tokens, allPositions) -> id              (result arrives as a 'logits' event)
//   llmEmbed(handle, tokens) -> id                             (last-token pooling: an 'embedding' event)
//   llmCancel(handle, id), llmStats(handle), llmModelInfo(handle)
//   llmUnload(handle) -> Promise<void>                         (cancels all, joins the thread)
//   llmSetTokenBytes(handle, bytes, offsets)                    (the vocabulary's bytes, for grammars)
//   llmCompileGrammar(handle, encoded) -> grammar               (an External; RangeError when unusable)
//   llmGrammarStates(grammar) -> number                         (parser states met so far)
//   llmOptionLimits                                             (the options' defaults and ranges)
// The defaults of the numeric options are the engine's own (EngineOptions, GenerateRequest,
// SamplingParams); their ranges are written once, below, and exported as llmOptionLimits.
#include "llm_binding.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "../core/thread_pool.h"
#include "../llm/engine.h"
#include "args.h"
#include "errors.h"
#include "promise_worker.h"

namespace platform::addon {
namespace {

using llm::Engine;
using llm::EngineError;
using llm::Event;

const napi_type_tag kHandleTag = {0x6c6c6d5f656e6769ULL, 0x6e655f68616e646cULL};

// State touched only on the JavaScript thread.
struct JsSide {
  Napi::ThreadSafeFunction tsfn;
  int64_t active = 0;  // sequences whose final event has not been delivered yet
  bool released = false;

  void release() {
    if (!released) {
      released = true;
      tsfn.Release();
    }
  }
};

struct Handle {
  std::shared_ptr<Engine> engine;
  std::shared_ptr<JsSide> js;
  std::shared_ptr<const llm::TokenTrie> trie;  // llmSetTokenBytes; grammars need it
};

const napi_type_tag kGrammarTag = {0x6772616d6d61725fULL, 0x636f6d70696c6564ULL};
using GrammarRef = std::shared_ptr<llm::CompiledGrammar>;

Handle& get_handle(const ArgReader& r, const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || info[0].Type() != napi_external ||
      !info[0].As<Napi::External<Handle>>().CheckTypeTag(&kHandleTag)) {
    r.type_error("handle must be a model handle from llmLoadModel");
  }
  return *info[0].As<Napi::External<Handle>>().Data();
}

Engine& get_engine(const ArgReader& r, const Napi::CallbackInfo& info) {
  Handle& h = get_handle(r, info);
  if (!h.engine) throw_error(info.Env(), ErrorKind::kError, code::kUnloaded, "the model has been unloaded");
  return *h.engine;
}

const llm::EngineOptions kEngine;
const llm::GenerateRequest kRequest;
const llm::SamplingParams kSampling = kRequest.sampling;
constexpr double kMaxSafeInteger = 9007199254740991.0;  // 2^53 - 1

// llmLoadModel (0 for contextLength and kvCacheBytes: chosen by the engine, see EngineOptions).
const NumberOption kContextLength{"contextLength", double(kEngine.context_length), 0, 1 << 24, true};
const NumberOption kKvCacheBytes{"kvCacheBytes", double(kEngine.kv_cache_bytes), 0, kMaxSafeInteger, true};
const NumberOption kMaxRunning{"maxRunningSequences", double(kEngine.max_running), 1, 4096, true};
const NumberOption kMaxQueued{"maxQueued", double(kEngine.max_queued), 0, 1 << 20, true};
const NumberOption kBlockSize{"kvBlockSize", double(kEngine.block_size), 1, 4096, true};
const NumberOption kMaxBatchTokens{"maxBatchTokens", double(kEngine.max_batch_tokens), 1, 1 << 16, true};
const NumberOption kThreads{"threads", double(kEngine.threads), 0, kMaxThreads, true};  // read by threads_option
const NumberOption kSpeculativeTokens{"speculativeTokens", double(kEngine.speculative_tokens), 0, 32, true};
const NumberOption* const kLoadOptions[] = {&kThreads, &kContextLength, &kKvCacheBytes, &kMaxRunning,
                                            &kMaxQueued, &kBlockSize, &kMaxBatchTokens, &kSpeculativeTokens};
// llmGenerate (seed: absent means a random seed).
const NumberOption kMaxTokens{"maxTokens", double(kRequest.max_tokens), 1, 1 << 30, true};
const NumberOption kTemperature{"temperature", kSampling.temperature, 0, 1e6, false};
const NumberOption kTopK{"topK", double(kSampling.top_k), 0, 1 << 30, true};
const NumberOption kTopP{"topP", kSampling.top_p, 0, 1, false};
const NumberOption kMinP{"minP", kSampling.min_p, 0, 1, false};
const NumberOption kFrequencyPenalty{"frequencyPenalty", kSampling.frequency_penalty, -2, 2, false};
const NumberOption kPresencePenalty{"presencePenalty", kSampling.presence_penalty, -2, 2, false};
const NumberOption kSeed{"seed", 0, 0, kMaxSafeInteger, true};
const NumberOption kLogprobs{"logprobs", -1, -1, 1 << 20, true};  // -1: none; n: the token's and n alternatives
const NumberOption* const kGenerateOptions[] = {&kMaxTokens, &kTemperature, &kTopK, &kTopP, &kMinP, &kLogprobs,
                                                &kFrequencyPenalty, &kPresencePenalty, &kSeed};

template <size_t N>
Napi::Object limits_to_js(Napi::Env env, const NumberOption* const (&options)[N]) {
  Napi::Object out = Napi::Object::New(env);
  for (const NumberOption* o : options) {
    Napi::Object limit = Napi::Object::New(env);
    limit.Set("default", o->fallback);
    limit.Set("min", o->min);
    limit.Set("max", o->max);
    limit.Set("integer", o->integer);
    limit.Freeze();
    out.Set(o->key, limit);
  }
  out.Freeze();
  return out;
}

Napi::Value event_to_js(const Napi::Env& env, Event& ev) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("id", Napi::Number::New(env, static_cast<double>(ev.id)));
  if (ev.type == Event::Type::kToken) {
    o.Set("type", "token");
    o.Set("token", Napi::Number::New(env, ev.token));
    if (ev.has_logprobs) {
      o.Set("logprob", Napi::Number::New(env, ev.logprobs.logprob));
      Napi::Array top = Napi::Array::New(env, ev.logprobs.top.size());
      for (size_t i = 0; i < ev.logprobs.top.size(); ++i) {
        Napi::Array pair = Napi::Array::New(env, 2);
        pair.Set(uint32_t{0}, Napi::Number::New(env, ev.logprobs.top[i].first));
        pair.Set(uint32_t{1}, Napi::Number::New(env, ev.logprobs.top[i].second));
        top.Set(static_cast<uint32_t>(i), pair);
      }
      o.Set("top", top);
    }
    return o;
  }
  o.Set("type", ev.type == Event::Type::kLogits ? "logits" : ev.type == Event::Type::kEmbedding ? "embedding" : "done");
  o.Set("finishReason", llm::finish_reason_name(ev.reason));
  if (!ev.error.empty()) o.Set("error", ev.error);
  o.Set("promptTokens", Napi::Number::New(env, static_cast<double>(ev.prompt_tokens)));
  o.Set("completionTokens", Napi::Number::New(env, static_cast<double>(ev.completion_tokens)));
  o.Set("cachedTokens", Napi::Number::New(env, static_cast<double>(ev.cached_tokens)));
  o.Set("queuedMs", ev.queued_ms);
  o.Set("prefillMs", ev.prefill_ms);
  o.Set("decodeMs", ev.decode_ms);
  if (ev.type == Event::Type::kEmbedding) {
    Napi::Float32Array a = Napi::Float32Array::New(env, ev.embedding.size());
    std::copy(ev.embedding.begin(), ev.embedding.end(), a.Data());
    o.Set("embedding", a);
  }
  if (ev.type == Event::Type::kLogits) {
    Napi::Float32Array a = Napi::Float32Array::New(env, ev.logits.size());
    std::copy(ev.logits.begin(), ev.logits.end(), a.Data());
    o.Set("logits", a);
  }
  return o;
}

class LoadWorker : public PromiseWorker {
 public:
  LoadWorker(Napi::Env env, std::string path, llm::EngineOptions options, std::shared_ptr<JsSide> js)
      : PromiseWorker(env, "platform.llmLoadModel", code::kLoadFailed), path_(std::move(path)), options_(options),
        js_(std::move(js)) {}

 protected:
  void work() override {
    Napi::ThreadSafeFunction tsfn = js_->tsfn;  // copied: the scheduler must not touch JsSide
    auto sink = [tsfn](std::vector<Event>&& events) mutable {
      auto* batch = new std::vector<Event>(std::move(events));
      const napi_status s = tsfn.NonBlockingCall(batch, [](Napi::Env env, Napi::Function cb, std::vector<Event>* data) {
        std::unique_ptr<std::vector<Event>> owned(data);
        if (env == nullptr || cb.IsEmpty()) return;
        try {
          cb.Call({Napi::External<std::vector<Event>>::New(env, data)});
        } catch (const Napi::Error& e) {
          napi_fatal_exception(env, e.Value());  // a throwing listener is a bug: surface it
        }
      });
      if (s != napi_ok) delete batch;
    };
    try {
      engine_ = std::make_shared<Engine>(llm::Model::load(path_), options_, std::move(sink));
    } catch (const std::bad_alloc&) {
      throw CodedFailure(code::kOutOfMemory, "out of memory loading " + path_ + " (lower kvCacheBytes or contextLength)");
    }
  }

  Napi::Value result() override {
    Napi::Env env = Env();
    auto* handle = new Handle{engine_, js_, nullptr};
    auto ext = Napi::External<Handle>::New(env, handle, [](Napi::Env, Handle* h) {
      if (h->engine) h->engine->stop();
      if (h->js) h->js->release();
      delete h;
    });
    ext.TypeTag(&kHandleTag);
    // Stop the scheduler before Node tears down the ThreadSafeFunction (hooks run last-in first-out).
    std::weak_ptr<Engine> weak = engine_;
    env.AddCleanupHook([weak]() {
      if (auto e = weak.lock()) e->stop();
    });
    return ext;
  }

  void failed() override { js_->release(); }

 private:
  std::string path_;
  llm::EngineOptions options_;
  std::shared_ptr<JsSide> js_;
  std::shared_ptr<Engine> engine_;
};

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmLoadModel");
  r.expect_count(3, 3, "path, options, onEvents");
  if (!info[0].IsString()) r.type_error("path must be a string, got " + describe_type(info[0]));
  const Napi::Object o = r.options_object(1);
  if (!info[2].IsFunction()) r.type_error("onEvents must be a function, got " + describe_type(info[2]));
  llm::EngineOptions opt;
  opt.threads = r.threads_option(o);
  opt.context_length = static_cast<int64_t>(r.option(o, kContextLength));
  opt.kv_cache_bytes = static_cast<int64_t>(r.option(o, kKvCacheBytes));
  opt.max_running = static_cast<int32_t>(r.option(o, kMaxRunning));
  opt.max_queued = static_cast<int32_t>(r.option(o, kMaxQueued));
  opt.block_size = static_cast<int32_t>(r.option(o, kBlockSize));
  opt.max_batch_tokens = static_cast<int32_t>(r.option(o, kMaxBatchTokens));
  opt.speculative_tokens = static_cast<int32_t>(r.option(o, kSpeculativeTokens));
  const Napi::Value draft = o.Get("draftModel");
  if (!draft.IsUndefined()) {
    if (!draft.IsString() || draft.As<Napi::String>().Utf8Value().empty()) r.type_error("options.draftModel must be the path of a GGUF file");
    opt.draft_model = draft.As<Napi::String>().Utf8Value();
  }
  // Adaptive draft lengths: on unless PLATFORM_SPECULATIVE_ADAPTIVE=0 or the option says otherwise.
  const char* adaptive_env = std::getenv("PLATFORM_SPECULATIVE_ADAPTIVE");
  opt.speculative_adaptive = !(adaptive_env != nullptr && std::string(adaptive_env) == "0");
  const Napi::Value adaptive = o.Get("speculativeAdaptive");
  if (!adaptive.IsUndefined()) {
    if (!adaptive.IsBoolean()) r.type_error("options.speculativeAdaptive must be true or false");
    opt.speculative_adaptive = adaptive.As<Napi::Boolean>().Value();
  }
  opt.simd = r.simd_option(o);
  if (auto backend = r.option_choice(o, "backend", {"cpu", "cuda"})) opt.backend = *backend;
  // Prefix caching: on unless PLATFORM_PREFIX_CACHE=0 or the option says otherwise.
  const char* prefix_env = std::getenv("PLATFORM_PREFIX_CACHE");
  opt.prefix_cache = !(prefix_env != nullptr && std::string(prefix_env) == "0");
  const Napi::Value prefix = o.Get("prefixCache");
  if (!prefix.IsUndefined()) {
    if (!prefix.IsBoolean()) r.type_error("options.prefixCache must be true or false");
    opt.prefix_cache = prefix.As<Napi::Boolean>().Value();
  }

  // The dispatcher: unwraps each native batch into JS objects and keeps the ref count.
  auto js = std::make_shared<JsSide>();
  Napi::Function user = info[2].As<Napi::Function>();
  std::weak_ptr<JsSide> weak_js = js;
  Napi::Function dispatch = Napi::Function::New(info.Env(), [user_ref = std::make_shared<Napi::FunctionReference>(Napi::Persistent(user)), weak_js](const Napi::CallbackInfo& ci) {
    Napi::Env env = ci.Env();
    std::vector<Event>& events = *ci[0].As<Napi::External<std::vector<Event>>>().Data();
    Napi::Array arr = Napi::Array::New(env, events.size());
    int64_t finished = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      arr.Set(static_cast<uint32_t>(i), event_to_js(env, events[i]));
      if (events[i].type != Event::Type::kToken) ++finished;
    }
    if (auto js = weak_js.lock(); js && finished > 0) {
      js->active -= finished;
      if (js->active <= 0 && !js->released) {
        js->active = 0;
        js->tsfn.Unref(env);
      }
    }
    user_ref->Call({arr});
  }, "llmEvents");
  js->tsfn = Napi::ThreadSafeFunction::New(info.Env(), dispatch, "platform.llmEvents", 0, 1);
  js->tsfn.Unref(info.Env());

  auto* worker = new LoadWorker(info.Env(), info[0].As<Napi::String>().Utf8Value(), opt, js);
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

// Submits a request; on success the ThreadSafeFunction keeps the loop alive until its final event.
Napi::Value submit(const Napi::CallbackInfo& info, const char* fn, llm::GenerateRequest req) {
  ArgReader r(info, fn);
  Handle& h = get_handle(r, info);
  Engine& engine = get_engine(r, info);
  uint64_t id = 0;
  try {
    id = engine.submit(std::move(req));
  } catch (const EngineError& ex) {
    throw_error(info.Env(), ErrorKind::kError, ex.code().c_str(), ex.what());  // the engine's state, not the caller's input
  } catch (const std::invalid_argument& ex) {
    r.range_error(ex.what());
  }
  if (h.js->active++ == 0 && !h.js->released) h.js->tsfn.Ref(info.Env());
  return Napi::Number::New(info.Env(), static_cast<double>(id));
}

Napi::Value Generate(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmGenerate");
  r.expect_count(2, 3, "handle, tokens, options?");
  get_handle(r, info);
  llm::GenerateRequest req;
  req.prompt = r.token_ids(1, "tokens");
  const Napi::Object o = r.options_object(2);
  req.max_tokens = static_cast<int32_t>(r.option(o, kMaxTokens));
  req.logprobs = static_cast<int32_t>(r.option(o, kLogprobs));
  llm::SamplingParams& s = req.sampling;
  s.temperature = static_cast<float>(r.option(o, kTemperature));
  s.top_k = static_cast<int32_t>(r.option(o, kTopK));
  s.top_p = static_cast<float>(r.option(o, kTopP));
  s.min_p = static_cast<float>(r.option(o, kMinP));
  s.frequency_penalty = static_cast<float>(r.option(o, kFrequencyPenalty));
  s.presence_penalty = static_cast<float>(r.option(o, kPresencePenalty));
  if (!o.Get(kSeed.key).IsUndefined()) {
    s.has_seed = true;
    s.seed = static_cast<uint64_t>(r.option(o, kSeed));
  }
  const Napi::Value salt = o.Get("cacheSalt");
  if (!salt.IsUndefined()) {
    if (!salt.IsString()) r.type_error("options.cacheSalt must be a string");
    req.cache_salt = salt.As<Napi::String>().Utf8Value();
  }
  const Napi::Value grammar = o.Get("grammar");
  if (!grammar.IsUndefined()) {
    if (grammar.Type() != napi_external || !grammar.As<Napi::External<GrammarRef>>().CheckTypeTag(&kGrammarTag)) {
      r.type_error("options.grammar must be a grammar from llmCompileGrammar");
    }
    req.grammar.grammar = *grammar.As<Napi::External<GrammarRef>>().Data();
    // Its masks are sized for, and its token bytes are, one model's vocabulary.
    if (&req.grammar.grammar->trie() != get_handle(r, info).trie.get()) r.range_error("options.grammar was compiled for another model");
    const Napi::Value trigger = o.Get("grammarTrigger");
    if (!trigger.IsUndefined()) {
      if (!trigger.IsString()) r.type_error("options.grammarTrigger must be a string");
      req.grammar.trigger = trigger.As<Napi::String>().Utf8Value();
    }
  }
  return submit(info, "llmGenerate", std::move(req));
}

// A request that runs the prompt and generates nothing: its logits, or (embed) its last hidden state.
Napi::Value PromptOnly(const Napi::CallbackInfo& info, const char* name, bool embed) {
  ArgReader r(info, name);
  if (embed) r.expect_count(2, 2, "handle, tokens");
  else r.expect_count(2, 3, "handle, tokens, allPositions?");
  get_handle(r, info);
  llm::GenerateRequest req;
  req.prompt = r.token_ids(1, "tokens");
  req.logits_only = true;
  req.embed = embed;
  req.all_logits = !embed && info.Length() > 2 && r.boolean(2, "allPositions");
  return submit(info, name, std::move(req));
}

Napi::Value Logits(const Napi::CallbackInfo& info) { return PromptOnly(info, "llmLogits", false); }
Napi::Value Embed(const Napi::CallbackInfo& info) { return PromptOnly(info, "llmEmbed", true); }

Napi::Value Cancel(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmCancel");
  r.expect_count(2, 2, "handle, id");
  Handle& h = get_handle(r, info);
  const double id = r.number(1, "id");
  if (h.engine && id >= 1 && id == std::floor(id)) h.engine->cancel(static_cast<uint64_t>(id));
  return info.Env().Undefined();
}

Napi::Value Stats(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmStats");
  r.expect_count(1, 1, "handle");
  const llm::EngineStats s = get_engine(r, info).stats();
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("running", Napi::Number::New(env, static_cast<double>(s.running)));
  o.Set("waiting", Napi::Number::New(env, static_cast<double>(s.waiting)));
  o.Set("kvBlocksUsed", Napi::Number::New(env, static_cast<double>(s.kv_blocks_used)));
  o.Set("kvBlocksReserved", Napi::Number::New(env, static_cast<double>(s.kv_blocks_reserved)));
  o.Set("kvBlocksTotal", Napi::Number::New(env, static_cast<double>(s.kv_blocks_total)));
  o.Set("kvBlockSize", Napi::Number::New(env, static_cast<double>(s.kv_block_size)));
  o.Set("steps", Napi::Number::New(env, static_cast<double>(s.steps)));
  o.Set("tokensGenerated", Napi::Number::New(env, static_cast<double>(s.tokens_generated)));
  o.Set("kvBlocksCached", Napi::Number::New(env, static_cast<double>(s.kv_blocks_cached)));
  o.Set("prefixCacheQueries", Napi::Number::New(env, static_cast<double>(s.prefix_queries)));
  o.Set("prefixCacheHits", Napi::Number::New(env, static_cast<double>(s.prefix_hits)));
  o.Set("draftTokens", Napi::Number::New(env, static_cast<double>(s.draft_tokens)));
  o.Set("acceptedTokens", Napi::Number::New(env, static_cast<double>(s.accepted_tokens)));
  return o;
}

Napi::Value ModelInfo(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmModelInfo");
  r.expect_count(1, 1, "handle");
  Engine& e = get_engine(r, info);
  const llm::Model& m = e.model();
  const llm::ModelConfig& c = m.config();
  Napi::Env env = info.Env();
  auto num = [&](double v) { return Napi::Number::New(env, v); };
  Napi::Object o = Napi::Object::New(env);
  o.Set("architecture", c.architecture);
  o.Set("ggufVersion", num(m.file().version()));
  o.Set("embeddingLength", num(static_cast<double>(c.dim)));
  o.Set("blockCount", num(static_cast<double>(c.n_layers)));
  o.Set("headCount", num(static_cast<double>(c.n_heads)));
  o.Set("headCountKv", num(static_cast<double>(c.n_kv_heads)));
  o.Set("headDim", num(static_cast<double>(c.head_dim)));
  o.Set("feedForwardLength", num(static_cast<double>(c.ffn_dim)));
  o.Set("expertCount", num(static_cast<double>(c.n_experts)));
  o.Set("expertUsedCount", num(static_cast<double>(c.n_experts_used)));
  o.Set("expertFeedForwardLength", num(static_cast<double>(c.expert_ffn_dim)));
  o.Set("vocabSize", num(static_cast<double>(c.vocab)));
  o.Set("contextLength", num(static_cast<double>(e.context_length())));
  o.Set("trainContextLength", num(static_cast<double>(c.train_context)));
  o.Set("ropeFreqBase", num(c.rope_base));
  o.Set("ropeDim", num(static_cast<double>(c.rope_dim)));
  o.Set("ropeStyle", c.rope_neox ? "neox" : "adjacent");
  o.Set("rmsEpsilon", num(c.rms_eps));
  o.Set("tiedOutput", Napi::Boolean::New(env, c.tied_output));
  o.Set("bosToken", num(c.bos_token));
  Napi::Array eos = Napi::Array::New(env, c.eos_tokens.size());
  for (size_t i = 0; i < c.eos_tokens.size(); ++i) eos.Set(static_cast<uint32_t>(i), num(c.eos_tokens[i]));
  o.Set("eosTokens", eos);
  Napi::Object types = Napi::Object::New(env);
  for (const auto& [name, count] : m.tensor_types()) types.Set(name, num(static_cast<double>(count)));
  o.Set("tensorTypes", types);
  Napi::Object mem = Napi::Object::New(env);
  mem.Set("mappedBytes", num(static_cast<double>(m.file().file_size())));
  mem.Set("kvCacheBytes", num(static_cast<double>(e.kv_cache_bytes())));
  mem.Set("scratchBytes", num(static_cast<double>(e.backend().scratch_bytes())));
  mem.Set("deviceWeightBytes", num(static_cast<double>(e.backend().weight_bytes())));
  o.Set("memory", mem);
  o.Set("threads", num(e.options().threads));
  o.Set("maxRunningSequences", num(e.options().max_running));
  o.Set("maxQueued", num(e.options().max_queued));
  o.Set("kvBlockSize", num(e.options().block_size));
  o.Set("maxBatchTokens", num(e.options().max_batch_tokens));
  o.Set("speculativeTokens", num(e.options().speculative_tokens));
  o.Set("draftModel", e.options().draft_model.empty() ? env.Null() : Napi::String::New(env, e.options().draft_model));
  o.Set("backend", e.backend().name());
  o.Set("kernels", e.backend().describe());
  return o;
}

class UnloadWorker : public PromiseWorker {
 public:
  UnloadWorker(Napi::Env env, Napi::External<Handle> handle)
      : PromiseWorker(env, "platform.llmUnload", code::kInternal), handle_(Napi::Persistent(handle.As<Napi::Value>())),
        engine_(handle.Data()->engine) {}

 protected:
  void work() override {
    if (engine_) engine_->stop();  // cancels every sequence; their events are queued first
  }
  Napi::Value result() override {
    Handle* h = handle_.Value().As<Napi::External<Handle>>().Data();
    if (h->js) h->js->release();
    h->engine.reset();
    engine_.reset();  // unmaps the file and frees the KV cache
    return Env().Undefined();
  }

 private:
  Napi::Reference<Napi::Value> handle_;
  std::shared_ptr<Engine> engine_;
};

Napi::Value Unload(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmUnload");
  r.expect_count(1, 1, "handle");
  get_handle(r, info);
  auto* worker = new UnloadWorker(info.Env(), info[0].As<Napi::External<Handle>>());
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

Napi::Value SetTokenBytes(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmSetTokenBytes");
  r.expect_count(3, 3, "handle, bytes, offsets");
  Handle& h = get_handle(r, info);
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) r.type_error("bytes must be a Uint8Array");
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) r.type_error("offsets must be a Uint32Array");
  const Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
  const Napi::Uint32Array offsets = info[2].As<Napi::Uint32Array>();
  try {
    h.trie = std::make_shared<const llm::TokenTrie>(std::vector<uint8_t>(bytes.Data(), bytes.Data() + bytes.ElementLength()),
                                                    std::vector<uint32_t>(offsets.Data(), offsets.Data() + offsets.ElementLength()));
  } catch (const std::invalid_argument& ex) {
    r.range_error(ex.what());
  }
  return info.Env().Undefined();
}

Napi::Value CompileGrammar(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmCompileGrammar");
  r.expect_count(2, 2, "handle, encoded");
  Handle& h = get_handle(r, info);
  Engine& engine = get_engine(r, info);
  if (!h.trie) r.range_error("the model's token bytes are not set (llmSetTokenBytes)");
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) r.type_error("encoded must be an Int32Array");
  const Napi::Int32Array encoded = info[1].As<Napi::Int32Array>();
  GrammarRef compiled;
  try {
    const llm::ModelConfig& c = engine.model().config();
    llm::GrammarLimits limits;
    compiled = std::make_shared<llm::CompiledGrammar>(llm::Grammar::parse(encoded.Data(), encoded.ElementLength(), limits.max_items), h.trie,
                                                      c.vocab, c.eos_tokens, limits);
  } catch (const std::invalid_argument& ex) {
    r.range_error(ex.what());
  }
  Napi::External<GrammarRef> out = Napi::External<GrammarRef>::New(info.Env(), new GrammarRef(std::move(compiled)), [](Napi::Env, GrammarRef* g) { delete g; });
  out.TypeTag(&kGrammarTag);
  return out;
}

Napi::Value GrammarStates(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmGrammarStates");
  r.expect_count(1, 1, "grammar");
  if (info[0].Type() != napi_external || !info[0].As<Napi::External<GrammarRef>>().CheckTypeTag(&kGrammarTag)) {
    r.type_error("grammar must be a grammar from llmCompileGrammar");
  }
  return Napi::Number::New(info.Env(), static_cast<double>((*info[0].As<Napi::External<GrammarRef>>().Data())->states()));
}

}  // namespace

void register_llm(Napi::Env env, Napi::Object exports) {
  exports.Set("llmLoadModel", Napi::Function::New(env, LoadModel, "llmLoadModel"));
  exports.Set("llmGenerate", Napi::Function::New(env, Generate, "llmGenerate"));
  exports.Set("llmLogits", Napi::Function::New(env, Logits, "llmLogits"));
  exports.Set("llmEmbed", Napi::Function::New(env, Embed, "llmEmbed"));
  exports.Set("llmCancel", Napi::Function::New(env, Cancel, "llmCancel"));
  exports.Set("llmStats", Napi::Function::New(env, Stats, "llmStats"));
  exports.Set("llmModelInfo", Napi::Function::New(env, ModelInfo, "llmModelInfo"));
  exports.Set("llmUnload", Napi::Function::New(env, Unload, "llmUnload"));
  exports.Set("llmSetTokenBytes", Napi::Function::New(env, SetTokenBytes, "llmSetTokenBytes"));
  exports.Set("llmCompileGrammar", Napi::Function::New(env, CompileGrammar, "llmCompileGrammar"));
  exports.Set("llmGrammarStates", Napi::Function::New(env, GrammarStates, "llmGrammarStates"));
  Napi::Object limits = Napi::Object::New(env);
  limits.Set("load", limits_to_js(env, kLoadOptions));
  limits.Set("generate", limits_to_js(env, kGenerateOptions));
  limits.Freeze();
  exports.Set("llmOptionLimits", limits);
}

}  // namespace platform::addon
