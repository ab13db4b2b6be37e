// platform-llm-bench: throughput and latency of the native LLM engine (llm::Engine, continuous
// batching) on one GGUF file, in-process (no Node, no HTTP), on the CPU or the CUDA backend.
//
//   platform-llm-bench --model FILE [--backend cpu|cuda] [--prompt 512] [--gen 128]
//                      [--batches 1,16,64,256] [--batch-prompt 16] [--repeats 3]
//                      [--context N] [--kv-bytes N] [--batch-tokens N] [--threads N] [--json OUT]
//   platform-llm-bench --model FILE --compare [--compare-prompt 8] [--compare-gen 32]
//                      [--logit-tol 0.03] [--expect stories260k-greedy.json] [--json OUT]
//                      [--compare-backends cpu,cuda]   (cpu,cpu checks the harness without a GPU)
//
// Bench mode measures (after a short warm-up request):
//   prefill   one prompt of --prompt random tokens, max_tokens 1: TTFT = submit -> first token
//             event; prefill tok/s = prompt / TTFT (median of --repeats runs);
//   decode    for each B in --batches: B sequences submitted together (prompts of --batch-prompt
//             random tokens, --gen tokens each, greedy). The steady window starts at the step in
//             which the last sequence got its first token and ends at the step in which the first
//             sequence got its last token (all B decoding throughout); aggregate tok/s = tokens
//             generated inside the window / its length, TPOT = window / steps. B = 1 gives the
//             batch-1 decode rate.
// It prints the weight bytes read per decode step (every matrix of every layer once, plus the
// output matrix and one embedding row) and, on cuda, the device's copy bandwidth (bandwidth.h)
// and the fraction of the bandwidth bound that batch-1 decode reaches:
//   fraction = (bytes per token / bandwidth) / (measured time per token).
//
// Compare mode runs the same requests on the CPU and the CUDA backends (two engines, one after
// the other): the logits of every position of a --compare-prompt token prompt (max |cuda - cpu|
// over the rms of the CPU logits must be <= --logit-tol, and the argmax should agree), and greedy
// decoding of --compare-gen tokens from BOS (token ids must be equal; with --expect, the CPU's
// tokens are also checked against a recorded llama.cpp run such as test/data/stories260k-greedy.json).
// Exit status 1 when a check fails.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "llm/engine.h"
#include "llm/model.h"

#ifdef PLATFORM_WITH_CUDA
#include "cuda/bandwidth.h"
#endif

