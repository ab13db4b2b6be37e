#include "graph.h"

#include <algorithm>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "../core/thread_pool.h"

namespace platform::tabular {
namespace {

const KernelRegistry& registry() {
  static const KernelRegistry* r = [] {
    auto* reg = new KernelRegistry();
    add_elementwise_kernels(*reg);
    add_linalg_kernels(*reg);
    add_shape_kernels(*reg);
    add_nn_kernels(*reg);
    add_ml_linear_kernels(*reg);
    add_ml_encode_kernels(*reg);
    add_ml_tree_kernels(*reg);
    return reg;
  }();
  return *r;
}

std::string qualified(const NodeDesc& n) {
  return n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
}

std::string node_label(const NodeDesc& n) {
  return "node \"" + n.name + "\" (operator \"" + qualified(n) + "\")";
}

// Prefixes a kernel's message with the node, once.
[[noreturn]] void rethrow_for(const std::string& label) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(label + ": out of memory");
  } catch (const std::exception& e) {
    throw std::runtime_error(label + ": " + e.what());
  } catch (...) {
    throw std::runtime_error(label + ": unknown error");
  }
}

ValueInfo info_from_desc(const ValueDesc& d) {
  ValueInfo v;
  if (d.kind != ValueDesc::Kind::kTensor) return v;
  v.dtype = d.dtype;
  v.has_shape = d.has_shape;
  v.dims = d.dims;
  return v;
}

}  // namespace

std::shared_ptr<const Graph> Graph::compile(const ModelDesc& model, const CompileOptions& options) {
  auto g = std::shared_ptr<Graph>(new Graph());
  g->inputs_ = model.inputs;
  g->outputs_ = model.outputs;
  g->threads_ = resolve_thread_count(options.threads);

  std::unordered_map<std::string, int> ids;
  std::vector<ValueInfo> infos;
  auto define = [&](const std::string& name, const std::string& by) -> int {
    if (name.empty()) fail(by + " defines a value with an empty name");
    if (ids.count(name)) fail(by + " defines \"" + name + "\", which is already defined");
    const int id = static_cast<int>(infos.size());
    ids.emplace(name, id);
    infos.emplace_back();
    g->constants_.emplace_back();
    return id;
  };

  if (model.inputs.empty()) fail("the graph has no inputs");
  if (model.outputs.empty()) fail("the graph has no outputs");
  for (const auto& in : model.inputs) {
    if (in.kind != ValueDesc::Kind::kTensor || in.dtype == DType::kUndefined) {
      fail("graph input \"" + in.name + "\" must be a tensor of a supported element type");
    }
    const int id = define(in.name, "graph input \"" + in.name + "\"");
    infos[id] = info_from_desc(in);
    g->input_ids_.push_back(id);
  }
  for (const auto& init : model.initializers) {
    const int id = define(init.name, "initializer \"" + init.name + "\"");
    g->constants_[id] = init.tensor;
    ValueInfo& v = infos[id];
    v.dtype = init.tensor.dtype();
    v.has_shape = true;
    v.dims = init.tensor.shape();
    v.constant = &init.tensor;  // `model` outlives compilation; factories read it only then
    g->initializer_bytes_ += static_cast<int64_t>(init.tensor.size()) *
                             static_cast<int64_t>(std::max<size_t>(dtype_size(init.tensor.dtype()), 1));
  }

  const auto& reg = registry();
  std::unordered_set<std::string> seen_ops;
  for (const auto& nd : model.nodes) {
    const std::string label = node_label(nd);
    const std::string q = qualified(nd);
    if (!seen_ops.count(q)) {
      seen_ops.insert(q);
      g->operators_.push_back(q);
    }
    auto factory = reg.find(nd.domain + ":" + nd.op_type);
    if (factory == reg.end()) fail(label + " is not supported by the executor");

    Node node;
    node.label = label;
    std::vector<const ValueInfo*> in_infos;
    for (const auto& name : nd.inputs) {
      if (name.empty()) {
        node.inputs.push_back(-1);
        in_infos.push_back(nullptr);
        continue;
      }
      auto it = ids.find(name);
      if (it == ids.end()) {
        fail(label + " reads \"" + name + "\", which no earlier node, graph input or initializer defines");
      }
      if (infos[it->second].is_map) {
        fail(label + " reads \"" + name +
             "\", a ZipMap output (a sequence of maps), which can only be a graph output");
      }
      node.inputs.push_back(it->second);
      in_infos.push_back(&infos[it->second]);
    }
    // Trailing omitted inputs do not count as given.
    while (!in_infos.empty() && in_infos.back() == nullptr) {
      in_infos.pop_back();
      node.inputs.pop_back();
    }

    CompileContext ctx(nd, in_infos);
    try {
      node.kernel = factory->second(ctx);
    } catch (...) {
      rethrow_for(label);
    }
    ctx.outputs.resize(nd.outputs.size());
    for (size_t k = 0; k < nd.outputs.size(); ++k) {
      if (nd.outputs[k].empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      const int id = define(nd.outputs[k], label);
      infos[id] = ctx.outputs[k];
      node.outputs.push_back(id);
    }
    g->nodes_.push_back(std::move(node));
  }

  for (const auto& out : model.outputs) {
    auto it = ids.find(out.name);
    if (it == ids.end()) fail("graph output \"" + out.name + "\" is not produced by any node, input or initializer");
    const ValueInfo& v = infos[it->second];
    if (out.kind == ValueDesc::Kind::kSequenceMap && !v.is_map) {
      fail("graph output \"" + out.name + "\" is declared as a sequence of maps but is not a ZipMap output");
    }
    if (out.kind == ValueDesc::Kind::kTensor) {
      if (v.is_map) fail("graph output \"" + out.name + "\" is declared as a tensor but is a ZipMap output");
      if (v.dtype != DType::kUndefined && out.dtype != DType::kUndefined && v.dtype != out.dtype) {
        fail(std::string("graph output \"") + out.name + "\" is declared " + dtype_name(out.dtype) +
             " but the graph produces " + dtype_name(v.dtype));
      }
    }
    g->output_ids_.push_back(it->second);
  }

  // Liveness: a value dies after its last reader unless it is a graph output or a constant.
  g->value_count_ = static_cast<int>(infos.size());
  std::vector<int> last_reader(infos.size(), -1);
  for (size_t n = 0; n < g->nodes_.size(); ++n) {
    for (int id : g->nodes_[n].inputs) {
      if (id >= 0) last_reader[id] = static_cast<int>(n);
    }
  }
  std::vector<bool> pinned(infos.size(), false);
  for (int id : g->output_ids_) pinned[id] = true;
  for (size_t id = 0; id < infos.size(); ++id) {
    if (g->constants_[id].defined()) pinned[id] = true;
  }
  for (size_t n = 0; n < g->nodes_.size(); ++n) {
    Node& node = g->nodes_[n];
    node.last_use.assign(node.inputs.size(), false);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int id = node.inputs[k];
      if (id < 0 || pinned[id] || last_reader[id] != static_cast<int>(n)) continue;
      const bool repeated = std::count(node.inputs.begin(), node.inputs.end(), id) > 1;
      node.last_use[k] = !repeated;
      if (std::find(node.release.begin(), node.release.end(), id) == node.release.end()) {
        node.release.push_back(id);
      }
    }
    // Outputs nobody reads are dropped at once.
    for (int id : node.outputs) {
      if (id >= 0 && last_reader[id] < 0 && !pinned[id]) node.release.push_back(id);
    }
  }
  return g;
}

