// A matrix in one GGML type as it lies in a GGUF file (or in a backend's copy of it): `rows` rows
// of `row_bytes` bytes, each the encoding of `cols` values; row r at data + r * row_bytes. An LLM
// weight matrix is stored one row per output, so y = W x reads it row by row.
#pragma once

#include <cstdint>

#include "types.h"

namespace platform::ggml {

struct WeightMatrix {
  Type type = Type::kF32;
  int64_t rows = 0, cols = 0;
  int64_t row_bytes = 0;
  const uint8_t* data = nullptr;

  const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
};

}  // namespace platform::ggml
