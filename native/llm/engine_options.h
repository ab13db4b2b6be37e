// The options an Engine is created with (the addon's llmLoadModel options, the bench's flags). The
// engine hands each backend only what it needs (llm/backend_factory.cc) and sizes the KV cache
// from them (kv_budget_blocks in kv_cache.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "../core/cpu_features.h"

namespace platform::llm {

struct EngineOptions {
  std::string backend = "cpu";     // "cpu" or "cuda" (device 0; needs the CUDA build)
  int threads = 0;                 // <= 0: default_thread_count()
  int64_t context_length = 0;      // <= 0: the model's training context
  int64_t kv_cache_bytes = 0;      // <= 0: room for max_running full contexts within 1 GiB, but
                                   // never less than one full context (up to 4 GiB)
  int32_t max_running = 8;         // sequences decoded together
  int32_t max_queued = 64;         // sequences waiting for admission
  int32_t block_size = 16;         // positions per KV block
  int32_t max_batch_tokens = 256;  // tokens per forward step (decode tokens + prefill chunks)
  bool prefix_cache = true;        // reuse the KV of cached prompt prefixes (kv_cache.h)
  int32_t speculative_tokens = 0;  // prompt-lookup drafts verified per decoding step (0: none; prompt_lookup.h)
  std::string draft_model;          // a GGUF of the same vocabulary whose greedy decoding drafts,
                                    // instead of prompt lookup (draft_model.h)
  bool speculative_adaptive = true;  // draft only as many as the measured step costs repay (step_cost.h);
                                     // false: every proposal, at full length (tests, benches)
  std::optional<SimdLevel> simd;   // kernels at or below this level (default: the process level)
};

}  // namespace platform::llm
