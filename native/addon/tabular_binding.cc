// tabularCompile(model, options?) -> TabularModel {run, runSync, describe, dispose}.
// options: {threads?, device?: 'cpu' | 'cuda', cudaMinRows?} (see graph.h CompileOptions).
//
// The model is the plain NormalizedModel object of src/tabular/onnx (typed arrays, strings,
// numbers); it is read into a native ModelDesc on the JavaScript thread and compiled there (a
// one-off per model build). run() copies the inputs into native tensors on the JavaScript thread
// and runs the graph on a libuv worker (AsyncWorker), so the event loop never does model
// arithmetic; runSync() runs on the calling thread (tests, benchmarks).
//
// Errors (errors.h): a malformed model object or a wrong argument type is a TypeError; a right type
// with an unusable value (dims that do not match the data, an unknown or missing input, a shape
// the model does not accept) a RangeError, both with code "invalid_argument"; a model the
// executor refuses is an Error "model_refused", a failure while running an Error "run_failed"
// (both carry the native message, which names the node and operator), cuda asked for where it
// cannot run an Error "unavailable", a disposed model an Error "disposed".
#include "tabular_binding.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../tabular/graph.h"
#include "args.h"
#include "errors.h"
#include "promise_worker.h"

namespace platform::addon {
namespace {

using tabular::Attribute;
using tabular::DType;
using tabular::Graph;
using tabular::GraphOutput;
using tabular::ModelDesc;
using tabular::NamedTensor;
using tabular::NodeDesc;
using tabular::Tensor;
using tabular::ValueDesc;

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// ---- reading the model object ----

// The element type a tensor's dataType names; float16/bfloat16 arrive decoded as float32.
DType tensor_dtype(const ArgReader& r, const std::string& name, const std::string& path) {
  if (name == "float16" || name == "bfloat16") return DType::kFloat;
  const DType t = tabular::dtype_from_name(name);
  if (t == DType::kUndefined) r.range_error(path + " has the unsupported element type " + quoted(name));
  return t;
}

template <typename T, typename S>
void copy_converted(const S* src, size_t n, Tensor& t) {
  T* dst = t.data<T>();
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
}

// Reads typed-array or string[] data into a tensor of element type `type` and shape `dims`.
// `what` names the data for messages. Int32Array data is range-checked for narrower types.
Tensor read_data(const ArgReader& r, const Napi::Value& data, DType type, const tabular::Shape& dims, const std::string& what) {
  int64_t count;
  try {
    count = tabular::shape_size(dims);
  } catch (const std::exception& e) {
    r.range_error(what + ": " + e.what());
  }
  auto mismatch = [&](size_t length) {
    r.range_error(what + ": dims " + tabular::shape_str(dims) + " hold " + std::to_string(count) +
                " elements but data has " + std::to_string(length));
  };
  Tensor t;
  try {
    t = Tensor(type, dims);
  } catch (const std::bad_alloc&) {
    r.range_error(what + ": out of memory for dims " + tabular::shape_str(dims));
  } catch (const std::exception& e) {
    r.range_error(what + ": " + e.what());
  }
  if (type == DType::kString) {
    if (!data.IsArray()) r.type_error(what + ": data must be an array of strings, got " + describe_type(data));
    Napi::Array a = data.As<Napi::Array>();
    if (static_cast<int64_t>(a.Length()) != count) mismatch(a.Length());
    for (uint32_t i = 0; i < a.Length(); ++i) {
      Napi::Value s = a.Get(i);
      if (!s.IsString()) r.type_error(what + ": data[" + std::to_string(i) + "] must be a string, got " + describe_type(s));
      t.strings()[i] = s.As<Napi::String>().Utf8Value();
    }
    return t;
  }
  if (!data.IsTypedArray()) {
    r.type_error(what + ": data must be a typed array for element type " + tabular::dtype_name(type) + ", got " +
               describe_type(data));
  }
  Napi::TypedArray ta = data.As<Napi::TypedArray>();
  const napi_typedarray_type at = ta.TypedArrayType();
  const size_t n = ta.ElementLength();
  auto expect = [&](napi_typedarray_type want, const char* name) {
    if (at != want) {
      r.type_error(what + ": data must be a " + name + " for element type " + tabular::dtype_name(type) + ", got " +
                 describe_type(data));
    }
  };
  const void* src = static_cast<const char*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
  switch (type) {
    case DType::kFloat: expect(napi_float32_array, "Float32Array"); break;
    case DType::kDouble: expect(napi_float64_array, "Float64Array"); break;
    case DType::kInt64: expect(napi_bigint64_array, "BigInt64Array"); break;
    case DType::kUInt64: expect(napi_biguint64_array, "BigUint64Array"); break;
    case DType::kUInt32: expect(napi_uint32_array, "Uint32Array"); break;
    default: expect(napi_int32_array, "Int32Array"); break;  // int8..int32, uint8, uint16, bool
  }
  if (static_cast<int64_t>(n) != count) mismatch(n);
  if (n == 0) return t;
  switch (type) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kUInt32:
    case DType::kInt32:
      std::memcpy(t.raw(), src, n * tabular::dtype_size(type));
      return t;
    default: break;
  }
  // Narrower integer types and bool travel as Int32Array: check the range, then narrow.
  const int32_t* s = static_cast<const int32_t*>(src);
  int64_t lo = 0, hi = 0;
  switch (type) {
    case DType::kInt8: lo = -128; hi = 127; break;
    case DType::kUInt8: lo = 0; hi = 255; break;
    case DType::kInt16: lo = -32768; hi = 32767; break;
    case DType::kUInt16: lo = 0; hi = 65535; break;
    case DType::kBool: lo = 0; hi = 1; break;
    default: break;
  }
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < lo || s[i] > hi) {
      r.range_error(what + ": data[" + std::to_string(i) + "] = " + std::to_string(s[i]) + " is out of range for " +
                  tabular::dtype_name(type));
    }
  }
  switch (type) {
    case DType::kInt8: copy_converted<int8_t>(s, n, t); break;
    case DType::kUInt8: copy_converted<uint8_t>(s, n, t); break;
    case DType::kInt16: copy_converted<int16_t>(s, n, t); break;
    case DType::kUInt16: copy_converted<uint16_t>(s, n, t); break;
    case DType::kBool: copy_converted<bool>(s, n, t); break;
    default: break;
  }
  return t;
}

