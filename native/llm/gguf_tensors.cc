// Weights and counts out of a GGUF file: see gguf_tensors.h.
#include "gguf_tensors.h"

#include "../ggml/types.h"

namespace platform::llm {

using ggml::GgufError;
using ggml::GgufFile;
using ggml::GgufTensor;
using ggml::WeightMatrix;

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

const GgufTensor& require_tensor(const GgufFile& f, const std::string& name, const std::vector<int64_t>& dims) {
  const GgufTensor* t = f.tensor(name);
  if (t == nullptr) throw GgufError("missing tensor '" + name + "'");
  if (t->dims != dims) {
    throw GgufError("tensor '" + name + "' has shape " + shape_string(t->dims) + ", expected " + shape_string(dims));
  }
  return *t;
}

WeightMatrix matrix(const GgufFile& f, const std::string& name, int64_t rows, int64_t cols) {
  const GgufTensor& t = require_tensor(f, name, {cols, rows});
  WeightMatrix w;
  w.type = t.type;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = ggml::row_bytes(t.type, cols);
  w.data = t.data;
  return w;
}

WeightMatrix stacked_matrices(const GgufFile& f, const std::string& name, int64_t count, int64_t rows, int64_t cols) {
  const GgufTensor& t = require_tensor(f, name, {cols, rows, count});
  WeightMatrix w;
  w.type = t.type;
  w.rows = count * rows;
  w.cols = cols;
  w.row_bytes = ggml::row_bytes(t.type, cols);
  w.data = t.data;
  return w;
}

WeightMatrix row_view(const WeightMatrix& m, int64_t first, int64_t count) {
  WeightMatrix v = m;
  v.rows = count;
  v.data = m.data + first * m.row_bytes;
  return v;
}

std::vector<float> vector_f32(const GgufTensor& t, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  ggml::dequantize_row(t.type, t.data, v.data(), n);
  return v;
}

std::vector<float> vector_f32(const GgufFile& f, const std::string& name, int64_t n) {
  return vector_f32(require_tensor(f, name, {n}), n);
}

int64_t require_uint(const GgufFile& f, const std::string& key) {
  const auto v = f.get_uint(key);
  if (!v) throw GgufError("missing metadata key '" + key + "'");
  if (*v == 0 || *v > (uint64_t{1} << 31)) throw GgufError("metadata key '" + key + "' is out of range");
  return static_cast<int64_t>(*v);
}

}  // namespace platform::llm
