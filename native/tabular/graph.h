// A compiled tabular ONNX graph: value slots, one operator per node in the given topological order,
// and for each node the values that die after it (freed as soon as their last reader has run, so
// a long MLP holds at most a few activations at a time).
//
// Graph::compile validates the whole model (operators, attributes, statically known types and
// shapes, dangling references) and throws std::runtime_error naming the node and operator. A
// compiled Graph is immutable: run() may be called from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../backends/tabular_device.h"
#include "op.h"
#include "model.h"
#include "tensor.h"

namespace platform::tabular {

// Where float Gemm / MatMul products run. Every other operator always runs on the CPU.
enum class Device { kCpu, kCuda };

// Rows (the first dimension of a product's A) from which a model compiled for CUDA runs its
// products on the device; smaller batches stay on the CPU, where they are faster. Overridden per
// model by CompileOptions::cuda_min_rows, or for the process by PLATFORM_TABULAR_CUDA_MIN_ROWS.
constexpr int64_t kDefaultCudaMinRows = 256;

struct CompileOptions {
  // Threads per run; <= 0: the engine default (PLATFORM_THREADS or the hardware threads).
  int threads = 0;
  // kCuda: compile fails unless the addon has the CUDA backend and device 0 is usable.
  Device device = Device::kCpu;
  // < 0: PLATFORM_TABULAR_CUDA_MIN_ROWS when set, else kDefaultCudaMinRows. 0: always the device.
  int64_t cuda_min_rows = -1;
};

struct RunOptions {
  // <= 0: the model's compile-time setting.
  int threads = 0;
};

// Thrown by check_inputs for a bad input: `type_error` is true for a wrong element type (the
// addon raises TypeError), false for names and shapes (RangeError).
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& message, bool type_error)
      : std::runtime_error(message), type_error_(type_error) {}
  bool type_error() const { return type_error_; }

 private:
  bool type_error_;
};

// Compiling for a device that this build or this machine cannot use (CompileOptions::device).
class DeviceUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GraphOutput {
  std::string name;
  Tensor tensor;  // ZipMap outputs carry map_keys()
};

class Graph {
 public:
  static std::shared_ptr<const Graph> compile(const ModelDesc& model, const CompileOptions& options = {});

  const std::vector<ValueDesc>& inputs() const { return inputs_; }
  const std::vector<ValueDesc>& outputs() const { return outputs_; }
  size_t node_count() const { return nodes_.size(); }
  // Distinct qualified operators ("Gemm", "ai.onnx.ml.TreeEnsembleClassifier"), in first-use order.
  const std::vector<std::string>& operators() const { return operators_; }
  int64_t initializer_bytes() const { return initializer_bytes_; }
  int threads() const { return threads_; }
  Device device() const { return device_ ? Device::kCuda : Device::kCpu; }
  // CUDA only: the crossover row count, the device's name, the layers run as device chains (of
  // the Gemm / MatMul nodes, with their fused bias Adds and activations) and the bytes of weights
  // kept on the device.
  int64_t cuda_min_rows() const { return cuda_min_rows_; }
  std::string device_name() const;
  size_t device_layers() const;
  int64_t device_bytes() const;

  // Validates named inputs against the declared graph inputs: every input given exactly once, no
  // unknown names, the declared element type, the declared rank, and every fixed dimension except
  // the first (the batch dimension: the host batches rows, and converters often declare 1 there).
  // Returns the tensors in declaration order. Throws InputError.
  std::vector<Tensor> check_inputs(std::vector<NamedTensor> inputs) const;

  // Runs the graph on inputs in declaration order (as check_inputs returns them).
  std::vector<GraphOutput> run(std::vector<Tensor> inputs, const RunOptions& options = {}) const;

 private:
  struct Node {
    std::string label;  // node "<name>" (operator "<op>")
    std::unique_ptr<Op> op;
    std::vector<int> inputs;   // value ids, -1 for an omitted optional input
    std::vector<int> outputs;  // value ids, -1 for an omitted optional output
    std::vector<bool> last_use;  // per input: no later node or graph output reads it
    std::vector<int> release;    // values to free after this node
    int chain = -1;              // on a device: index in chains_ of the device chain this node starts
  };

  // Consecutive nodes [first, end) that run as one device call when their input has enough rows:
  // Gemm (transA 0) / MatMul with a constant 2-D float B, each optionally followed by an Add of a
  // constant bias row (MatMul, or Gemm without C) and by Relu, Sigmoid or Tanh; every value between
  // them read only by the next node. Otherwise the nodes run one by one as usual.
  struct DeviceChain {
    size_t first = 0, end = 0;
    int input = -1;   // value id of the first product's A
    int output = -1;  // value id of the last node's output
    std::vector<DeviceLayer> layers;
  };

  void plan_device_chains(const ModelDesc& model, const std::vector<ValueInfo>& infos);
  // True when chain c ran (on the device) for these slots; false: run its nodes on the CPU.
  bool run_chain(const DeviceChain& c, std::vector<Tensor>& slots) const;

  std::vector<ValueDesc> inputs_;
  std::vector<ValueDesc> outputs_;
  std::vector<int> input_ids_;
  std::vector<int> output_ids_;
  std::vector<Tensor> constants_;  // by value id (undefined for non-constants)
  std::vector<Node> nodes_;
  int value_count_ = 0;
  std::vector<std::string> operators_;
  int64_t initializer_bytes_ = 0;
  int threads_ = 1;
  std::shared_ptr<GemmDevice> device_;  // null: CPU only
  int64_t cuda_min_rows_ = 0;
  std::vector<DeviceChain> chains_;
};

}  // namespace platform::tabular