std::vector<Tensor> Graph::check_inputs(std::vector<NamedTensor> given) const {
  std::vector<Tensor> ordered(inputs_.size());
  std::vector<bool> set(inputs_.size(), false);
  for (auto& nt : given) {
    size_t k = 0;
    while (k < inputs_.size() && inputs_[k].name != nt.name) ++k;
    if (k == inputs_.size()) {
      std::string names;
      for (const auto& d : inputs_) names += (names.empty() ? "\"" : ", \"") + d.name + "\"";
      throw InputError("unknown input \"" + nt.name + "\"; the model's inputs are " + names, false);
    }
    if (set[k]) throw InputError("input \"" + nt.name + "\" is given twice", false);
    const ValueDesc& d = inputs_[k];
    const Tensor& t = nt.tensor;
    if (t.dtype() != d.dtype) {
      throw InputError(std::string("input \"") + d.name + "\" must hold " + dtype_name(d.dtype) + " elements, not " +
                           dtype_name(t.dtype()),
                       true);
    }
    if (d.has_shape) {
      bool ok = t.rank() == d.dims.size();
      for (size_t i = 1; ok && i < d.dims.size(); ++i) {
        if (d.dims[i] >= 0 && d.dims[i] != t.dim(i)) ok = false;
      }
      if (!ok) {
        throw InputError("input \"" + d.name + "\" has shape " + shape_str(t.shape()) + " but the model declares " +
                             dims_str(d.dims) + " (the first dimension may be any batch size)",
                         false);
      }
    }
    ordered[k] = std::move(nt.tensor);
    set[k] = true;
  }
  for (size_t k = 0; k < inputs_.size(); ++k) {
    if (!set[k]) throw InputError("missing input \"" + inputs_[k].name + "\"", false);
  }
  return ordered;
}

std::vector<GraphOutput> Graph::run(std::vector<Tensor> inputs, const RunOptions& options) const {
  if (inputs.size() != input_ids_.size()) {
    throw std::invalid_argument("Graph::run: expected " + std::to_string(input_ids_.size()) + " inputs");
  }
  const int threads = options.threads > 0 ? resolve_thread_count(options.threads) : threads_;
  std::vector<Tensor> slots(static_cast<size_t>(value_count_));
  for (size_t id = 0; id < constants_.size(); ++id) {
    if (constants_[id].defined()) slots[id] = constants_[id];
  }
  for (size_t k = 0; k < inputs.size(); ++k) slots[input_ids_[k]] = std::move(inputs[k]);

  for (const Node& node : nodes_) {
    std::vector<const Tensor*> in(node.inputs.size(), nullptr);
    std::vector<Tensor*> reusable(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int id = node.inputs[k];
      if (id < 0) continue;
      in[k] = &slots[id];
      if (node.last_use[k]) reusable[k] = &slots[id];
    }
    KernelContext ctx(std::move(in), std::move(reusable), node.outputs.size(), threads);
    try {
      node.kernel->run(ctx);
    } catch (...) {
      rethrow_for(node.label);
    }
    auto& outs = ctx.outputs();
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int id = node.outputs[k];
      if (id < 0) continue;
      if (!outs[k].defined()) throw std::logic_error(node.label + ": output " + std::to_string(k) + " was not set");
      slots[id] = std::move(outs[k]);
    }
    for (int id : node.release) slots[id] = Tensor();
  }

  std::vector<GraphOutput> result;
  result.reserve(output_ids_.size());
  for (size_t k = 0; k < output_ids_.size(); ++k) {
    result.push_back(GraphOutput{outputs_[k].name, slots[output_ids_[k]]});
  }
  return result;
}

}  // namespace platform::tabular