namespace llm = platform::llm;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string model, backend = "cpu", json;
  int64_t prompt = 512, gen = 128, batch_prompt = 16, repeats = 3;
  std::vector<int64_t> batches = {1, 16, 64, 256};
  int64_t context = 0, kv_bytes = 0, batch_tokens = 0;
  int threads = 0;
  bool compare = false;
  int64_t compare_prompt = 8, compare_gen = 32;
  double logit_tol = 0.03;
  std::string expect;
  std::string ref_backend = "cpu", test_backend = "cuda";  // --compare-backends REF,TEST
  int64_t bandwidth_mib = 2048;
};

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr,
               "%s\nusage: platform-llm-bench --model FILE [--backend cpu|cuda] [--prompt 512] [--gen 128]\n"
               "         [--batches 1,16,64,256] [--batch-prompt 16] [--repeats 3] [--context N] [--kv-bytes N]\n"
               "         [--batch-tokens N] [--threads N] [--bandwidth-mib 2048] [--json OUT]\n"
               "       platform-llm-bench --model FILE --compare [--compare-prompt 8] [--compare-gen 32]\n"
               "         [--logit-tol 0.03] [--expect FILE.json] [--compare-backends cpu,cuda] [--threads N] [--json OUT]\n",
               msg.c_str());
  std::exit(2);
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) v.push_back(std::stoll(item));
  }
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value after " + k);
      return argv[++i];
    };
    try {
      if (k == "--model") a.model = next();
      else if (k == "--backend") a.backend = next();
      else if (k == "--prompt") a.prompt = std::stoll(next());
      else if (k == "--gen") a.gen = std::stoll(next());
      else if (k == "--batches") a.batches = parse_list(next());
      else if (k == "--batch-prompt") a.batch_prompt = std::stoll(next());
      else if (k == "--repeats") a.repeats = std::stoll(next());
      else if (k == "--context") a.context = std::stoll(next());
      else if (k == "--kv-bytes") a.kv_bytes = std::stoll(next());
      else if (k == "--batch-tokens") a.batch_tokens = std::stoll(next());
      else if (k == "--threads") a.threads = std::stoi(next());
      else if (k == "--json") a.json = next();
      else if (k == "--compare") a.compare = true;
      else if (k == "--compare-prompt") a.compare_prompt = std::stoll(next());
      else if (k == "--compare-gen") a.compare_gen = std::stoll(next());
      else if (k == "--logit-tol") a.logit_tol = std::stod(next());
      else if (k == "--expect") a.expect = next();
      else if (k == "--compare-backends") {
        const std::string v = next();
        const size_t comma = v.find(',');
        if (comma == std::string::npos) usage("--compare-backends takes REF,TEST (e.g. cpu,cuda)");
        a.ref_backend = v.substr(0, comma);
        a.test_backend = v.substr(comma + 1);
      }
      else if (k == "--bandwidth-mib") a.bandwidth_mib = std::stoll(next());
      else if (k == "-h" || k == "--help") usage("");
      else usage("unknown argument " + k);
    } catch (const std::logic_error&) {
      usage("bad value for " + k);
    }
  }
  if (a.model.empty()) usage("--model is required");
  if (a.backend != "cpu" && a.backend != "cuda") usage("--backend must be cpu or cuda");
  if (a.prompt < 1 || a.gen < 2 || a.batch_prompt < 1 || a.repeats < 1 || a.batches.empty()) usage("bad sizes");
  for (int64_t b : a.batches) if (b < 1) usage("batch sizes must be positive");
  return a;
}

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// --- an engine whose events are collected with their arrival time ------------------------------
struct Collected {
  Clock::time_point at;
  llm::Event ev;
};

class Runner {
 public:
  Runner(std::unique_ptr<llm::Model> model, const llm::EngineOptions& opt)
      : engine_(std::move(model), opt, [this](std::vector<llm::Event>&& evs) { on_events(std::move(evs)); }) {}

  struct Seq {
    Clock::time_point submitted;
    std::vector<Clock::time_point> token_times;
    std::vector<int32_t> tokens;
    bool done = false;
    llm::Event done_event;
  };

  // Submits every request at once and waits until all are done.
  std::vector<Seq> run(std::vector<llm::GenerateRequest> reqs) {
    std::vector<uint64_t> ids;
    {
      std::unique_lock<std::mutex> lock(mu_);
      seqs_.clear();
    }
    for (auto& r : reqs) {
      const auto t = Clock::now();
      const uint64_t id = engine_.submit(std::move(r));
      std::unique_lock<std::mutex> lock(mu_);
      seqs_[id].submitted = t;
      ids.push_back(id);
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      for (uint64_t id : ids) if (!seqs_[id].done) return false;
      return true;
    });
    std::vector<Seq> out;
    for (uint64_t id : ids) out.push_back(std::move(seqs_[id]));
    seqs_.clear();
    return out;
  }
  llm::Engine& engine() { return engine_; }

 private:
  void on_events(std::vector<llm::Event>&& evs) {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : evs) {
      Seq& s = seqs_[e.id];
      if (e.type == llm::Event::Type::kToken) {
        s.token_times.push_back(now);
        s.tokens.push_back(e.token);
      } else {
        s.done = true;
        s.done_event = std::move(e);
      }
    }
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, Seq> seqs_;
  llm::Engine engine_;  // last: its thread stops (destructor) before the maps go
};

