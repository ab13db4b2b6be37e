// libFuzzer target: the bytes as a GGUF file, through everything llmLoadModel does with it before
// serving: GgufFile::open (the bounds-checked reader, on a real mapping: the bytes are written to
// a memfd opened by its /proc path, so the reader runs unchanged), the typed metadata lookups, one
// row of every tensor dequantized, then Model::load (metadata -> ModelConfig, tensor names and
// shapes -> weights) and, when the model loads, the CPU backend bound to its weights with a small
// KV cache and one forward step of two tokens (what the first request of a deployment runs).
// A GgufError or other std::exception is the expected refusal; a crash or a sanitizer report is
// a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "ggml/gguf.h"
#include "ggml/types.h"
#include "llm/backend_factory.h"
#include "llm/model.h"

namespace {

using platform::ggml::GgufFile;

// Keys the engine and the host read (native/llm/model.cc, src/llm/gguf), under both architectures.
const char* const kKeys[] = {
    "general.architecture", "general.name", "general.alignment", "general.file_type",
    "llama.embedding_length", "llama.block_count", "llama.feed_forward_length", "llama.attention.head_count",
    "llama.attention.head_count_kv", "llama.attention.key_length", "llama.attention.value_length",
    "llama.context_length", "llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base",
    "llama.rope.dimension_count", "llama.rope.scaling.type", "qwen2.embedding_length", "qwen2.block_count",
    "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.eot_token_id", "tokenizer.chat_template",
};

int memfd() {
  static const int fd = [] {
    const int f = ::memfd_create("gguf_fuzz", MFD_CLOEXEC);
    if (f < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    return f;
  }();
  return fd;
}

volatile float g_sink;

void read_everything(const GgufFile& f) {
  for (const char* key : kKeys) {
    try {
      (void)f.get_string(key);
    } catch (const std::exception&) {
    }
    try {
      (void)f.get_uint(key);
    } catch (const std::exception&) {
    }
    try {
      (void)f.get_float(key);
    } catch (const std::exception&) {
    }
  }
  std::vector<float> row;
  for (const auto& t : f.tensors()) {
    (void)t.elements();
    (void)platform::ggml::type_name(t.type);
    const int64_t n = std::min<int64_t>(t.dims[0], 1 << 14);
    const platform::ggml::TypeInfo* info = platform::ggml::type_info(static_cast<uint32_t>(t.type));
    if (n % info->block_elems != 0) continue;  // a partial row is not something the engine reads
    row.resize(static_cast<size_t>(n));
    platform::ggml::dequantize_row(t.type, t.data, row.data(), n);
    g_sink = row.empty() ? 0 : row[0];
  }
}

void run_one_step(platform::llm::Model& m) {
  const platform::llm::ModelConfig& c = m.config();
  platform::llm::EngineOptions opt;
  opt.threads = 1;
  opt.max_batch_tokens = 4;
  opt.max_running = 1;
  const int64_t context = 16;
  auto backend = platform::llm::make_backend(opt, context);
  backend->bind(c, m.host_weights());
  platform::llm::KvCacheLayout kv;
  kv.n_layers = c.n_layers;
  kv.kv_dim = c.kv_dim();
  kv.block_size = 16;
  kv.n_blocks = 1;
  backend->allocate_kv(kv);
  const std::vector<int32_t> blocks{0};
  const int32_t tokens[2] = {0, static_cast<int32_t>(std::min<int64_t>(1, c.vocab - 1))};
  platform::llm::BatchEntry e;
  e.tokens = tokens;
  e.n_tokens = 2;
  e.pos0 = 0;
  e.blocks = &blocks;
  m.forward({e}, *backend);
  const float* logits = backend->host_logits();
  float s = 0;
  for (int64_t i = 0; i < c.vocab; ++i) s += logits[i];
  g_sink = s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("PLATFORM_THREADS", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const GgufFile f = GgufFile::open(path);
    read_everything(f);
  } catch (const std::exception&) {
    return 0;
  }
  std::unique_ptr<platform::llm::Model> model;
  try {
    model = platform::llm::Model::load(path);
    (void)model->tensor_types();
  } catch (const std::exception&) {
    return 0;
  }
  // A large model's step only costs time (its matrices are as valid as a small one's): skip it.
  const auto& c = model->config();
  if (c.vocab * c.dim > (int64_t{1} << 22) || c.ffn_dim * c.dim > (int64_t{1} << 22)) return 0;
  try {
    run_one_step(*model);
  } catch (const std::exception&) {
  }
  return 0;
}
