// GGUF parsing with a bounds-checked cursor over the read-only mapping.
#include "gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace platform::ggml {
namespace {

constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxTensors = uint64_t{1} << 20;
constexpr int kMaxArrayDepth = 4;

const char* value_type_name(uint32_t t) {
  static const char* kNames[] = {"u8",    "i8",  "u16", "i16", "u32", "i32", "f32",
                                 "bool", "string", "array", "u64", "i64", "f64"};
  return t <= 12 ? kNames[t] : "unknown";
}

class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

  uint64_t pos() const { return pos_; }

  void need(uint64_t n, const char* what) const {
    if (n > size_ - pos_) {
      throw GgufError("truncated GGUF file: " + std::string(what) + " at byte " +
                      std::to_string(pos_) + " runs past the end of the file (" +
                      std::to_string(size_) + " bytes)");
    }
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const char* what) {
    const uint64_t n = read<uint64_t>(what);
    if (n > kMaxStringBytes) throw GgufError(std::string("corrupt GGUF file: ") + what + " is too long");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }
  void skip(uint64_t n, const char* what) {
    need(n, what);
    pos_ += n;
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kBool: return 1;
    case GgufValueType::kU16: case GgufValueType::kI16: return 2;
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kF32: return 4;
    case GgufValueType::kU64: case GgufValueType::kI64: case GgufValueType::kF64: return 8;
    default: return 0;
  }
}

void check_value_type(uint32_t t, const std::string& key) {
  if (t > 12) {
    throw GgufError("corrupt GGUF file: metadata key '" + key + "' has unknown value type " +
                    std::to_string(t));
  }
}

// Skips an array's elements (arrays of strings and nested arrays are walked).
void skip_array(Cursor& c, GgufValueType type, uint64_t count, const std::string& key, int depth) {
  if (depth > kMaxArrayDepth) throw GgufError("corrupt GGUF file: arrays nested too deep in '" + key + "'");
  const uint64_t size = scalar_size(type);
  if (size > 0) {
    if (count > UINT64_MAX / size) throw GgufError("corrupt GGUF file: array '" + key + "' is too long");
    c.skip(count * size, "array data");
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (type == GgufValueType::kString) {
      const uint64_t n = c.read<uint64_t>("array string length");
      c.skip(n, "array string");
    } else {  // nested array
      const uint32_t t = c.read<uint32_t>("nested array type");
      check_value_type(t, key);
      const uint64_t n = c.read<uint64_t>("nested array length");
      skip_array(c, static_cast<GgufValueType>(t), n, key, depth + 1);
    }
  }
}

}  // namespace

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kU16:
    case GgufValueType::kI16: case GgufValueType::kU32: case GgufValueType::kI32:
    case GgufValueType::kU64: case GgufValueType::kI64: return true;
    default: return false;
  }
}

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile f;
  f.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw GgufError("cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError("cannot open " + path + ": not a regular file");
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ < 24) {
    ::close(fd);
    throw GgufError("not a GGUF file: " + path + " is only " + std::to_string(f.size_) + " bytes");
  }
  void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) throw GgufError("cannot map " + path + ": " + std::strerror(errno));
  f.base_ = static_cast<const uint8_t*>(p);
  f.parse();  // on throw, f's destructor unmaps
  return f;
}

GgufFile::GgufFile(GgufFile&& o) noexcept { *this = std::move(o); }

GgufFile& GgufFile::operator=(GgufFile&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
    path_ = std::move(o.path_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    version_ = o.version_;
    kv_ = std::move(o.kv_);
    tensors_ = std::move(o.tensors_);
    tensor_index_ = std::move(o.tensor_index_);
  }
  return *this;
}

GgufFile::~GgufFile() {
  if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
}

