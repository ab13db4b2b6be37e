// platform-make-gguf: writes a synthetic GGUF with the real shape of a model and random weights,
// for the benchmarks (bench/cuda/run-on-device.sh) and quick checks of the tools.
//
//   platform-make-gguf --shape llama3-8b|tiny --type q8_0|f16|q4_k|q6_k|q4_0 --out FILE
//                      [--layers N] [--seed N] [--threads N]
//
// Shapes: llama3-8b = Llama 3 8B (dim 4096, 32 layers, 32 heads, 8 KV heads, FFN 14336, vocab
// 128256, context 8192, rope base 500000); tiny = dim 256, 4 layers, 8 heads, 4 KV heads, FFN 768,
// vocab 4096, context 2048, rope base 10000. --layers overrides the layer count.
//
// The weights are random *blocks* written directly in the GGML block layout (random quants, an f16
// scale chosen so that every matrix has a standard deviation of about 1/sqrt(dim)), as
// bench/llm-model.ts does: quantizing billions of floats would take minutes, this takes as long as
// the disk needs (the F16 8B file is ~16 GB). Every row is generated from its own seed
// (seed, tensor, row), so the file does not depend on the thread count. Norm weights are 1.
// The tokenizer is a synthetic SentencePiece-style vocabulary of the shape's size (as
// bench/llm-model.ts synthesises it): <unk>, <s>, </s>, the 256 byte tokens <0xNN>, then
// "\u2581t<i>"; tokenizer.ggml.model = "llama", BOS 1, EOS 2, UNK 0, so the TypeScript host can load
// it. The output row of EOS is all zero: its logit is 0 while the maximum of the other random
// logits is positive, so greedy decoding never stops early.
//
// The file is written to FILE.tmp and renamed when complete.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Shape {
  const char* name;
  int64_t dim, layers, heads, kv_heads, ffn, vocab, context;
  double rope_base;
};

const Shape kShapes[] = {
    {"llama3-8b", 4096, 32, 32, 8, 14336, 128256, 8192, 500000.0},
    {"tiny", 256, 4, 8, 4, 768, 4096, 2048, 10000.0},
};

struct WType {
  const char* name;
  uint32_t ggml_type;
  uint32_t file_type;  // general.file_type (llama_ftype)
  int64_t block_elems, block_bytes;
};

const WType kTypes[] = {
    {"q8_0", 8, 7, 32, 34},   {"f16", 1, 1, 1, 2},       {"q4_k", 12, 15, 256, 144},
    {"q6_k", 14, 18, 256, 210}, {"q4_0", 2, 2, 32, 18},
};
const WType kF32 = {"f32", 0, 0, 1, 4};

constexpr int32_t kEos = 2;

// --- fast deterministic random bits ----------------------------------------------------------
inline uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void random_bytes(uint8_t* p, size_t n, uint64_t& s) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t r = splitmix64(s);
    std::memcpy(p + i, &r, 8);
  }
  if (i < n) {
    const uint64_t r = splitmix64(s);
    std::memcpy(p + i, &r, n - i);
  }
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) {  // subnormal or zero (round to nearest)
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    if ((mant >> (shift - 1)) & 1u) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  if (mant & 0x1000u) ++h;  // round half up (good enough for synthetic weights)
  return static_cast<uint16_t>(sign | h);
}

