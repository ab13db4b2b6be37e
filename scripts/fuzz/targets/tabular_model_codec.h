// The fuzz input of tabular_graph_fuzz: a compact binary form of the tabular::ModelDesc that the
// addon builds from a NormalizedModel (native/addon/tabular_binding.cc read_model), followed by
// what to run it on. scripts/fuzz/seeds.ts writes the same form from real ONNX models (parsed and
// normalised by src/tabular/onnx), so mutations start from models that compile.
//
// Integers are LEB128 varints (signed ones zigzag-encoded); a string is a varint length and the
// bytes; a double is 8 bytes little-endian.
//
//   model    := opsets values(inputs) values(outputs) inits nodes run
//   opsets   := varint n, n x (string domain, svarint version)
//   values   := varint n, n x value
//   value    := string name, u8 kind (0 tensor, 1 sequence-map, 2 unknown), u8 dtype, u8 key dtype,
//               u8 has_shape, varint rank, rank x svarint dim (-1: symbolic)
//   inits    := varint n, n x (string name, tensor)
//   tensor   := u8 dtype, varint rank, rank x varint dim, data: the elements' bytes (bool: one byte
//               each, low bit), or for strings one string per element
//   nodes    := varint n, n x (string name, string op_type, string domain, svarint version,
//               varint n_in, strings, varint n_out, strings, varint n_attrs, attribute...)
//   attribute:= string name, u8 kind (0 float f64, 1 int svarint, 2 string, 3 tensor, 4 floats
//               varint n + n f64, 5 ints varint n + svarints, 6 strings varint n + strings, 7 other)
//   run      := u8 rows (mod 8), then bytes that pick input dims and element values (cycled)
//
// dtype numbers are tabular::DType's. The decoder refuses what the addon's reader refuses (a tensor
// value of an undefined type, dims over 2^31 - 1, integers beyond +-2^53) and bounds sizes so that
// one run stays fast; anything else, however odd, reaches Graph::compile as the addon would pass it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tabular/model.h"

namespace fuzz {

using platform::tabular::Attribute;
using platform::tabular::DType;
using platform::tabular::ModelDesc;
using platform::tabular::NamedTensor;
using platform::tabular::NodeDesc;
using platform::tabular::Tensor;
using platform::tabular::ValueDesc;

constexpr uint64_t kMaxCount = 256;          // values, nodes, initializers, attributes, names per node
constexpr uint64_t kMaxElements = 1 << 16;   // elements of one tensor or attribute list
constexpr uint64_t kMaxString = 1 << 12;     // bytes of one string
constexpr uint64_t kMaxRank = 8;
constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;  // the addon's integer_at bound

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(size) {}

  bool ok() const { return ok_; }
  size_t left() const { return ok_ ? n_ - at_ : 0; }
  const uint8_t* rest() const { return p_ + at_; }