tabular::Shape read_dims(const ArgReader& r, const Napi::Value& v, const std::string& path) {
  Napi::Array a = r.array_at(v, path);
  tabular::Shape dims(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value d = a.Get(i);
    const std::string where = " at " + std::to_string(i);
    if (!d.IsNumber()) r.type_error(path + " must be an array of non-negative integers, got " + describe_type(d) + where);
    const double x = d.As<Napi::Number>().DoubleValue();
    if (!(x >= 0) || std::floor(x) != x || x > 2147483647.0) {
      r.range_error(path + " must be an array of non-negative integers, got " + format_number(x) + where);
    }
    dims[i] = static_cast<int64_t>(x);
  }
  return dims;
}

Tensor read_tensor(const ArgReader& r, const Napi::Value& v, const std::string& path) {
  Napi::Object o = r.object_at(v, path);
  const DType type = tensor_dtype(r, r.string_at(o.Get("dataType"), path + ".dataType"), path);
  const tabular::Shape dims = read_dims(r, o.Get("dims"), path + ".dims");
  return read_data(r, o.Get("data"), type, dims, path);
}

ValueDesc read_value_info(const ArgReader& r, const Napi::Value& v, const std::string& path) {
  Napi::Object o = r.object_at(v, path);
  ValueDesc d;
  d.name = r.string_at(o.Get("name"), path + ".name");
  const std::string kind = r.string_at(o.Get("kind"), path + ".kind");
  if (kind == "tensor") {
    d.kind = ValueDesc::Kind::kTensor;
    const std::string et = r.string_at(o.Get("elemType"), path + ".elemType");
    d.dtype = et == "float16" || et == "bfloat16" ? DType::kFloat : tabular::dtype_from_name(et);
    if (d.dtype == DType::kUndefined) r.range_error(path + " has the unsupported element type " + quoted(et));
    Napi::Value shape = o.Get("shape");
    if (!shape.IsNull() && !shape.IsUndefined()) {
      Napi::Array a = r.array_at(shape, path + ".shape");
      d.has_shape = true;
      for (uint32_t i = 0; i < a.Length(); ++i) {
        Napi::Value dim = a.Get(i);
        d.dims.push_back(dim.IsNumber() ? r.integer_at(dim, path + ".shape[" + std::to_string(i) + "]") : -1);
      }
    }
  } else if (kind == "sequence-map") {
    d.kind = ValueDesc::Kind::kSequenceMap;
    d.key_type = tabular::dtype_from_name(r.string_at(o.Get("keyType"), path + ".keyType"));
    d.dtype = tabular::dtype_from_name(r.string_at(o.Get("valueType"), path + ".valueType"));
  } else if (kind == "unknown") {
    d.kind = ValueDesc::Kind::kUnknown;
  } else {
    r.range_error(path + ".kind must be \"tensor\", \"sequence-map\" or \"unknown\", got " + quoted(kind));
  }
  return d;
}

