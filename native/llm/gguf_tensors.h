// Reading a model's weights out of a mapped GGUF file, with the checks every loader needs: a
// tensor that is missing or of another shape, and a metadata count that is absent or out of
// range, are GgufErrors that name it. Shared by the decoder (model.cc) and the encoder
// (encoder.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../ggml/gguf.h"
#include "../ggml/weight_matrix.h"

namespace platform::llm {

// "[a, b, c]".
std::string shape_string(const std::vector<int64_t>& dims);
// The tensor `name` of exactly `dims` (dims[0] contiguous).
const ggml::GgufTensor& require_tensor(const ggml::GgufFile& f, const std::string& name, const std::vector<int64_t>& dims);
// A 2-D GGUF tensor [cols, rows] as a row-major [rows, cols] matrix (a view into the mapping).
ggml::WeightMatrix matrix(const ggml::GgufFile& f, const std::string& name, int64_t rows, int64_t cols);
// A 3-D GGUF tensor [cols, rows, count] (a mixture of experts' stacked matrices) as one row-major
// [count * rows, cols] matrix: matrix i's rows start at row i * rows.
ggml::WeightMatrix stacked_matrices(const ggml::GgufFile& f, const std::string& name, int64_t count, int64_t rows, int64_t cols);
// Rows [first, first + count) of m, a view into the same data (a fused tensor's part).
ggml::WeightMatrix row_view(const ggml::WeightMatrix& m, int64_t first, int64_t count);
// The first n values of a tensor as f32 (any type), or the 1-D tensor `name` of n values.
std::vector<float> vector_f32(const ggml::GgufTensor& t, int64_t n);
std::vector<float> vector_f32(const ggml::GgufFile& f, const std::string& name, int64_t n);
// A metadata count in [1, 2^31].
int64_t require_uint(const ggml::GgufFile& f, const std::string& key);

}  // namespace platform::llm
