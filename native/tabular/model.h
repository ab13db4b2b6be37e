// The plain C++ description of a normalised ONNX model (src/tabular/onnx/types.ts
// NormalizedModel) that the graph compiler takes. The addon fills it from the JavaScript object;
// nothing here depends on N-API.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor.h"

namespace platform::tabular {

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kOther };
  Kind kind = Kind::kOther;
  double f = 0;  // kFloat (float32 values arrive exactly as doubles)
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  // The TypeScript type name ('float', 'ints', 'graph', ...), for messages.
  std::string type_name;
};

struct NodeDesc {
  std::string name;
  std::string op_type;
  std::string domain;  // '' for ai.onnx
  int version = 0;
  std::vector<std::string> inputs;   // '' = omitted optional input
  std::vector<std::string> outputs;  // '' = omitted optional output
  std::map<std::string, Attribute> attributes;
};

struct ValueDesc {
  enum class Kind { kTensor, kSequenceMap, kUnknown };
  std::string name;
  Kind kind = Kind::kTensor;
  DType dtype = DType::kUndefined;  // tensors; for sequence-map the value type
  DType key_type = DType::kUndefined;  // sequence-map: int64 or string
  bool has_shape = false;
  std::vector<int64_t> dims;  // -1: symbolic or unknown
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct ModelDesc {
  std::vector<ValueDesc> inputs;
  std::vector<ValueDesc> outputs;
  std::vector<NamedTensor> initializers;
  std::vector<NodeDesc> nodes;
  std::map<std::string, int> opset_imports;
};

}  // namespace platform::tabular