Attribute read_attribute(const ArgReader& r, const Napi::Value& v, const std::string& path) {
  Napi::Object o = r.object_at(v, path);
  Attribute a;
  a.type_name = r.string_at(o.Get("type"), path + ".type");
  Napi::Value val = o.Get("value");
  const std::string vp = path + ".value";
  const std::string& t = a.type_name;
  if (t == "float") {
    a.kind = Attribute::Kind::kFloat;
    a.f = r.number_at(val, vp);
  } else if (t == "int") {
    a.kind = Attribute::Kind::kInt;
    a.i = r.integer_at(val, vp);
  } else if (t == "string") {
    a.kind = Attribute::Kind::kString;
    a.s = r.string_at(val, vp);
  } else if (t == "tensor") {
    a.kind = Attribute::Kind::kTensor;
    a.t = read_tensor(r, val, vp);
  } else if (t == "floats") {
    a.kind = Attribute::Kind::kFloats;
    Napi::Array arr = r.array_at(val, vp);
    a.floats.resize(arr.Length());
    for (uint32_t i = 0; i < arr.Length(); ++i) a.floats[i] = r.number_at(arr.Get(i), vp + "[" + std::to_string(i) + "]");
  } else if (t == "ints") {
    a.kind = Attribute::Kind::kInts;
    Napi::Array arr = r.array_at(val, vp);
    a.ints.resize(arr.Length());
    for (uint32_t i = 0; i < arr.Length(); ++i) a.ints[i] = r.integer_at(arr.Get(i), vp + "[" + std::to_string(i) + "]");
  } else if (t == "strings") {
    a.kind = Attribute::Kind::kStrings;
    a.strings = r.strings_at(val, vp);
  } else {
    a.kind = Attribute::Kind::kOther;  // graphs and other kinds: no supported operator reads them
  }
  return a;
}

