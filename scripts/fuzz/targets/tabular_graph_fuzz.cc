// libFuzzer target: the native side of an ONNX model. The bytes decode (tabular_model_codec.h) into
// the ModelDesc that tabularCompile hands to Graph::compile; a model that compiles is then run on
// a small batch, its inputs checked as TabularModel.run checks them, and every output is read end
// to end as outputs_to_js would read it. Refusals (std::exception from compile, check_inputs or
// run) are the expected outcome for most inputs; a crash, a sanitizer report or an exception that
// is not a std::exception is a finding.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "tabular/graph.h"
#include "tabular_model_codec.h"

namespace {

using platform::tabular::DType;
using platform::tabular::Graph;
using platform::tabular::NamedTensor;
using platform::tabular::Shape;
using platform::tabular::Tensor;

constexpr int64_t kMaxInputElements = 1 << 12;

// Bytes that pick input dimensions and element values, cycled.
class Picker {
 public:
  Picker(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t next() { return n_ == 0 ? static_cast<uint8_t>(i_++ * 37) : p_[i_++ % n_]; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t i_ = 0;
};

template <typename T>
T pick_value(Picker& pick) {
  const uint8_t b = pick.next();
  if constexpr (std::is_floating_point_v<T>) {
    static const T kSpecial[] = {0, -0.0, 1, -1, 0.5, 2, 1e-40, 1e30, -1e30, std::numeric_limits<T>::max(),
                                 std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                                 std::numeric_limits<T>::quiet_NaN(), 3, -7.25, 100};
    return b < 16 ? kSpecial[b] : static_cast<T>(static_cast<int>(b) - 128) / 8;
  } else {
    switch (b & 7) {
      case 0: return std::numeric_limits<T>::min();
      case 1: return std::numeric_limits<T>::max();
      default: return static_cast<T>(static_cast<int>(b >> 3) - 3);  // small, some negative
    }
  }
}

// An input tensor of the declared type, `rows` in the batch dimension, other fixed dimensions as
// declared and unknown ones picked small. Empty (undefined) when it would be too large.
Tensor make_input(const platform::tabular::ValueDesc& d, int64_t rows, Picker& pick) {
  Shape dims;
  if (d.has_shape) {
    for (size_t i = 0; i < d.dims.size(); ++i) dims.push_back(i == 0 ? rows : d.dims[i] >= 0 ? d.dims[i] : pick.next() % 4);
  } else {
    const int rank = pick.next() % 4;
    for (int i = 0; i < rank; ++i) dims.push_back(i == 0 ? rows : pick.next() % 4);
  }
  int64_t n = 1;
  for (int64_t v : dims) {
    if (v > kMaxInputElements) return Tensor();
    n *= v;
    if (n > kMaxInputElements) return Tensor();
  }
  Tensor t(d.dtype, dims);
  if (d.dtype == DType::kString) {
    static const char* const kStrings[] = {"", "a", "b", "cat", "dog", "\xff\xfe", "0", "a longer string value"};
    for (int64_t i = 0; i < t.size(); ++i) t.strings()[i] = kStrings[pick.next() % 8];
    return t;
  }
  platform::tabular::dispatch_numeric(
      d.dtype, "fuzz input",
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = t.data<T>();
        for (int64_t i = 0; i < t.size(); ++i) {
          if constexpr (std::is_same_v<T, bool>) p[i] = pick.next() & 1;
          else p[i] = pick_value<T>(pick);
        }
      },
      true);
  return t;
}

// Reads every element of an output, as the addon does when it copies the result to JavaScript.
uint64_t touch(const Tensor& t) {
  uint64_t h = 0;
  if (!t.defined()) return h;
  const int64_t n = t.size();
  if (t.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i) h += t.strings()[i].size();
  } else {
    const size_t bytes = static_cast<size_t>(n) * platform::tabular::dtype_size(t.dtype());
    const uint8_t* p = static_cast<const uint8_t*>(t.raw());
    for (size_t i = 0; i < bytes; ++i) h += p[i];
  }
  if (const auto& keys = t.map_keys()) h += keys->strings ? keys->strs.size() : keys->ints.size();
  return h;
}

volatile uint64_t g_sink;

// FUZZ_DEBUG=1: say what happened to each input (to check that seeds compile and run).
void debug(const char* stage, const char* what) {
  static const bool on = std::getenv("FUZZ_DEBUG") != nullptr;
  if (on) std::fprintf(stderr, "tabular_graph_fuzz: %s: %s\n", stage, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader r(data, size);
  platform::tabular::ModelDesc model;
  try {
    if (!fuzz::read_model(r, model)) {
      debug("decode", "not a model of this form");
      return -1;  // keep it out of the corpus
    }
  } catch (const std::exception& e) {
    debug("decode", e.what());
    return -1;  // what the addon's reader turns into a TypeError / RangeError
  }
  const int64_t rows = r.u8() % 8;
  Picker pick(r.rest(), r.left());

  std::shared_ptr<const Graph> graph;
  platform::tabular::CompileOptions options;
  options.threads = 1;
  try {
    graph = Graph::compile(model, options);
  } catch (const std::exception& e) {
    debug("compile", e.what());
    return 0;  // refused: the addon's model_refused
  }
  std::vector<NamedTensor> inputs;
  for (const auto& d : graph->inputs()) {
    Tensor t;
    try {
      t = make_input(d, rows, pick);
    } catch (const std::exception&) {
      return 0;
    }
    if (!t.defined()) {
      debug("input", "too large");
      return 0;
    }
    inputs.push_back(NamedTensor{d.name, std::move(t)});
  }
  try {
    std::vector<Tensor> checked = graph->check_inputs(std::move(inputs));
    const auto outputs = graph->run(std::move(checked));
    uint64_t h = 0;
    for (const auto& o : outputs) h += touch(o.tensor);
    g_sink = h;
    debug("ran", "ok");
  } catch (const std::exception& e) {
    debug("run", e.what());
    return 0;  // the addon's invalid_argument / run_failed
  }
  return 0;
}
