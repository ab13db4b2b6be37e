// gemmF32 / gemmF32Async / gemvF32 / gemvF32Async: argument checks, then the CPU backend's kernels either
// on the calling thread or on a libuv worker (AsyncWorker) with the buffers referenced until the
// promise settles.
#include "gemm_binding.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "../backends/cpu/gemm.h"
#include "args.h"
#include "errors.h"
#include "promise_worker.h"

namespace platform::addon {
namespace {

const char* bool_name(bool b) { return b ? "true" : "false"; }

// A checked call: plain data and raw pointers into the caller's Float32Arrays, safe to run on
// any thread while those arrays are kept alive.
struct GemmCall {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t lda = 0, ldb = 0, ldc = 0;
  GemmOptions options;

  void run() const {
    gemm_f32(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options);
  }
};

// The checked call plus the JavaScript arrays it points into (valid on the JS thread only).
template <typename Call>
struct Parsed {
  Call call;
  std::vector<Napi::Float32Array> inputs;
  Napi::Float32Array output;
};

constexpr const char* kGemmUsage =
    "transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, options?";

Parsed<GemmCall> parse_gemm(const Napi::CallbackInfo& info, const char* fn, bool async) {
  ArgReader r(info, fn);
  r.expect_count(13, 14, kGemmUsage);
  GemmCall g;
  Napi::Float32Array a_array, b_array, c_array;
  g.transA = r.boolean(0, "transA");
  g.transB = r.boolean(1, "transB");
  g.m = r.dim(2, "m");
  g.n = r.dim(3, "n");
  g.k = r.dim(4, "k");
  g.alpha = static_cast<float>(r.number(5, "alpha"));
  a_array = r.f32_array(6, "a");
  g.lda = r.dim(7, "lda");
  b_array = r.f32_array(8, "b");
  g.ldb = r.dim(9, "ldb");
  g.beta = static_cast<float>(r.number(10, "beta"));
  c_array = r.f32_array(11, "c");
  g.ldc = r.dim(12, "ldc");
  g.options = r.options(13);

  const std::string ta = std::string(" because transA is ") + bool_name(g.transA);
  const std::string tb = std::string(" because transB is ") + bool_name(g.transB);
  if (g.transA) {
    r.check_matrix(a_array, "a", "lda", g.k, g.m, g.lda, "A is stored [k,m]" + ta);
  } else {
    r.check_matrix(a_array, "a", "lda", g.m, g.k, g.lda, "A is stored [m,k]" + ta);
  }
  if (g.transB) {
    r.check_matrix(b_array, "b", "ldb", g.n, g.k, g.ldb, "B is stored [n,k]" + tb);
  } else {
    r.check_matrix(b_array, "b", "ldb", g.k, g.n, g.ldb, "B is stored [k,n]" + tb);
  }
  r.check_matrix(c_array, "c", "ldc", g.m, g.n, g.ldc, "C is stored [m,n]");
  r.check_disjoint(c_array, "c", a_array, "a");
  r.check_disjoint(c_array, "c", b_array, "b");
  if (async) {
    r.check_fixed_length(a_array, "a");
    r.check_fixed_length(b_array, "b");
    r.check_fixed_length(c_array, "c");
  }
  g.a = a_array.Data();
  g.b = b_array.Data();
  g.c = c_array.Data();
  return {g, {a_array, b_array}, c_array};
}

struct GemvCall {
  bool transA = false;
  int64_t m = 0, n = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float* a = nullptr;
  const float* x = nullptr;
  float* y = nullptr;
  int64_t lda = 0;
  GemmOptions options;