ModelDesc read_model(const ArgReader& r, const Napi::Value& v) {
  const std::string root = "model";
  Napi::Object m = r.object_at(v, root);
  Napi::Object g = r.object_at(m.Get("graph"), root + ".graph");
  ModelDesc desc;
  Napi::Value opsets = m.Get("opsetImports");
  if (opsets.IsObject()) {
    Napi::Object o = opsets.As<Napi::Object>();
    Napi::Array keys = o.GetPropertyNames();
    for (uint32_t i = 0; i < keys.Length(); ++i) {
      const std::string k = keys.Get(i).As<Napi::String>().Utf8Value();
      Napi::Value val = o.Get(k);
      if (val.IsNumber()) desc.opset_imports[k] = static_cast<int>(val.As<Napi::Number>().Int64Value());
    }
  }
  Napi::Array inputs = r.array_at(g.Get("inputs"), root + ".graph.inputs");
  for (uint32_t i = 0; i < inputs.Length(); ++i) {
    desc.inputs.push_back(read_value_info(r, inputs.Get(i), root + ".graph.inputs[" + std::to_string(i) + "]"));
  }
  Napi::Array outputs = r.array_at(g.Get("outputs"), root + ".graph.outputs");
  for (uint32_t i = 0; i < outputs.Length(); ++i) {
    desc.outputs.push_back(read_value_info(r, outputs.Get(i), root + ".graph.outputs[" + std::to_string(i) + "]"));
  }
  Napi::Array inits = r.array_at(g.Get("initializers"), root + ".graph.initializers");
  for (uint32_t i = 0; i < inits.Length(); ++i) {
    const std::string p = root + ".graph.initializers[" + std::to_string(i) + "]";
    Napi::Object o = r.object_at(inits.Get(i), p);
    desc.initializers.push_back(NamedTensor{r.string_at(o.Get("name"), p + ".name"), read_tensor(r, o, p)});
  }
  Napi::Array nodes = r.array_at(g.Get("nodes"), root + ".graph.nodes");
  for (uint32_t i = 0; i < nodes.Length(); ++i) {
    const std::string p = root + ".graph.nodes[" + std::to_string(i) + "]";
    Napi::Object o = r.object_at(nodes.Get(i), p);
    NodeDesc n;
    n.name = r.string_at(o.Get("name"), p + ".name");
    n.op_type = r.string_at(o.Get("opType"), p + ".opType");
    n.domain = r.string_at(o.Get("domain"), p + ".domain");
    n.version = static_cast<int>(r.integer_at(o.Get("version"), p + ".version"));
    n.inputs = r.strings_at(o.Get("inputs"), p + ".inputs");
    n.outputs = r.strings_at(o.Get("outputs"), p + ".outputs");
    Napi::Object attrs = r.object_at(o.Get("attributes"), p + ".attributes");
    Napi::Array keys = attrs.GetPropertyNames();
    for (uint32_t k = 0; k < keys.Length(); ++k) {
      const std::string name = keys.Get(k).As<Napi::String>().Utf8Value();
      n.attributes.emplace(name, read_attribute(r, attrs.Get(name), p + ".attributes." + name));
    }
    desc.nodes.push_back(std::move(n));
  }
  return desc;
}

// ---- inputs and outputs ----

std::vector<NamedTensor> read_inputs(const ArgReader& r, const Napi::Value& v, const Graph& graph) {
  if (!v.IsArray()) r.type_error("inputs must be an array of {name, dims, data}, got " + describe_type(v));
  Napi::Array a = v.As<Napi::Array>();
  std::vector<NamedTensor> out;
  out.reserve(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const std::string p = "inputs[" + std::to_string(i) + "]";
    Napi::Value item = a.Get(i);
    if (!item.IsObject() || item.IsArray()) {
      r.type_error(p + " must be an object {name, dims, data}, got " + describe_type(item));
    }
    Napi::Object o = item.As<Napi::Object>();
    const std::string name = r.string_at(o.Get("name"), p + ".name");
    const std::string what = "input " + quoted(name);
    const tabular::ValueDesc* decl = nullptr;
    for (const auto& d : graph.inputs()) {
      if (d.name == name) decl = &d;
    }
    if (decl == nullptr) {
      std::string names;
      for (const auto& d : graph.inputs()) names += (names.empty() ? "" : ", ") + quoted(d.name);
      r.range_error("unknown input " + quoted(name) + "; the model's inputs are " + names);
    }
    const tabular::Shape dims = read_dims(r, o.Get("dims"), what + ": dims");
    out.push_back(NamedTensor{name, read_data(r, o.Get("data"), decl->dtype, dims, what)});
  }
  return out;
}

