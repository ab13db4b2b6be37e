// A compiled tabular ONNX graph: value slots, one kernel per node in the given topological order,
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

#include "kernel.h"
#include "model.h"
#include "tensor.h"

namespace platform::tabular {

struct CompileOptions {
  // Threads per run; <= 0: the engine default (PLATFORM_THREADS or the hardware threads).
  int threads = 0;
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
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;   // value ids, -1 for an omitted optional input
    std::vector<int> outputs;  // value ids, -1 for an omitted optional output
    std::vector<bool> last_use;  // per input: no later node or graph output reads it
    std::vector<int> release;    // values to free after this node
  };

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
};

}  // namespace platform::tabular
