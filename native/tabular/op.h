// The ONNX operator interface of the tabular executor: what one node compiles to (an Op) and what
// it sees when it compiles and runs. ("Kernel" here means only a compute routine: a SIMD
// micro-kernel or a CUDA kernel; see native/README.md, Naming.)
//
// Compilation: for each node the graph calls the operator's factory with a CompileContext that
// holds the node's attributes and what is statically known of its inputs (element type, shape with
// -1 for unknown dimensions, the value when it is an initializer). The factory validates the
// attributes, checks whatever is static, fills in the output ValueInfos and returns an Op.
// Execution: Op::run gets an OpContext with the input tensors and sets the outputs. It
// re-checks everything at run time (shapes, types), since static information is partial.
//
// Errors: ops and factories throw std::runtime_error with a plain message ("A has 4 columns
// but B has 3 rows"); the graph prefixes it with the node and operator, so no message needs to
// name them. Ops are const and hold no per-run state: one compiled model may run on several
// threads at once.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../backends/tabular_device.h"
#include "model.h"
#include "tensor.h"

namespace platform::tabular {

// Static knowledge of a value at compile time.
struct ValueInfo {
  DType dtype = DType::kUndefined;  // kUndefined: not known
  bool has_shape = false;           // rank known
  Shape dims;                       // -1: unknown dimension
  const Tensor* constant = nullptr;  // set for initializers
  bool is_map = false;               // a ZipMap output (seq(map)), usable only as a graph output

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool fully_known() const;
  static ValueInfo of_type(DType t) {
    ValueInfo v;
    v.dtype = t;
    return v;
  }
  static ValueInfo of(DType t, Shape dims) {
    ValueInfo v;
    v.dtype = t;
    v.has_shape = true;
    v.dims = std::move(dims);
    return v;
  }
};

[[noreturn]] void fail(const std::string& message);

std::string dims_str(const Shape& dims);  // like shape_str, with '?' for -1

class CompileContext {
 public:
  CompileContext(const NodeDesc& node, std::vector<const ValueInfo*> inputs);

  const NodeDesc& node() const { return node_; }
  int version() const { return node_.version; }

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Throws when the input is absent.
  const ValueInfo& input(size_t i) const;
  // Checks the number of inputs given (optional trailing ones may be absent).
  void expect_inputs(size_t min, size_t max) const;
  void expect_outputs(size_t min, size_t max) const;
  size_t num_outputs() const { return node_.outputs.size(); }

  // Element type check: the input's type when known must be one of `allowed`.
  void expect_type(size_t input, std::initializer_list<DType> allowed) const;

  bool has_attr(const char* name) const;
  double attr_float(const char* name) const;
  double attr_float(const char* name, double fallback) const;
  int64_t attr_int(const char* name) const;
  int64_t attr_int(const char* name, int64_t fallback) const;
  std::string attr_string(const char* name) const;
  std::string attr_string(const char* name, const std::string& fallback) const;
  std::vector<double> attr_floats(const char* name) const;  // absent: empty
  std::vector<int64_t> attr_ints(const char* name) const;   // absent: empty
  std::vector<std::string> attr_strings(const char* name) const;
  const Tensor& attr_tensor(const char* name) const;

  // Set by the factory: one per node output.
  std::vector<ValueInfo> outputs;

  // Set by the graph when it compiles for a device: float Gemm / MatMul ops that the graph does not
  // run as a device chain may run a product of at least `device_min_rows` rows on this device.
  std::shared_ptr<GemmDevice> device;
  int64_t device_min_rows = 0;

 private:
  const Attribute& attr(const char* name, Attribute::Kind kind, const char* what) const;
  const NodeDesc& node_;
  std::vector<const ValueInfo*> inputs_;
};

class OpContext {
 public:
  OpContext(std::vector<const Tensor*> inputs, std::vector<Tensor*> reusable, size_t num_outputs,
                int threads);

  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const;
  void set_output(size_t i, Tensor t);
  std::vector<Tensor>& outputs() { return outputs_; }
  int threads() const { return threads_; }

  // A new tensor of `type` and `shape` for an output. When input `i` dies at this node (no later
  // node or graph output reads it), its buffer is held by nothing else and has exactly the right
  // size, the output takes that buffer instead of allocating: elementwise ops then compute in
  // place. Reading input i's element k before writing output element k is always safe.
  Tensor output_like(size_t i, DType type, const Shape& shape);

 private:
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> reusable_;  // per input: the graph's slot when the input dies here, else null
  std::vector<Tensor> outputs_;
  int threads_;
};

class Op {
 public:
  virtual ~Op() = default;
  virtual void run(OpContext& ctx) const = 0;
};

using OpFactory = std::unique_ptr<Op> (*)(CompileContext& ctx);
// Key: "<domain>:<op_type>", domain '' for ai.onnx.
using OpRegistry = std::map<std::string, OpFactory>;

// One per operator family (ops_*.cc).
void add_elementwise_ops(OpRegistry& r);
void add_linalg_ops(OpRegistry& r);
void add_shape_ops(OpRegistry& r);
void add_nn_ops(OpRegistry& r);
void add_ml_linear_ops(OpRegistry& r);
void add_ml_encode_ops(OpRegistry& r);
void add_ml_tree_ops(OpRegistry& r);
void add_ml_svm_ops(OpRegistry& r);

// ---- helpers shared by the operator files ----

// Normalises an axis in [-rank, rank) (or [-rank, rank] with `inclusive`); throws otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* what, bool inclusive = false);

// numpy broadcasting of two static shapes (dims may be -1); throws when two known dimensions
// differ and neither is 1.
Shape broadcast_dims(const Shape& a, const Shape& b);
// Run-time broadcast of two concrete shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Applies an ML post_transform to a row of scores in place, the way onnxruntime's write_scores
// does for rows of two or more scores (NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT).
enum class PostTransform { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };
PostTransform parse_post_transform(const std::string& name);
float ml_logistic(float x);
float ml_probit(float x);
void apply_post_transform(float* scores, int64_t n, PostTransform t);

// ML operators' inputs: [N, F] or [F] (one row) of float, double, int64 or int32, computed in float.
inline const std::initializer_list<DType> kMlNumeric = {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32};
struct MlRows {
  int64_t n = 1, f = 1;
};
MlRows ml_rows(const Tensor& x);
// The input as float [N*F] (a view when it already is float).
const float* ml_as_float(const Tensor& x, std::vector<float>& scratch);
// Float attributes (stored as double) in the float the operators compute in.
std::vector<float> ml_floats(const std::vector<double>& v);

}  // namespace platform::tabular