Napi::Value data_to_js(Napi::Env env, const Tensor& t) {
  const size_t n = static_cast<size_t>(t.size());
  auto copy = [&](auto arr) {
    if (n) std::memcpy(arr.Data(), t.raw(), n * tabular::dtype_size(t.dtype()));
    return arr;
  };
  auto widen = [&](auto tag) -> Napi::Value {
    using S = typename decltype(tag)::type;
    Napi::Int32Array arr = Napi::Int32Array::New(env, n);
    const S* s = t.data<S>();
    for (size_t i = 0; i < n; ++i) arr[i] = static_cast<int32_t>(s[i]);
    return arr;
  };
  switch (t.dtype()) {
    case DType::kFloat: return copy(Napi::Float32Array::New(env, n));
    case DType::kDouble: return copy(Napi::Float64Array::New(env, n));
    case DType::kInt32: return copy(Napi::Int32Array::New(env, n));
    case DType::kUInt32: return copy(Napi::Uint32Array::New(env, n));
    case DType::kInt64: return copy(Napi::TypedArrayOf<int64_t>::New(env, n, napi_bigint64_array));
    case DType::kUInt64: return copy(Napi::TypedArrayOf<uint64_t>::New(env, n, napi_biguint64_array));
    case DType::kInt8: return widen(tabular::TypeTag<int8_t>{});
    case DType::kUInt8: return widen(tabular::TypeTag<uint8_t>{});
    case DType::kInt16: return widen(tabular::TypeTag<int16_t>{});
    case DType::kUInt16: return widen(tabular::TypeTag<uint16_t>{});
    case DType::kBool: return widen(tabular::TypeTag<bool>{});
    case DType::kString: {
      Napi::Array arr = Napi::Array::New(env, n);
      for (size_t i = 0; i < n; ++i) arr.Set(static_cast<uint32_t>(i), Napi::String::New(env, t.strings()[i]));
      return arr;
    }
    default: return env.Undefined();
  }
}

Napi::Array dims_to_js(Napi::Env env, const tabular::Shape& dims) {
  Napi::Array a = Napi::Array::New(env, dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    a.Set(static_cast<uint32_t>(i), dims[i] < 0 ? env.Null() : Napi::Number::New(env, static_cast<double>(dims[i])));
  }
  return a;
}

Napi::Array outputs_to_js(Napi::Env env, const std::vector<GraphOutput>& outs) {
  Napi::Array arr = Napi::Array::New(env, outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const Tensor& t = outs[k].tensor;
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", outs[k].name);
    o.Set("dataType", tabular::dtype_name(t.dtype()));
    o.Set("dims", dims_to_js(env, t.shape()));
    o.Set("data", data_to_js(env, t));
    if (const auto& keys = t.map_keys()) {
      if (keys->strings) {
        Napi::Array ks = Napi::Array::New(env, keys->strs.size());
        for (size_t i = 0; i < keys->strs.size(); ++i) ks.Set(static_cast<uint32_t>(i), keys->strs[i]);
        o.Set("mapKeys", ks);
      } else {
        auto ks = Napi::TypedArrayOf<int64_t>::New(env, keys->ints.size(), napi_bigint64_array);
        if (!keys->ints.empty()) std::memcpy(ks.Data(), keys->ints.data(), keys->ints.size() * sizeof(int64_t));
        o.Set("mapKeys", ks);
      }
    }
    arr.Set(static_cast<uint32_t>(k), o);
  }
  return arr;
}

// ---- the model object ----

class RunWorker : public PromiseWorker {
 public:
  RunWorker(Napi::Env env, std::shared_ptr<const Graph> graph, std::vector<Tensor> inputs)
      : PromiseWorker(env, "tabularRun", code::kRunFailed, CallerStack::kSkip), graph_(std::move(graph)),
        inputs_(std::move(inputs)) {}

 protected:
  void work() override { outputs_ = graph_->run(std::move(inputs_)); }
  Napi::Value result() override { return outputs_to_js(Env(), outputs_); }

 private:
  std::shared_ptr<const Graph> graph_;  // keeps the model alive even if disposed meanwhile
  std::vector<Tensor> inputs_;
  std::vector<GraphOutput> outputs_;
};