void GgufFile::parse() {
  Cursor c(base_, size_);
  const uint32_t magic = c.read<uint32_t>("magic");
  if (std::memcmp(&magic, "GGUF", 4) != 0) throw GgufError("not a GGUF file: bad magic in " + path_);
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) {
    throw GgufError("unsupported GGUF version " + std::to_string(version_) + " (expected 2 or 3)");
  }
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  if (n_tensors > kMaxTensors) throw GgufError("corrupt GGUF file: tensor count " + std::to_string(n_tensors));
  // Every KV pair takes at least 12 bytes: a cheap sanity bound before looping.
  if (n_kv > size_ / 12) throw GgufError("corrupt GGUF file: metadata count " + std::to_string(n_kv));

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("metadata key");
    const uint32_t t = c.read<uint32_t>("metadata value type");
    check_value_type(t, key);
    GgufValue v;
    v.type = static_cast<GgufValueType>(t);
    switch (v.type) {
      case GgufValueType::kU8: v.u = c.read<uint8_t>("value"); break;
      case GgufValueType::kI8: v.i = c.read<int8_t>("value"); v.is_signed = true; break;
      case GgufValueType::kU16: v.u = c.read<uint16_t>("value"); break;
      case GgufValueType::kI16: v.i = c.read<int16_t>("value"); v.is_signed = true; break;
      case GgufValueType::kU32: v.u = c.read<uint32_t>("value"); break;
      case GgufValueType::kI32: v.i = c.read<int32_t>("value"); v.is_signed = true; break;
      case GgufValueType::kU64: v.u = c.read<uint64_t>("value"); break;
      case GgufValueType::kI64: v.i = c.read<int64_t>("value"); v.is_signed = true; break;
      case GgufValueType::kF32: v.f = c.read<float>("value"); break;
      case GgufValueType::kF64: v.f = c.read<double>("value"); break;
      case GgufValueType::kBool: {
        const uint8_t b = c.read<uint8_t>("value");
        if (b > 1) throw GgufError("corrupt GGUF file: metadata key '" + key + "' has bool value " + std::to_string(b));
        v.u = b;
        break;
      }
      case GgufValueType::kString: v.s = c.string("string value"); break;
      case GgufValueType::kArray: {
        const uint32_t at = c.read<uint32_t>("array type");
        check_value_type(at, key);
        v.array_type = static_cast<GgufValueType>(at);
        v.array_length = c.read<uint64_t>("array length");
        skip_array(c, v.array_type, v.array_length, key, 1);
        break;
      }
    }
    if (v.is_signed) v.u = static_cast<uint64_t>(v.i);
    else v.i = static_cast<int64_t>(v.u);
    kv_[std::move(key)] = std::move(v);
  }

  uint64_t alignment = 32;
  if (const GgufValue* a = find("general.alignment")) {
    if (!a->is_integer() || a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > 65536) {
      throw GgufError("corrupt GGUF file: general.alignment must be a power of two");
    }
    alignment = a->u;
  }

  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = c.string("tensor name");
    const uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > 4) {
      throw GgufError("corrupt GGUF file: tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions");
    }
    uint64_t elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = c.read<uint64_t>("tensor dimension");
      if (dim == 0 || dim > (uint64_t{1} << 40) || elems > (uint64_t{1} << 42) / dim) {
        throw GgufError("corrupt GGUF file: tensor '" + t.name + "' has a bad dimension " + std::to_string(dim));
      }
      elems *= dim;
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    const uint32_t type = c.read<uint32_t>("tensor type");
    const TypeInfo* info = type_info(type);
    if (info == nullptr) {
      const char* name = ggml_type_name(type);
      throw GgufError("unsupported tensor type " + (name ? std::string(name) + " (" + std::to_string(type) + ")" : std::to_string(type)) +
                      " for tensor '" + t.name + "' (supported: " + supported_type_names() + ")");
    }
    t.type = static_cast<Type>(type);
    if (t.dims[0] % info->block_elems != 0) {
      throw GgufError("corrupt GGUF file: tensor '" + t.name + "' row of " + std::to_string(t.dims[0]) +
                      " elements is not a multiple of the " + info->name + " block size");
    }
    t.bytes = elems / info->block_elems * info->block_bytes;
    t.offset = c.read<uint64_t>("tensor offset");
    if (t.offset % alignment != 0) {
      throw GgufError("corrupt GGUF file: tensor '" + t.name + "' offset is not aligned to " + std::to_string(alignment));
    }
    if (tensor_index_.count(t.name) != 0) throw GgufError("corrupt GGUF file: duplicate tensor '" + t.name + "'");
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  const uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  for (GgufTensor& t : tensors_) {
    if (data_start > size_ || t.offset > size_ - data_start || t.bytes > size_ - data_start - t.offset) {
      throw GgufError("truncated GGUF file: tensor '" + t.name + "' data (" + std::to_string(t.bytes) +
                      " bytes at offset " + std::to_string(t.offset) + ") runs past the end of the file");
    }
    t.data = base_ + data_start + t.offset;
    // The mapping is page-aligned; f32 rows need 4-byte and f16/block rows 2-byte alignment.
    const uintptr_t need = t.type == Type::kF32 ? 4 : 2;
    if (reinterpret_cast<uintptr_t>(t.data) % need != 0) {
      throw GgufError("corrupt GGUF file: tensor '" + t.name + "' data is misaligned");
    }
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != GgufValueType::kString) {
    throw GgufError("metadata key '" + key + "' is a " + value_type_name(static_cast<uint32_t>(v->type)) + ", expected a string");
  }
  return v->s;
}

std::optional<uint64_t> GgufFile::get_uint(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_integer() || (v->is_signed && v->i < 0)) {
    throw GgufError("metadata key '" + key + "' must be a non-negative integer");
  }
  return v->u;
}

std::optional<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->is_integer()) return v->is_signed ? static_cast<double>(v->i) : static_cast<double>(v->u);
  throw GgufError("metadata key '" + key + "' must be a number");
}

}  // namespace platform::ggml
