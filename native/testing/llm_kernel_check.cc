// The test-only addon's LLM entry point: one CPU kernel of one SIMD level, run on the test's own
// data, so that test/llm-engine-kernels.test.ts can hold every level's kernels against the scalar
// ones. Built into platform_testing.node only; the shipping platform.node does not export it.
#include "llm_kernel_check.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../addon/args.h"
#include "../backends/cpu/activation_quant.h"
#include "../backends/cpu/matmul.h"
#include "../backends/cpu/quant_kernels.h"
#include "../core/cpu_features.h"
#include "../core/thread_pool.h"
#include "../ggml/types.h"
#include "../ggml/weight_matrix.h"

namespace platform::testing {
namespace {

using addon::ArgReader;

// llmKernelCheck(op, args, simd?): the engine's CPU kernels of one SIMD level on the caller's data:
//   ('matmul', {type, rows, cols, weights: Uint8Array, x: Float32Array, n, threads?, tiles?})
//       -> Float32Array [n][rows]; tiles: false forces one dot per row and token;
//   ('quantize', {format: 'q8a' | 'q8k', x}) -> Uint8Array of activation blocks;
//   ('attend', {q, k, v, nq, hd, len, bs, stride, offset, softcap?}) -> Float32Array [nq][hd]: K and
//       V are [len][stride] with the head at `offset`, cut into blocks of bs positions; softcap > 0
//       caps the scores (gemma2);
//   ('silu', {g, u}) -> Float32Array silu(g) * u; ('gelu', {g, u}) -> gelu(g) * u (tanh form).
Napi::Value KernelCheck(const Napi::CallbackInfo& info) {
  ArgReader r(info, "llmKernelCheck");
  r.expect_count(2, 3, "op, args, simd");
  Napi::Env env = info.Env();
  if (!info[0].IsString()) r.type_error("op must be a string");
  const std::string op = info[0].As<Napi::String>().Utf8Value();
  const Napi::Object a = r.options_object(1);
  SimdLevel level = active_simd_level();
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    const auto parsed = info[2].IsString() ? parse_simd_level(info[2].As<Napi::String>().Utf8Value()) : std::nullopt;
    if (!parsed) r.range_error("simd must be one of scalar, neon, avx2, avx512");
    level = clamp_simd_level(*parsed);
  }
  cpu::QuantKernels k = cpu::select_quant_kernels(level);
  auto f32 = [&](const char* key) {
    const Napi::Value v = a.Get(key);
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      r.type_error(std::string("args.") + key + " must be a Float32Array");
    }
    return v.As<Napi::Float32Array>();
  };
  auto num = [&](const char* key) { return static_cast<int64_t>(r.option(a, {key, 0, 0, 1 << 30, true})); };
  auto check_len = [&](const Napi::Float32Array& arr, const char* key, int64_t n) {
    if (static_cast<int64_t>(arr.ElementLength()) < n) r.range_error(std::string("args.") + key + " is too short");
  };
  if (op == "matmul") {
    const Napi::Value tv = a.Get("type");
    const std::string type = tv.IsString() ? tv.As<Napi::String>().Utf8Value() : "";
    ggml::WeightMatrix w;
    bool found = false;
    for (uint32_t id = 0; id < 256 && !found; ++id) {  // the engine's own type table (ggml/types.h)
      const ggml::TypeInfo* t = ggml::type_info(id);
      if (t != nullptr && type == t->name) {
        w.type = static_cast<ggml::Type>(id);
        found = true;
      }
    }
    if (!found) r.range_error("args.type must be a supported GGML type name");
    w.rows = num("rows");
    w.cols = num("cols");
    const int64_t n = num("n");
    const ggml::TypeInfo* ti = ggml::type_info(static_cast<uint32_t>(w.type));
    if (w.rows < 1 || w.cols < 1 || n < 1 || w.cols % ti->block_elems != 0) r.range_error("bad rows, cols or n");
    w.row_bytes = ggml::row_bytes(w.type, w.cols);
    const Napi::Value wv = a.Get("weights");
    if (!wv.IsTypedArray() || wv.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
      r.type_error("args.weights must be a Uint8Array");
    }
    const Napi::Uint8Array wa = wv.As<Napi::Uint8Array>();
    if (static_cast<int64_t>(wa.ByteLength()) < w.rows * w.row_bytes) r.range_error("args.weights is too short");
    std::vector<uint8_t> wcopy(wa.Data(), wa.Data() + w.rows * w.row_bytes);
    w.data = wcopy.data();
    const Napi::Float32Array x = f32("x");
    check_len(x, "x", n * w.cols);
    const Napi::Value tiles = a.Get("tiles");
    if (tiles.IsBoolean() && !tiles.As<Napi::Boolean>().Value()) {
      k.gemm_q8_0 = nullptr;
      k.gemm_q4_k = nullptr;
      k.gemm_q5_k = nullptr;
      k.gemm_q6_k = nullptr;
    }
    cpu::MatmulContext ctx(resolve_thread_count(static_cast<int>(num("threads"))), level);
    ctx.kernels = &k;
    std::vector<float> y(static_cast<size_t>(n * w.rows));
    cpu::matmul(w, x.Data(), n, y.data(), ctx);
    Napi::Float32Array out = Napi::Float32Array::New(env, y.size());
    std::copy(y.begin(), y.end(), out.Data());
    return out;
  }
  if (op == "quantize") {
    const Napi::Value fv = a.Get("format");
    const bool kq = fv.IsString() && fv.As<Napi::String>().Utf8Value() == "q8k";
    const Napi::Float32Array x = f32("x");
    const int64_t n = static_cast<int64_t>(x.ElementLength()), blk = kq ? ggml::kQK_K : ggml::kQK;
    if (n % blk != 0) r.range_error("args.x length must be a multiple of the block size");
    const size_t bytes = static_cast<size_t>(n / blk) * (kq ? sizeof(cpu::BlockQ8_K) : sizeof(cpu::BlockQ8A));
    std::vector<float> buf_blocks((bytes + 3) / 4);  // float-aligned storage for the blocks
    if (kq) {
      k.quantize_q8_k(x.Data(), reinterpret_cast<cpu::BlockQ8_K*>(buf_blocks.data()), n);
    } else {
      k.quantize_q8a(x.Data(), reinterpret_cast<cpu::BlockQ8A*>(buf_blocks.data()), n);
    }
    Napi::Uint8Array out = Napi::Uint8Array::New(env, bytes);
    std::memcpy(out.Data(), buf_blocks.data(), bytes);
    return out;
  }
  if (op == "attend") {
    const int64_t nq = num("nq"), hd = num("hd"), len = num("len"), bs = num("bs"), stride = num("stride"),
                  offset = num("offset");
    if (nq < 1 || hd < 1 || len < 1 || bs < 1 || offset + hd > stride) r.range_error("bad attend sizes");
    const Napi::Float32Array q = f32("q"), kk = f32("k"), v = f32("v");
    check_len(q, "q", nq * hd);
    const int64_t nblk = (len + bs - 1) / bs;
    check_len(kk, "k", nblk * bs * stride);
    check_len(v, "v", nblk * bs * stride);
    std::vector<const float*> kb(static_cast<size_t>(nblk)), vb(static_cast<size_t>(nblk));
    for (int64_t b = 0; b < nblk; ++b) {
      kb[b] = kk.Data() + b * bs * stride + offset;
      vb[b] = v.Data() + b * bs * stride + offset;
    }
    std::vector<float> scratch(static_cast<size_t>(nq * len));
    Napi::Float32Array out = Napi::Float32Array::New(env, static_cast<size_t>(nq * hd));
    const float softcap = static_cast<float>(r.option(a, {"softcap", 0, 0, 1e6, false}));
    k.attend(len, bs, stride, kb.data(), vb.data(), q.Data(), nq, hd, 1.0f / std::sqrt(static_cast<float>(hd)),
             softcap, scratch.data(), out.Data());
    return out;
  }
  if (op == "silu" || op == "gelu") {
    const Napi::Float32Array g = f32("g"), u = f32("u");
    check_len(u, "u", static_cast<int64_t>(g.ElementLength()));
    Napi::Float32Array out = Napi::Float32Array::New(env, g.ElementLength());
    std::copy(g.Data(), g.Data() + g.ElementLength(), out.Data());
    (op == "silu" ? k.silu_mul : k.gelu_mul)(out.Data(), u.Data(), static_cast<int64_t>(g.ElementLength()));
    return out;
  }
  r.range_error("op must be one of matmul, quantize, attend, silu, gelu");
}

}  // namespace

void register_llm_kernel_check(Napi::Env env, Napi::Object exports) {
  exports.Set("llmKernelCheck", Napi::Function::New(env, KernelCheck, "llmKernelCheck"));
}

}  // namespace platform::testing