class TabularModel : public Napi::ObjectWrap<TabularModel> {
 public:
  static Napi::Function define(Napi::Env env) {
    return DefineClass(env, "TabularModel",
                       {
                           InstanceMethod<&TabularModel::run>("run"),
                           InstanceMethod<&TabularModel::run_sync>("runSync"),
                           InstanceMethod<&TabularModel::describe>("describe"),
                           InstanceMethod<&TabularModel::dispose>("dispose"),
                           InstanceAccessor<&TabularModel::disposed>("disposed"),
                       });
  }

  explicit TabularModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TabularModel>(info) {
    // Only tabularCompile constructs models (it passes the compiled graph as an External).
    if (info.Length() != 1 || !info[0].IsExternal()) {
      throw_error(info.Env(), ErrorKind::kType, code::kInvalidArgument,
                  "TabularModel cannot be constructed directly; use tabularCompile(model)");
    }
    graph_ = *info[0].As<Napi::External<std::shared_ptr<const Graph>>>().Data();
  }

 private:
  std::shared_ptr<const Graph> live(const ArgReader& r) const {
    if (!graph_) throw_error(r.env(), ErrorKind::kError, code::kDisposed, std::string(r.fn()) + ": the model has been disposed");
    return graph_;
  }

  // The inputs of one run, read and checked against the model's declared inputs.
  static std::vector<Tensor> read_run_inputs(const ArgReader& r, const Graph& graph) {
    r.expect_count(1, 1, "inputs");
    try {
      return graph.check_inputs(read_inputs(r, r.info()[0], graph));
    } catch (const tabular::InputError& e) {
      if (e.type_error()) r.type_error(e.what());
      r.range_error(e.what());
    }
  }

  Napi::Value run(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ArgReader r(info, "run");
    // Argument errors reject the promise rather than throw, so callers handle one path.
    try {
      auto graph = live(r);
      std::vector<Tensor> inputs = read_run_inputs(r, *graph);
      auto* worker = new RunWorker(env, std::move(graph), std::move(inputs));
      Napi::Promise p = worker->promise();
      worker->Queue();
      return p;
    } catch (const Napi::Error& e) {
      auto d = Napi::Promise::Deferred::New(env);
      d.Reject(e.Value());
      return d.Promise();
    } catch (const std::exception& e) {
      // Nothing native may escape to N-API (it would terminate the process).
      auto d = Napi::Promise::Deferred::New(env);
      d.Reject(make_error(env, ErrorKind::kError, code::kInternal, std::string("run: ") + e.what()).Value());
      return d.Promise();
    }
  }

  Napi::Value run_sync(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    ArgReader r(info, "runSync");
    auto graph = live(r);
    std::vector<Tensor> inputs = read_run_inputs(r, *graph);
    std::vector<GraphOutput> outs;
    try {
      outs = graph->run(std::move(inputs));
    } catch (const std::bad_alloc&) {
      throw_error(env, ErrorKind::kError, code::kOutOfMemory, "out of memory");
    } catch (const std::exception& e) {
      throw_error(env, ErrorKind::kError, code::kRunFailed, e.what());
    }
    return outputs_to_js(env, outs);
  }