  uint8_t u8() {
    if (!ok_ || at_ >= n_) return fail(), 0;
    return p_[at_++];
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = u8();
      if (!ok_) return 0;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return fail(), 0;
  }
  int64_t svarint() {
    const uint64_t z = varint();
    return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
  }
  // A count bounded by `max` (a larger one fails the decode).
  uint64_t count(uint64_t max) {
    const uint64_t n = varint();
    if (n > max) fail();
    return ok_ ? n : 0;
  }
  // An integer the addon could have read (a JavaScript safe integer).
  int64_t safe_int() {
    const int64_t v = svarint();
    if (v > kMaxSafeInteger || v < -kMaxSafeInteger) fail();
    return ok_ ? v : 0;
  }
  double f64() {
    double d = 0;
    bytes(&d, sizeof d);
    return d;
  }
  bool bytes(void* out, size_t k) {
    if (!ok_ || k > n_ - at_) return fail(), false;
    std::memcpy(out, p_ + at_, k);
    at_ += k;
    return true;
  }
  std::string str() {
    const uint64_t len = count(kMaxString);
    if (!ok_ || len > n_ - at_) return fail(), std::string();
    std::string s(reinterpret_cast<const char*>(p_ + at_), len);
    at_ += len;
    return s;
  }
  void fail() { ok_ = false; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
  bool ok_ = true;
};

inline DType dtype_of_byte(uint8_t b) { return b <= static_cast<uint8_t>(DType::kString) ? static_cast<DType>(b) : DType::kUndefined; }

inline ValueDesc read_value(Reader& r) {
  ValueDesc d;
  d.name = r.str();
  const uint8_t kind = r.u8();
  d.kind = kind == 0 ? ValueDesc::Kind::kTensor : kind == 1 ? ValueDesc::Kind::kSequenceMap : ValueDesc::Kind::kUnknown;
  d.dtype = dtype_of_byte(r.u8());
  d.key_type = dtype_of_byte(r.u8());
  d.has_shape = r.u8() & 1;
  const uint64_t rank = r.count(kMaxRank);
  for (uint64_t i = 0; i < rank && r.ok(); ++i) d.dims.push_back(r.safe_int());
  if (d.kind != ValueDesc::Kind::kTensor) {
    d.has_shape = false;
    d.dims.clear();
  } else if (d.dtype == DType::kUndefined) {
    r.fail();  // read_value_info: "has the unsupported element type"
  }
  if (!d.has_shape) d.dims.clear();
  return d;
}

inline Tensor read_tensor(Reader& r) {
  const DType type = dtype_of_byte(r.u8());
  if (type == DType::kUndefined) return r.fail(), Tensor();
  const uint64_t rank = r.count(kMaxRank);
  platform::tabular::Shape dims;
  uint64_t elements = 1;
  for (uint64_t i = 0; i < rank && r.ok(); ++i) {
    const uint64_t d = r.varint();
    if (d > 2147483647u) return r.fail(), Tensor();  // read_dims
    elements = d == 0 ? 0 : elements * d;
    if (elements > kMaxElements) return r.fail(), Tensor();
    dims.push_back(static_cast<int64_t>(d));
  }
  if (!r.ok()) return Tensor();
  Tensor t(type, dims);
  const size_t n = static_cast<size_t>(t.size());
  if (type == DType::kString) {
    for (size_t i = 0; i < n && r.ok(); ++i) t.strings()[i] = r.str();
  } else if (type == DType::kBool) {
    bool* b = t.data<bool>();
    for (size_t i = 0; i < n && r.ok(); ++i) b[i] = r.u8() & 1;
  } else if (n > 0) {
    r.bytes(t.raw(), n * platform::tabular::dtype_size(type));
  }
  return t;
}

inline Attribute read_attribute(Reader& r) {
  Attribute a;
  switch (r.u8()) {
    case 0: a.kind = Attribute::Kind::kFloat; a.type_name = "float"; a.f = r.f64(); break;
    case 1: a.kind = Attribute::Kind::kInt; a.type_name = "int"; a.i = r.safe_int(); break;
    case 2: a.kind = Attribute::Kind::kString; a.type_name = "string"; a.s = r.str(); break;
    case 3: a.kind = Attribute::Kind::kTensor; a.type_name = "tensor"; a.t = read_tensor(r); break;
    case 4: {
      a.kind = Attribute::Kind::kFloats;
      a.type_name = "floats";
      const uint64_t n = r.count(kMaxElements);
      for (uint64_t i = 0; i < n && r.ok(); ++i) a.floats.push_back(r.f64());
      break;
    }
    case 5: {
      a.kind = Attribute::Kind::kInts;
      a.type_name = "ints";
      const uint64_t n = r.count(kMaxElements);
      for (uint64_t i = 0; i < n && r.ok(); ++i) a.ints.push_back(r.safe_int());
      break;
    }
    case 6: {
      a.kind = Attribute::Kind::kStrings;
      a.type_name = "strings";
      const uint64_t n = r.count(kMaxElements);
      for (uint64_t i = 0; i < n && r.ok(); ++i) a.strings.push_back(r.str());
      break;
    }
    default: a.kind = Attribute::Kind::kOther; a.type_name = "graph"; break;
  }
  return a;
}

// Decodes the model part; false when the bytes are not a model of this form.
inline bool read_model(Reader& r, ModelDesc& m) {
  const uint64_t n_opsets = r.count(kMaxCount);
  for (uint64_t i = 0; i < n_opsets && r.ok(); ++i) {
    std::string domain = r.str();
    const int64_t v = r.safe_int();
    m.opset_imports[domain] = static_cast<int>(v);  // read_model: Int64Value() narrowed to int
  }
  const uint64_t n_in = r.count(kMaxCount);
  for (uint64_t i = 0; i < n_in && r.ok(); ++i) m.inputs.push_back(read_value(r));
  const uint64_t n_out = r.count(kMaxCount);
  for (uint64_t i = 0; i < n_out && r.ok(); ++i) m.outputs.push_back(read_value(r));
  const uint64_t n_init = r.count(kMaxCount);
  for (uint64_t i = 0; i < n_init && r.ok(); ++i) {
    std::string name = r.str();
    m.initializers.push_back(NamedTensor{std::move(name), read_tensor(r)});
  }
  const uint64_t n_nodes = r.count(kMaxCount);
  for (uint64_t i = 0; i < n_nodes && r.ok(); ++i) {
    NodeDesc n;
    n.name = r.str();
    n.op_type = r.str();
    n.domain = r.str();
    n.version = static_cast<int>(r.safe_int());  // read_model: integer_at narrowed to int
    const uint64_t n_inputs = r.count(kMaxCount);
    for (uint64_t k = 0; k < n_inputs && r.ok(); ++k) n.inputs.push_back(r.str());
    const uint64_t n_outputs = r.count(kMaxCount);
    for (uint64_t k = 0; k < n_outputs && r.ok(); ++k) n.outputs.push_back(r.str());
    const uint64_t n_attrs = r.count(kMaxCount);
    for (uint64_t k = 0; k < n_attrs && r.ok(); ++k) {
      std::string name = r.str();
      Attribute a = read_attribute(r);
      n.attributes.emplace(std::move(name), std::move(a));  // the first of a repeated name wins, as emplace in the addon
    }
    m.nodes.push_back(std::move(n));
  }
  return r.ok();
}

}  // namespace fuzz