// --- GGUF header writer ------------------------------------------------------------------------
class Bytes {
 public:
  std::vector<uint8_t> b;
  void raw(const void* p, size_t n) { b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  // key/value pairs (GGUF value types: u32 4, i32 5, f32 6, string 8, array 9)
  void kv_u32(const std::string& k, uint32_t v) { str(k); u32(4); u32(v); }
  void kv_f32(const std::string& k, float v) { str(k); u32(6); f32(v); }
  void kv_str(const std::string& k, const std::string& v) { str(k); u32(8); str(v); }
};

struct Tensor {
  std::string name;
  std::vector<int64_t> dims;  // dims[0] contiguous
  const WType* type;
  int64_t zero_row = -1;
  bool ones = false;  // norm weights
  uint64_t offset = 0;
  int64_t rows() const {
    int64_t r = 1;
    for (size_t i = 1; i < dims.size(); ++i) r *= dims[i];
    return r;
  }
  int64_t row_bytes() const { return dims[0] / type->block_elems * type->block_bytes; }
  uint64_t bytes() const { return static_cast<uint64_t>(rows()) * row_bytes(); }
};

struct Scales {
  uint16_t q8_0_d, q4_0_d, q4_k_d, q4_k_dmin, q6_k_d;
  std::vector<uint16_t> f16_table;  // 65536 f16 values uniform in [-a, a], std = target
};

Scales make_scales(double std_target) {
  Scales s;
  // Q8_0: q uniform in [-127, 127] -> std 127/sqrt(3) = 73.3.
  s.q8_0_d = f32_to_f16(static_cast<float>(std_target / 73.3));
  // Q4_0: q - 8 with q uniform in 0..15 -> std sqrt(255/12) = 4.61.
  s.q4_0_d = f32_to_f16(static_cast<float>(std_target / 4.61));
  // Q4_K: d*sc*q - dmin*m, sc, m uniform 6-bit, q 4-bit; dmin = 7.5 d centres it: std 258 d.
  s.q4_k_d = f32_to_f16(static_cast<float>(std_target / 258.0));
  s.q4_k_dmin = f32_to_f16(static_cast<float>(7.5 * std_target / 258.0));
  // Q6_K: d*sc*(q - 32), sc uniform int8 (E[sc^2] ~ 5461), q uniform 6-bit (E[(q-32)^2] = 341.5):
  // std ~ 1366 d.
  s.q6_k_d = f32_to_f16(static_cast<float>(std_target / 1366.0));
  // F16: uniform in [-a, a] with a = sqrt(3) std.
  s.f16_table.resize(65536);
  const double a = std::sqrt(3.0) * std_target;
  for (int i = 0; i < 65536; ++i) s.f16_table[i] = f32_to_f16(static_cast<float>(a * (2.0 * (i + 0.5) / 65536.0 - 1.0)));
  return s;
}

void fill_row(const Tensor& t, const Scales& sc, uint8_t* out, uint64_t seed) {
  const int64_t n = t.row_bytes();
  if (t.type->ggml_type == 0) {  // F32: norms
    const float one = 1.0f;
    for (int64_t i = 0; i < n / 4; ++i) std::memcpy(out + 4 * i, &one, 4);
    return;
  }
  uint64_t s = seed;
  if (t.type->ggml_type == 1) {  // F16 from the table, 4 values per 64 random bits
    const int64_t elems = n / 2;
    int64_t i = 0;
    for (; i + 4 <= elems; i += 4) {
      const uint64_t r = splitmix64(s);
      for (int k = 0; k < 4; ++k) {
        const uint16_t h = sc.f16_table[(r >> (16 * k)) & 0xffff];
        std::memcpy(out + 2 * (i + k), &h, 2);
      }
    }
    for (; i < elems; ++i) {
      const uint16_t h = sc.f16_table[splitmix64(s) & 0xffff];
      std::memcpy(out + 2 * i, &h, 2);
    }
    return;
  }
  random_bytes(out, static_cast<size_t>(n), s);
  const int64_t bb = t.type->block_bytes, nb = n / bb;
  switch (t.type->ggml_type) {
    case 8:  // Q8_0: d, qs[32]; -128 -> -127 (symmetric)
      for (int64_t b = 0; b < nb; ++b) {
        uint8_t* p = out + b * bb;
        std::memcpy(p, &sc.q8_0_d, 2);
        for (int i = 2; i < 34; ++i) if (p[i] == 0x80) p[i] = 0x81;
      }
      break;
    case 2:  // Q4_0: d, qs[16]
      for (int64_t b = 0; b < nb; ++b) std::memcpy(out + b * bb, &sc.q4_0_d, 2);
      break;
    case 12:  // Q4_K: d, dmin, scales[12], qs[128]
      for (int64_t b = 0; b < nb; ++b) {
        std::memcpy(out + b * bb, &sc.q4_k_d, 2);
        std::memcpy(out + b * bb + 2, &sc.q4_k_dmin, 2);
      }
      break;
    case 14:  // Q6_K: ql[128], qh[64], scales[16], d
      for (int64_t b = 0; b < nb; ++b) std::memcpy(out + b * bb + 208, &sc.q6_k_d, 2);
      break;
    default:
      throw std::runtime_error("unsupported type");
  }
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: platform-make-gguf --shape llama3-8b|tiny --type q8_0|f16|q4_k|q6_k|q4_0 --out FILE\n"
               "                          [--layers N] [--seed N] [--threads N]\n",
               msg);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string shape_name = "tiny", type_name = "q8_0", out;
  int64_t layers_override = 0;
  uint64_t seed = 1234;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--shape") shape_name = next();
    else if (a == "--type") type_name = next();
    else if (a == "--out") out = next();
    else if (a == "--layers") layers_override = std::stoll(next());
    else if (a == "--seed") seed = std::stoull(next());
    else if (a == "--threads") threads = std::max(1, std::stoi(next()));
    else if (a == "-h" || a == "--help") usage("");
    else usage(("unknown argument " + a).c_str());
  }
  if (out.empty()) usage("--out is required");
  const Shape* shape = nullptr;
  for (const Shape& s : kShapes) if (shape_name == s.name) shape = &s;
  if (!shape) usage(("unknown shape " + shape_name).c_str());
  const WType* wt = nullptr;
  for (const WType& t : kTypes) if (type_name == t.name) wt = &t;
  if (!wt) usage(("unknown type " + type_name).c_str());
  Shape sh = *shape;
  if (layers_override > 0) sh.layers = layers_override;
  const int64_t head_dim = sh.dim / sh.heads, kv_dim = head_dim * sh.kv_heads;
  if (sh.dim % wt->block_elems || sh.ffn % wt->block_elems) usage("the shape's dims are not multiples of the type's block");

  const auto t0 = std::chrono::steady_clock::now();
  // --- tensors (the order llama.cpp's converters use) ---
  std::vector<Tensor> tensors;
  tensors.push_back({"token_embd.weight", {sh.dim, sh.vocab}, wt});
  for (int64_t l = 0; l < sh.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    tensors.push_back({p + "attn_norm.weight", {sh.dim}, &kF32, -1, true});
    tensors.push_back({p + "attn_q.weight", {sh.dim, sh.dim}, wt});
    tensors.push_back({p + "attn_k.weight", {sh.dim, kv_dim}, wt});
    tensors.push_back({p + "attn_v.weight", {sh.dim, kv_dim}, wt});
    tensors.push_back({p + "attn_output.weight", {sh.dim, sh.dim}, wt});
    tensors.push_back({p + "ffn_norm.weight", {sh.dim}, &kF32, -1, true});
    tensors.push_back({p + "ffn_gate.weight", {sh.dim, sh.ffn}, wt});
    tensors.push_back({p + "ffn_up.weight", {sh.dim, sh.ffn}, wt});
    tensors.push_back({p + "ffn_down.weight", {sh.ffn, sh.dim}, wt});
  }
  tensors.push_back({"output_norm.weight", {sh.dim}, &kF32, -1, true});
  tensors.push_back({"output.weight", {sh.dim, sh.vocab}, wt, kEos});

  // --- header ---
  Bytes h;
  h.u32(0x46554747u);  // "GGUF"
  h.u32(3);
  h.u64(tensors.size());
  const uint64_t n_kv = 20;
  h.u64(n_kv);
  const std::string arch = "llama";
  h.kv_str("general.architecture", arch);
  h.kv_str("general.name", std::string(sh.name) + "-shaped random " + wt->name);
  h.kv_u32("general.file_type", wt->file_type);
  h.kv_u32("general.alignment", 32);
  h.kv_u32("llama.context_length", static_cast<uint32_t>(sh.context));
  h.kv_u32("llama.embedding_length", static_cast<uint32_t>(sh.dim));
  h.kv_u32("llama.block_count", static_cast<uint32_t>(sh.layers));
  h.kv_u32("llama.feed_forward_length", static_cast<uint32_t>(sh.ffn));
  h.kv_u32("llama.rope.dimension_count", static_cast<uint32_t>(head_dim));
  h.kv_u32("llama.attention.head_count", static_cast<uint32_t>(sh.heads));
  h.kv_u32("llama.attention.head_count_kv", static_cast<uint32_t>(sh.kv_heads));
  h.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  h.kv_f32("llama.rope.freq_base", static_cast<float>(sh.rope_base));
  h.kv_str("tokenizer.ggml.model", "llama");
  {  // tokens
    h.str("tokenizer.ggml.tokens");
    h.u32(9);
    h.u32(8);
    h.u64(static_cast<uint64_t>(sh.vocab));
    const char* first[] = {"<unk>", "<s>", "</s>"};
    for (int64_t i = 0; i < sh.vocab; ++i) {
      if (i < 3) {
        h.str(first[i]);
      } else if (i < 3 + 256) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "<0x%02X>", static_cast<unsigned>(i - 3));
        h.str(buf);
      } else {
        h.str("\xE2\x96\x81t" + std::to_string(i));  // U+2581 + "t<i>"
      }
    }
    h.str("tokenizer.ggml.scores");
    h.u32(9);
    h.u32(6);
    h.u64(static_cast<uint64_t>(sh.vocab));
    for (int64_t i = 0; i < sh.vocab; ++i) h.f32(static_cast<float>(-i));
    h.str("tokenizer.ggml.token_type");
    h.u32(9);
    h.u32(5);
    h.u64(static_cast<uint64_t>(sh.vocab));
    for (int64_t i = 0; i < sh.vocab; ++i) h.i32(i == 0 ? 2 : i < 3 ? 3 : i < 3 + 256 ? 6 : 1);
  }
  h.kv_u32("tokenizer.ggml.bos_token_id", 1);
  h.kv_u32("tokenizer.ggml.eos_token_id", kEos);
  h.kv_u32("tokenizer.ggml.unknown_token_id", 0);
  uint64_t offset = 0;
  for (Tensor& t : tensors) {
    h.str(t.name);
    h.u32(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) h.u64(static_cast<uint64_t>(d));
    h.u32(t.type->ggml_type);
    h.u64(offset);
    t.offset = offset;
    offset += (t.bytes() + 31) / 32 * 32;
  }
  while (h.b.size() % 32) h.b.push_back(0);
  const uint64_t total = h.b.size() + offset;

  const std::string tmp = out + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    std::perror(("cannot write " + tmp).c_str());
    return 1;
  }
  auto write = [&](const uint8_t* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) throw std::runtime_error("write failed (disk full?)");
  };
  int rc = 0;
  try {
    write(h.b.data(), h.b.size());
    const Scales sc = make_scales(1.0 / std::sqrt(static_cast<double>(sh.dim)));
    // Chunks of whole rows (~64 MiB), generated by all threads while the previous one is written.
    constexpr size_t kChunk = size_t{64} << 20;
    std::vector<uint8_t> bufs[2] = {std::vector<uint8_t>(kChunk), std::vector<uint8_t>(kChunk)};
    int cur = 0;
    std::future<void> pending;
    uint64_t written = h.b.size();
    for (size_t ti = 0; ti < tensors.size(); ++ti) {
      const Tensor& t = tensors[ti];
      const int64_t rows = t.rows(), rb = t.row_bytes();
      const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(kChunk) / rb);
      if (static_cast<size_t>(rb) > kChunk) throw std::runtime_error("row larger than a chunk");
      for (int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
        const int64_t nr = std::min(rows_per_chunk, rows - r0);
        uint8_t* buf = bufs[cur].data();
        std::atomic<int64_t> next{0};
        auto work = [&]() {
          for (;;) {
            const int64_t r = next.fetch_add(16);
            if (r >= nr) return;
            for (int64_t k = r; k < std::min(nr, r + 16); ++k) {
              uint64_t s = seed ^ (0x9e3779b97f4a7c15ull * (ti + 1)) ^ (0xd1b54a32d192ed03ull * static_cast<uint64_t>(r0 + k + 1));
              splitmix64(s);
              fill_row(t, sc, buf + k * rb, s);
              if (r0 + k == t.zero_row) std::memset(buf + k * rb, 0, static_cast<size_t>(rb));
            }
          }
        };
        std::vector<std::thread> pool;
        const int nt = nr >= 64 ? threads : 1;
        for (int i = 1; i < nt; ++i) pool.emplace_back(work);
        work();
        for (auto& th : pool) th.join();
        if (pending.valid()) pending.get();
        const size_t n = static_cast<size_t>(nr * rb);
        pending = std::async(std::launch::async, [&write, buf, n] { write(buf, n); });
        written += n;
        cur ^= 1;
      }
      if (pending.valid()) pending.get();
      const uint64_t pad = (t.bytes() + 31) / 32 * 32 - t.bytes();
      static const uint8_t zeros[32] = {};
      write(zeros, pad);
      written += pad;
    }
    if (pending.valid()) pending.get();
    if (written != total) throw std::runtime_error("internal error: size mismatch");
    if (std::fclose(f) != 0) throw std::runtime_error("close failed");
    f = nullptr;
    if (std::rename(tmp.c_str(), out.c_str()) != 0) throw std::runtime_error("rename failed");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "platform-make-gguf: %s\n", e.what());
    if (f) std::fclose(f);
    std::remove(tmp.c_str());
    rc = 1;
  }
  if (rc == 0) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("wrote %s: %s shape (dim %lld, %lld layers, %lld/%lld heads, ffn %lld, vocab %lld), %s weights, "
                "%.3f GB in %.1f s\n",
                out.c_str(), sh.name, static_cast<long long>(sh.dim), static_cast<long long>(sh.layers),
                static_cast<long long>(sh.heads), static_cast<long long>(sh.kv_heads), static_cast<long long>(sh.ffn),
                static_cast<long long>(sh.vocab), wt->name, static_cast<double>(total) / 1e9, s);
  }
  return rc;
}