  Napi::Value describe(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("disposed", graph_ == nullptr);
    if (!graph_) return o;
    auto values = [&](const std::vector<ValueDesc>& list) {
      Napi::Array a = Napi::Array::New(env, list.size());
      for (size_t i = 0; i < list.size(); ++i) {
        const ValueDesc& d = list[i];
        Napi::Object v = Napi::Object::New(env);
        v.Set("name", d.name);
        switch (d.kind) {
          case ValueDesc::Kind::kTensor:
            v.Set("kind", "tensor");
            v.Set("dataType", tabular::dtype_name(d.dtype));
            v.Set("shape", d.has_shape ? Napi::Value(dims_to_js(env, d.dims)) : env.Null());
            break;
          case ValueDesc::Kind::kSequenceMap:
            v.Set("kind", "sequence-map");
            v.Set("keyType", tabular::dtype_name(d.key_type));
            v.Set("valueType", tabular::dtype_name(d.dtype));
            break;
          default: v.Set("kind", "unknown"); break;
        }
        a.Set(static_cast<uint32_t>(i), v);
      }
      return a;
    };
    o.Set("inputs", values(graph_->inputs()));
    o.Set("outputs", values(graph_->outputs()));
    o.Set("nodes", Napi::Number::New(env, static_cast<double>(graph_->node_count())));
    Napi::Array ops = Napi::Array::New(env, graph_->operators().size());
    for (size_t i = 0; i < graph_->operators().size(); ++i) ops.Set(static_cast<uint32_t>(i), graph_->operators()[i]);
    o.Set("operators", ops);
    o.Set("initializerBytes", Napi::Number::New(env, static_cast<double>(graph_->initializer_bytes())));
    o.Set("threads", Napi::Number::New(env, graph_->threads()));
    const bool cuda = graph_->device() == tabular::Device::kCuda;
    o.Set("device", cuda ? "cuda" : "cpu");
    if (cuda) {
      o.Set("deviceName", graph_->device_name());
      o.Set("cudaMinRows", Napi::Number::New(env, static_cast<double>(graph_->cuda_min_rows())));
      o.Set("deviceLayers", Napi::Number::New(env, static_cast<double>(graph_->device_layers())));
      o.Set("deviceBytes", Napi::Number::New(env, static_cast<double>(graph_->device_bytes())));
    }
    return o;
  }

  Napi::Value dispose(const Napi::CallbackInfo& info) {
    graph_.reset();  // in-flight runs hold their own reference
    return info.Env().Undefined();
  }

  Napi::Value disposed(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), graph_ == nullptr); }

  std::shared_ptr<const Graph> graph_;
};

const NumberOption kCudaMinRows{"cudaMinRows", -1, 0, 2147483647.0, true};  // absent: the engine's crossover

// tabularCompile(model, options?): the constructor arrives as the function's data.
Napi::Value tabular_compile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctor = static_cast<Napi::FunctionReference*>(info.Data());
  ArgReader r(info, "tabularCompile");
  r.expect_count(1, 2, "model, options?");
  const Napi::Object o = r.options_object(1);
  tabular::CompileOptions options;
  options.threads = r.threads_option(o);
  if (r.option_choice(o, "device", {"cpu", "cuda"}).value_or("cpu") == "cuda") options.device = tabular::Device::kCuda;
  options.cuda_min_rows = static_cast<int64_t>(r.option(o, kCudaMinRows));
  const ModelDesc desc = read_model(r, info[0]);
  std::shared_ptr<const Graph> graph;
  try {
    graph = Graph::compile(desc, options);
  } catch (const std::bad_alloc&) {
    throw_error(env, ErrorKind::kError, code::kOutOfMemory, "tabularCompile: out of memory");
  } catch (const tabular::DeviceUnavailableError& e) {
    throw_error(env, ErrorKind::kError, code::kUnavailable, e.what());
  } catch (const std::exception& e) {
    throw_error(env, ErrorKind::kError, code::kModelRefused, e.what());
  }
  auto holder = std::make_unique<std::shared_ptr<const Graph>>(std::move(graph));
  // The External only lives for the constructor call; the model copies the pointer.
  Napi::External<std::shared_ptr<const Graph>> ext = Napi::External<std::shared_ptr<const Graph>>::New(env, holder.get());
  return ctor->New({ext});
}

}  // namespace

void register_tabular(Napi::Env env, Napi::Object exports) {
  Napi::Function cls = TabularModel::define(env);
  auto* ctor = new Napi::FunctionReference(Napi::Persistent(cls));
  env.AddCleanupHook([ctor]() { delete ctor; });
  exports.Set("tabularCompile", Napi::Function::New(env, tabular_compile, "tabularCompile", ctor));
}

}  // namespace platform::addon