  void run() const { gemv_f32(transA, m, n, alpha, a, lda, x, beta, y, options); }
};

constexpr const char* kGemvUsage = "transA, m, n, alpha, a, lda, x, beta, y, options?";

Parsed<GemvCall> parse_gemv(const Napi::CallbackInfo& info, const char* fn, bool async) {
  ArgReader r(info, fn);
  r.expect_count(9, 10, kGemvUsage);
  GemvCall g;
  Napi::Float32Array a_array, x_array, y_array;
  g.transA = r.boolean(0, "transA");
  g.m = r.dim(1, "m");
  g.n = r.dim(2, "n");
  g.alpha = static_cast<float>(r.number(3, "alpha"));
  a_array = r.f32_array(4, "a");
  g.lda = r.dim(5, "lda");
  x_array = r.f32_array(6, "x");
  g.beta = static_cast<float>(r.number(7, "beta"));
  y_array = r.f32_array(8, "y");
  g.options = r.options(9);

  r.check_matrix(a_array, "a", "lda", g.m, g.n, g.lda, "A is stored [m,n]");
  const std::string ta = std::string(" because transA is ") + bool_name(g.transA);
  r.check_vector(x_array, "x", g.transA ? g.m : g.n, (g.transA ? "m" : "n") + ta);
  r.check_vector(y_array, "y", g.transA ? g.n : g.m, (g.transA ? "n" : "m") + ta);
  r.check_disjoint(y_array, "y", a_array, "a");
  r.check_disjoint(y_array, "y", x_array, "x");
  if (async) {
    r.check_fixed_length(a_array, "a");
    r.check_fixed_length(x_array, "x");
    r.check_fixed_length(y_array, "y");
  }
  g.a = a_array.Data();
  g.x = x_array.Data();
  g.y = y_array.Data();
  return {g, {a_array, x_array}, y_array};
}

// Runs call.run() on a libuv worker and settles a promise with the output array. The input and
// output arrays are held by references so the garbage collector cannot free them meanwhile.
template <typename Call>
class KernelWorker : public PromiseWorker {
 public:
  KernelWorker(Napi::Env env, const char* name, const Call& call,
               const std::vector<Napi::Float32Array>& inputs, const Napi::Float32Array& output)
      : PromiseWorker(env, name, code::kInternal), call_(call) {
    for (const auto& array : inputs) refs_.push_back(Napi::Persistent(array.As<Napi::Object>()));
    output_ = Napi::Persistent(output.As<Napi::Object>());
  }

 protected:
  void work() override { call_.run(); }
  Napi::Value result() override { return output_.Value(); }

 private:
  Call call_;
  std::vector<Napi::ObjectReference> refs_;
  Napi::ObjectReference output_;
};

template <typename Call>
void run_sync(const Napi::Env& env, const Call& call) {
  try {
    call.run();
  } catch (const std::exception& e) {
    throw_error(env, ErrorKind::kError, code::kInternal, e.what());
  }
}

template <typename Call>
Napi::Value run_async(const Napi::Env& env, const char* name, Parsed<Call> parsed) {
  auto* worker = new KernelWorker<Call>(env, name, parsed.call, parsed.inputs, parsed.output);
  Napi::Promise promise = worker->promise();
  worker->Queue();  // the worker deletes itself after settling the promise
  return promise;
}

Napi::Value GemmF32(const Napi::CallbackInfo& info) {
  const Parsed<GemmCall> parsed = parse_gemm(info, "gemmF32", false);
  run_sync(info.Env(), parsed.call);
  return parsed.output;
}

Napi::Value GemmF32Async(const Napi::CallbackInfo& info) {
  return run_async(info.Env(), "platform.gemmF32", parse_gemm(info, "gemmF32Async", true));
}

Napi::Value GemvF32(const Napi::CallbackInfo& info) {
  const Parsed<GemvCall> parsed = parse_gemv(info, "gemvF32", false);
  run_sync(info.Env(), parsed.call);
  return parsed.output;
}

Napi::Value GemvF32Async(const Napi::CallbackInfo& info) {
  return run_async(info.Env(), "platform.gemvF32", parse_gemv(info, "gemvF32Async", true));
}

}  // namespace

void register_gemm(Napi::Env env, Napi::Object exports) {
  exports.Set("gemmF32", Napi::Function::New(env, GemmF32, "gemmF32"));
  exports.Set("gemmF32Async", Napi::Function::New(env, GemmF32Async, "gemmF32Async"));
  exports.Set("gemvF32", Napi::Function::New(env, GemvF32, "gemvF32"));
  exports.Set("gemvF32Async", Napi::Function::New(env, GemvF32Async, "gemvF32Async"));
}

}  // namespace platform::addon
