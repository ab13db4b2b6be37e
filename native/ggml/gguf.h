// GGUF files (v2 and v3): memory-mapped, parsed and validated without copying tensor data.
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 KV count, the KV pairs (u64-length strings,
// typed values, nested arrays), the tensor infos (name, n_dims, u64 dims with dims[0] the
// contiguous dimension, u32 type, u64 offset), then the tensor data at the next multiple of
// general.alignment (default 32). Every read is bounds-checked: a truncated or corrupt file
// gives a GgufError with a one-line message, never a read past the mapping.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "types.h"

namespace platform::ggml {

class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// One metadata value. Scalars keep their number (as int64/uint64/double) or string; arrays keep
// their element type and length (the engine itself never needs array contents).
struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  bool is_signed = false;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string s;
  GgufValueType array_type = GgufValueType::kU8;
  uint64_t array_length = 0;

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::kF32 || type == GgufValueType::kF64; }
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // dims[0] contiguous
  Type type = Type::kF32;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping

  int64_t elements() const;
};

class GgufFile {
 public:
  // Maps and validates `path`. Throws GgufError.
  static GgufFile open(const std::string& path);

  GgufFile() = default;
  GgufFile(GgufFile&& other) noexcept;
  GgufFile& operator=(GgufFile&& other) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return size_; }
  const std::string& path() const { return path_; }

  const GgufValue* find(const std::string& key) const;
  const GgufTensor* tensor(const std::string& name) const;
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  // Typed lookups: nullopt when absent; GgufError when present with an unusable type.
  std::optional<std::string> get_string(const std::string& key) const;
  std::optional<uint64_t> get_uint(const std::string& key) const;
  std::optional<double> get_float(const std::string& key) const;

 private:
  void parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace platform::ggml