void check_done(const std::vector<Runner::Seq>& seqs, const char* what) {
  for (const auto& s : seqs) {
    if (s.done_event.reason == llm::FinishReason::kError || s.done_event.reason == llm::FinishReason::kCancelled) {
      throw std::runtime_error(std::string(what) + ": a request finished with '" +
                               llm::finish_reason_name(s.done_event.reason) + "': " + s.done_event.error);
    }
  }
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int64_t n, int64_t vocab) {
  std::uniform_int_distribution<int32_t> d(3, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Weight bytes one decode step reads: every matrix once, the output matrix, one embedding row.
struct ByteCount {
  double weights_per_token = 0;  // bytes
  double kv_per_position = 0;    // f16 K and V of one position, all layers (attention reads these)
  double total_file = 0;
};

ByteCount count_bytes(const llm::Model& m) {
  ByteCount b;
  const auto& c = m.config();
  const auto& f = m.file();
  for (const auto& t : f.tensors()) {
    b.total_file += static_cast<double>(t.bytes);
    if (t.name == "token_embd.weight") {
      b.weights_per_token += static_cast<double>(t.bytes) / static_cast<double>(c.vocab);  // one row
      if (c.tied_output) b.weights_per_token += static_cast<double>(t.bytes);
    } else {
      b.weights_per_token += static_cast<double>(t.bytes);  // matrices, norms, biases, output
    }
  }
  b.kv_per_position = 2.0 * 2.0 * static_cast<double>(c.n_layers * c.kv_dim());
  return b;
}

// Bytes as GB (1e9) or, below 1 GB, MB (1e6).
std::string fmt_bytes(double b) {
  char buf[64];
  if (b >= 1e9) std::snprintf(buf, sizeof buf, "%.3f GB", b / 1e9);
  else std::snprintf(buf, sizeof buf, "%.3f MB", b / 1e6);
  return buf;
}

struct BatchResult {
  int64_t batch = 0;
  double tok_s = 0, tpot_ms = 0, ttft_ms = 0, window_s = 0;
  int64_t tokens = 0, steps = 0;
};

llm::EngineOptions engine_options(const Args& a, const llm::Model& m, const std::string& backend, int64_t max_batch,
                                  int64_t longest, int64_t blocks_needed) {
  llm::EngineOptions o;
  o.backend = backend;
  o.threads = a.threads;
  o.max_running = static_cast<int32_t>(max_batch);
  o.max_queued = static_cast<int32_t>(max_batch + 16);
  o.block_size = 16;
  o.context_length = a.context > 0 ? a.context : std::max<int64_t>(longest + 16, 256);
  o.max_batch_tokens =
      static_cast<int32_t>(a.batch_tokens > 0 ? a.batch_tokens : std::max<int64_t>(a.prompt, 512) + max_batch);
  const auto& c = m.config();
  // Room for every sequence: the CPU cache stores f32, the CUDA one f16.
  const int64_t element_bytes = backend == "cuda" ? 2 : 4;
  const llm::KvCacheLayout kv{c.n_layers, c.kv_dim(), o.block_size, 0};
  o.kv_cache_bytes = a.kv_bytes > 0 ? a.kv_bytes
                                    : static_cast<int64_t>(static_cast<double>(blocks_needed) * 1.05 + 4) *
                                          kv.block_bytes(element_bytes);
  return o;
}

// --- JSON (flat, hand-written) ------------------------------------------------------------------
struct Json {
  std::ostringstream s;
  bool first = true;
  void key(const std::string& k) {
    s << (first ? "" : ",\n") << "  \"" << k << "\": ";
    first = false;
  }
  void num(const std::string& k, double v) {
    key(k);
    if (std::isfinite(v)) s << v; else s << "null";
  }
  void str(const std::string& k, const std::string& v) {
    key(k);
    s << '"';
    for (char ch : v) {
      if (ch == '"' || ch == '\\') s << '\\' << ch;
      else if (static_cast<unsigned char>(ch) < 0x20) s << ' ';
      else s << ch;
    }
    s << '"';
  }
  void raw(const std::string& k, const std::string& v) {
    key(k);
    s << v;
  }
  std::string done() { return "{\n" + s.str() + "\n}\n"; }
  Json() { s.precision(9); }
};

void write_json(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  std::ofstream f(path);
  f << text;
  if (!f) std::fprintf(stderr, "cannot write %s\n", path.c_str());
  else std::printf("JSON: %s\n", path.c_str());
}

void print_config(const llm::Model& m) {
  const auto& c = m.config();
  std::printf("model: %s, dim %lld, %lld layers, %lld heads (%lld kv, head_dim %lld), ffn %lld, vocab %lld, rope base %g\n",
              c.architecture.c_str(), static_cast<long long>(c.dim), static_cast<long long>(c.n_layers),
              static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.head_dim),
              static_cast<long long>(c.ffn_dim), static_cast<long long>(c.vocab), static_cast<double>(c.rope_base));
  std::printf("tensor types:");
  for (const auto& [k, v] : m.tensor_types()) std::printf(" %s x%lld", k.c_str(), static_cast<long long>(v));
  std::printf("\n");
}

// =================================================================================================
int bench(const Args& a) {
  const auto t_load = Clock::now();
  auto model = llm::Model::load(a.model);
  const double load_s = secs(t_load, Clock::now());
  print_config(*model);
  const ByteCount bytes = count_bytes(*model);
  const auto cfg = model->config();
  std::printf("load: %.2f s; weight bytes read per decode token: %s (file %s); KV cache (f16) per attended position: %s\n",
              load_s, fmt_bytes(bytes.weights_per_token).c_str(), fmt_bytes(bytes.total_file).c_str(),
              fmt_bytes(bytes.kv_per_position).c_str());

  Json j;
  j.str("model", a.model);
  j.str("backend", a.backend);
  j.num("weight_bytes_per_token", bytes.weights_per_token);
  j.num("kv_bytes_per_position_f16", bytes.kv_per_position);
  j.num("load_s", load_s);

  double bw_rw = 0, bw_read = 0;
  if (a.backend == "cuda") {
#ifdef PLATFORM_WITH_CUDA
    const auto bw = platform::cuda::measure_bandwidth(static_cast<size_t>(a.bandwidth_mib) << 20, 20);
    if (!bw.error.empty()) {
      std::printf("bandwidth: CUDA error: %s\n", bw.error.c_str());
      j.str("bandwidth_error", bw.error);
    } else {
      bw_rw = bw.copy_rw_gbs;
      bw_read = bw.read_gbs;
      std::printf("bandwidth (%zu MiB buffers): D2D copy %.0f GB/s counting read+write (%.0f GB/s read only); "
                  "read-only stream kernel %.0f GB/s\n",
                  bw.bytes >> 20, bw.copy_rw_gbs, bw.copy_read_gbs, bw.read_gbs);
      j.num("copy_bandwidth_rw_gbs", bw.copy_rw_gbs);
      j.num("copy_bandwidth_read_gbs", bw.copy_read_gbs);
      j.num("read_stream_gbs", bw.read_gbs);
    }
#else
    std::printf("bandwidth: not measured (this build has no CUDA)\n");
#endif
  }

  const int64_t max_batch = *std::max_element(a.batches.begin(), a.batches.end());
  const int64_t bs = 16;
  int64_t blocks = (a.prompt + a.gen + bs) / bs + 1;
  for (int64_t b : a.batches) blocks = std::max(blocks, b * ((a.batch_prompt + a.gen + bs) / bs + 1));
  const int64_t longest = std::max(a.prompt, a.batch_prompt) + a.gen + 1;
  const llm::EngineOptions opt = engine_options(a, *model, a.backend, max_batch, longest, blocks);
  std::printf("engine: backend %s, max_running %d, max_batch_tokens %d, context %lld, kv_cache_bytes %s\n",
              opt.backend.c_str(), opt.max_running, opt.max_batch_tokens, static_cast<long long>(opt.context_length),
              fmt_bytes(static_cast<double>(opt.kv_cache_bytes)).c_str());
  const auto t_engine = Clock::now();
  Runner runner(std::move(model), opt);
  j.num("engine_init_s", secs(t_engine, Clock::now()));
  std::printf("engine ready in %.2f s (threads %d, KV cache %s)\n", secs(t_engine, Clock::now()),
              runner.engine().options().threads, fmt_bytes(static_cast<double>(runner.engine().kv_cache_bytes())).c_str());
  std::fflush(stdout);

  std::mt19937_64 rng(42);
  auto request = [&](int64_t prompt, int64_t max_tokens) {
    llm::GenerateRequest r;
    r.prompt = random_tokens(rng, prompt, cfg.vocab);
    r.max_tokens = static_cast<int32_t>(max_tokens);
    return r;  // greedy
  };

  // Warm-up: a short prompt, a prompt as long as the prefill's, and a few batch sizes' decode
  // steps (lazy allocations, kernel selection, graph capture).
  {
    std::vector<llm::GenerateRequest> w;
    w.push_back(request(a.prompt, 4));
    check_done(runner.run(std::move(w)), "warm-up");
    for (int64_t b : a.batches) {
      std::vector<llm::GenerateRequest> wb;
      for (int64_t i = 0; i < b; ++i) wb.push_back(request(a.batch_prompt, 4));
      check_done(runner.run(std::move(wb)), "warm-up");
    }
  }

  // Prefill / TTFT.
  std::vector<double> ttft, prefill_ms;
  for (int64_t r = 0; r < a.repeats; ++r) {
    std::vector<llm::GenerateRequest> one;
    one.push_back(request(a.prompt, 1));
    auto res = runner.run(std::move(one));
    check_done(res, "prefill");
    if (res[0].token_times.empty()) throw std::runtime_error("prefill: no token came back");
    ttft.push_back(secs(res[0].submitted, res[0].token_times[0]));
    prefill_ms.push_back(res[0].done_event.prefill_ms);
  }
  const double ttft_s = median(ttft);
  const double prefill_tok_s = static_cast<double>(a.prompt) / ttft_s;
  std::printf("\nprefill: %lld-token prompt, TTFT %.2f ms (median of %lld; engine prefill_ms %.2f) -> %.0f tok/s\n",
              static_cast<long long>(a.prompt), ttft_s * 1e3, static_cast<long long>(a.repeats),
              median(prefill_ms), prefill_tok_s);
  std::fflush(stdout);
  j.num("prompt_tokens", static_cast<double>(a.prompt));
  j.num("ttft_ms", ttft_s * 1e3);
  j.num("prefill_tok_s", prefill_tok_s);

  // Decode at each batch size.
  std::vector<BatchResult> results;
  for (int64_t b : a.batches) {
    std::vector<llm::GenerateRequest> reqs;
    for (int64_t i = 0; i < b; ++i) reqs.push_back(request(a.batch_prompt, a.gen));
    auto res = runner.run(std::move(reqs));
    check_done(res, "decode");
    // The window: from the step in which the last sequence got its first token to the step in
    // which the first full-length sequence got its last one (every sequence running throughout;
    // a sequence that stopped early at an end-of-sequence token does not end the window). When
    // that leaves nothing (the first ones were done before the last one started), up to the very
    // last token.
    Clock::time_point start{}, end_first{}, end_last{};
    bool have_first = false;
    std::vector<double> ttfts;
    for (const auto& s : res) {
      if (s.token_times.empty()) continue;  // its first token was an end-of-sequence token
      start = std::max(start, s.token_times.front());
      end_last = std::max(end_last, s.token_times.back());
      if (s.done_event.reason == llm::FinishReason::kLength) {
        end_first = have_first ? std::min(end_first, s.token_times.back()) : s.token_times.back();
        have_first = true;
      }
      ttfts.push_back(secs(s.submitted, s.token_times.front()));
    }
    if (ttfts.empty() || end_last <= start) throw std::runtime_error("decode: the sequences stopped before 2 tokens");
    const Clock::time_point end = have_first && end_first > start ? end_first : end_last;
    // Steps inside the window (distinct event times after start), tokens inside (start, end].
    std::vector<Clock::time_point> steps;
    int64_t tokens = 0;
    for (const auto& s : res) {
      for (const auto& t : s.token_times) {
        if (t > start && t <= end) {
          ++tokens;
          steps.push_back(t);
        }
      }
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    BatchResult r;
    r.batch = b;
    r.window_s = secs(start, end);
    r.tokens = tokens;
    r.steps = static_cast<int64_t>(steps.size());
    r.tok_s = r.window_s > 0 ? static_cast<double>(tokens) / r.window_s : 0;
    r.tpot_ms = r.steps > 0 ? r.window_s * 1e3 / static_cast<double>(r.steps) : 0;
    r.ttft_ms = median(ttfts) * 1e3;
    results.push_back(r);
    std::printf("decode B=%-4lld %9.1f tok/s aggregate, TPOT %.3f ms (%lld tokens, %lld steps in %.3f s), median TTFT %.1f ms\n",
                static_cast<long long>(b), r.tok_s, r.tpot_ms, static_cast<long long>(r.tokens),
                static_cast<long long>(r.steps), r.window_s, r.ttft_ms);
    std::fflush(stdout);
  }

  // Summary table.
  const BatchResult* b1 = nullptr;
  for (const auto& r : results) if (r.batch == 1) b1 = &r;
  std::printf("\n| measurement | value |\n|---|---:|\n");
  std::printf("| weight bytes / decode token | %s |\n", fmt_bytes(bytes.weights_per_token).c_str());
  if (bw_rw > 0) {
    std::printf("| copy bandwidth (read+write counted) | %.0f GB/s |\n", bw_rw);
    std::printf("| read-only stream bandwidth | %.0f GB/s |\n", bw_read);
    std::printf("| batch-1 bound from copy bandwidth | %.1f tok/s |\n", bw_rw * 1e9 / bytes.weights_per_token);
    std::printf("| batch-1 bound from read-only stream | %.1f tok/s |\n", bw_read * 1e9 / bytes.weights_per_token);
  }
  std::printf("| prefill (%lld tokens) | %.0f tok/s |\n", static_cast<long long>(a.prompt), prefill_tok_s);
  std::printf("| TTFT (%lld-token prompt, in-process) | %.2f ms |\n", static_cast<long long>(a.prompt), ttft_s * 1e3);
  for (const auto& r : results) {
    std::printf("| decode, %lld sequences | %.1f tok/s (TPOT %.3f ms) |\n", static_cast<long long>(r.batch), r.tok_s, r.tpot_ms);
  }
  std::ostringstream arr;
  arr.precision(9);
  arr << "[";
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    arr << (i ? ", " : "") << "{\"batch\": " << r.batch << ", \"tok_s\": " << r.tok_s << ", \"tpot_ms\": " << r.tpot_ms
        << ", \"ttft_ms\": " << r.ttft_ms << ", \"tokens\": " << r.tokens << ", \"steps\": " << r.steps
        << ", \"window_s\": " << r.window_s << "}";
  }
  arr << "]";
  j.raw("decode", arr.str());
  if (b1) {
    const double achieved = bytes.weights_per_token * b1->tok_s / 1e9;  // GB/s of weights read
    std::printf("| batch-1 decode | %.1f tok/s, TPOT %.3f ms, %.0f GB/s of weights |\n", b1->tok_s, b1->tpot_ms, achieved);
    j.num("decode_b1_tok_s", b1->tok_s);
    j.num("tpot_b1_ms", b1->tpot_ms);
    j.num("decode_b1_weight_gbs", achieved);
    if (bw_rw > 0) {
      const double frac = achieved / bw_rw, frac_read = achieved / bw_read;
      std::printf("| fraction of the copy-bandwidth bound | %.1f %% (goal >= 70 %%) |\n", 100 * frac);
      std::printf("| fraction of the read-stream bound | %.1f %% |\n", 100 * frac_read);
      j.num("fraction_of_copy_bound", frac);
      j.num("fraction_of_read_bound", frac_read);
    }
    for (const auto& r : results) {
      if (r.batch == 64) {
        std::printf("| aggregate at 64 / batch-1 | %.1fx (goal >= 15x) |\n", r.tok_s / b1->tok_s);
        j.num("ratio_64_over_1", r.tok_s / b1->tok_s);
      }
    }
  }
  write_json(a.json, j.done());
  return 0;
}

// =================================================================================================
// Compare mode: CPU vs CUDA on the same file.
std::vector<int32_t> read_expected_tokens(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  const size_t k = s.find("\"tokens\"");
  if (k == std::string::npos) throw std::runtime_error(path + " has no \"tokens\" array");
  const size_t open = s.find('[', k), close = s.find(']', open);
  if (open == std::string::npos || close == std::string::npos) throw std::runtime_error(path + ": bad tokens array");
  std::vector<int32_t> out;
  std::stringstream arr(s.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(arr, item, ',')) out.push_back(static_cast<int32_t>(std::stol(item)));
  return out;
}

struct BackendRun {
  std::vector<float> logits;  // [positions][vocab]
  std::vector<int32_t> greedy;
  double seconds = 0;
};

BackendRun run_backend(const Args& a, const std::string& backend, const std::vector<int32_t>& prompt,
                       const std::vector<int32_t>& greedy_prompt) {
  const auto t0 = Clock::now();
  auto model = llm::Model::load(a.model);
  const int64_t longest = std::max<int64_t>(static_cast<int64_t>(prompt.size()), static_cast<int64_t>(greedy_prompt.size()) + a.compare_gen) + 1;
  Args b = a;
  b.prompt = static_cast<int64_t>(prompt.size());
  const llm::EngineOptions opt = engine_options(b, *model, backend, 1, longest, (longest + 16) / 16 + 2);
  Runner runner(std::move(model), opt);
  BackendRun out;
  {
    llm::GenerateRequest r;
    r.prompt = prompt;
    r.logits_only = true;
    r.all_logits = true;
    std::vector<llm::GenerateRequest> v;
    v.push_back(std::move(r));
    auto res = runner.run(std::move(v));
    check_done(res, (backend + " logits").c_str());
    out.logits = std::move(res[0].done_event.logits);
  }
  {
    llm::GenerateRequest r;
    r.prompt = greedy_prompt;
    r.max_tokens = static_cast<int32_t>(a.compare_gen);
    std::vector<llm::GenerateRequest> v;
    v.push_back(std::move(r));
    auto res = runner.run(std::move(v));
    check_done(res, (backend + " greedy").c_str());
    out.greedy = res[0].tokens;
  }
  out.seconds = secs(t0, Clock::now());
  return out;
}

int compare(const Args& a) {
  auto probe = llm::Model::load(a.model);
  print_config(*probe);
  const auto cfg = probe->config();
  probe.reset();
  std::mt19937_64 rng(7);
  std::vector<int32_t> prompt;
  if (cfg.bos_token >= 0) prompt.push_back(cfg.bos_token);
  const auto rest = random_tokens(rng, std::max<int64_t>(1, a.compare_prompt - static_cast<int64_t>(prompt.size())), cfg.vocab);
  prompt.insert(prompt.end(), rest.begin(), rest.end());
  const std::vector<int32_t> greedy_prompt = {cfg.bos_token >= 0 ? cfg.bos_token : 1};

  const BackendRun cpu = run_backend(a, a.ref_backend, prompt, greedy_prompt);
  std::printf("%s (reference): %.1f s\n", a.ref_backend.c_str(), cpu.seconds);
  const BackendRun gpu = run_backend(a, a.test_backend, prompt, greedy_prompt);
  std::printf("%s: %.1f s\n", a.test_backend.c_str(), gpu.seconds);

  bool ok = true;
  Json j;
  j.str("model", a.model);
  j.str("ref_backend", a.ref_backend);
  j.str("test_backend", a.test_backend);
  // Logits: per position, max |diff| over the rms of the CPU row; argmax agreement.
  const int64_t V = cfg.vocab, P = static_cast<int64_t>(prompt.size());
  if (static_cast<int64_t>(cpu.logits.size()) != P * V || gpu.logits.size() != cpu.logits.size()) {
    std::printf("logits: wrong sizes (cpu %zu, cuda %zu, expected %lld)\n", cpu.logits.size(), gpu.logits.size(),
                static_cast<long long>(P * V));
    ok = false;
  } else {
    double worst = 0, worst_abs = 0;
    int64_t argmax_agree = 0;
    for (int64_t p = 0; p < P; ++p) {
      const float* c = cpu.logits.data() + p * V;
      const float* g = gpu.logits.data() + p * V;
      double ss = 0, mx = 0;
      for (int64_t i = 0; i < V; ++i) {
        ss += static_cast<double>(c[i]) * c[i];
        mx = std::max(mx, std::fabs(static_cast<double>(g[i]) - c[i]));
      }
      const double rms = std::sqrt(ss / static_cast<double>(V));
      const double rel = mx / std::max(rms, 1e-12);
      worst = std::max(worst, rel);
      worst_abs = std::max(worst_abs, mx);
      const int64_t ac = std::max_element(c, c + V) - c, ag = std::max_element(g, g + V) - g;
      argmax_agree += ac == ag;
      std::printf("logits pos %2lld: max |test - ref| %.3e, rms(ref) %.3e, ratio %.3e, argmax ref %lld test %lld\n",
                  static_cast<long long>(p), mx, rms, rel, static_cast<long long>(ac), static_cast<long long>(ag));
    }
    const bool pass = worst <= a.logit_tol;
    ok = ok && pass;
    std::printf("logits: worst max|diff|/rms %.3e (tolerance %.3e) %s; argmax agrees at %lld/%lld positions\n", worst,
                a.logit_tol, pass ? "PASS" : "FAIL", static_cast<long long>(argmax_agree), static_cast<long long>(P));
    j.num("logits_worst_rel", worst);
    j.num("logits_worst_abs", worst_abs);
    j.num("logits_tolerance", a.logit_tol);
    j.num("argmax_agree", static_cast<double>(argmax_agree));
    j.num("positions", static_cast<double>(P));
  }
  // Greedy.
  auto common_prefix = [](const std::vector<int32_t>& x, const std::vector<int32_t>& y) {
    size_t n = 0;
    while (n < x.size() && n < y.size() && x[n] == y[n]) ++n;
    return n;
  };
  const size_t same = common_prefix(cpu.greedy, gpu.greedy);
  const bool greedy_ok = same == cpu.greedy.size() && same == gpu.greedy.size();
  ok = ok && greedy_ok;
  std::printf("greedy: %zu reference tokens, %zu test tokens, identical prefix %zu: %s\n", cpu.greedy.size(), gpu.greedy.size(),
              same, greedy_ok ? "PASS" : "FAIL");
  j.num("greedy_ref_tokens", static_cast<double>(cpu.greedy.size()));
  j.num("greedy_test_tokens", static_cast<double>(gpu.greedy.size()));
  j.num("greedy_common_prefix", static_cast<double>(same));
  if (!a.expect.empty()) {
    const auto want = read_expected_tokens(a.expect);
    const size_t n = std::min(want.size(), cpu.greedy.size());
    const std::vector<int32_t> w(want.begin(), want.begin() + static_cast<long>(n));
    const size_t c_same = common_prefix(cpu.greedy, w), g_same = common_prefix(gpu.greedy, w);
    const bool pass = c_same == n && g_same == n;
    ok = ok && pass;
    std::printf("expected (%s, first %zu tokens): reference matches %zu, test matches %zu: %s\n", a.expect.c_str(), n, c_same,
                g_same, pass ? "PASS" : "FAIL");
    j.num("expect_ref_prefix", static_cast<double>(c_same));
    j.num("expect_test_prefix", static_cast<double>(g_same));
    j.num("expect_tokens", static_cast<double>(n));
  }
  j.raw("pass", ok ? "true" : "false");
  write_json(a.json, j.done());
  std::printf("%s\n", ok ? "COMPARE PASS" : "COMPARE FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    return a.compare ? compare(a) : bench(a);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "platform-llm-bench: %s\n", e.what());
    return 1;
  }
}
