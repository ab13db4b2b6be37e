#include "graph.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "../core/thread_pool.h"

namespace platform::tabular {
namespace {

const OpRegistry& registry() {
  static const OpRegistry* r = [] {
    auto* reg = new OpRegistry();
    add_elementwise_ops(*reg);
    add_linalg_ops(*reg);
    add_shape_ops(*reg);
    add_nn_ops(*reg);
    add_ml_linear_ops(*reg);
    add_ml_encode_ops(*reg);
    add_ml_tree_ops(*reg);
    add_ml_svm_ops(*reg);
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

// Prefixes an operator's message with the node, once.
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

// The crossover row count when CompileOptions does not give one.
int64_t default_cuda_min_rows() {
  const char* env = std::getenv("PLATFORM_TABULAR_CUDA_MIN_ROWS");
  if (env == nullptr || *env == '\0') return kDefaultCudaMinRows;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  if (*end != '\0' || v < 0 || v > (1LL << 40)) {
    fail(std::string("PLATFORM_TABULAR_CUDA_MIN_ROWS must be a non-negative integer, got \"") + env + "\"");
  }
  return v;
}

int64_t attr_int_or(const NodeDesc& n, const char* name, int64_t fallback) {
  auto it = n.attributes.find(name);
  return it != n.attributes.end() && it->second.kind == Attribute::Kind::kInt ? it->second.i : fallback;
}

double attr_float_or(const NodeDesc& n, const char* name, double fallback) {
  auto it = n.attributes.find(name);
  return it != n.attributes.end() && it->second.kind == Attribute::Kind::kFloat ? it->second.f : fallback;
}

// Values a device layer can add per output element: one value ([], [1], [1, 1]) or one per column
// ([N], [1, N]). Returns the count, or 0 when `t` is not such a float bias.
int64_t bias_length(const Tensor& t, int64_t N) {
  if (!t.defined() || t.dtype() != DType::kFloat || t.rank() > 2) return 0;
  if (t.rank() == 2 && t.dim(0) != 1) return 0;
  if (t.size() == 1) return 1;
  if (t.rank() >= 1 && t.dim(t.rank() - 1) == N && t.size() == N) return N;
  return 0;
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
  if (options.device == Device::kCuda) {
    const std::string why = gemm_device_unavailable();
    if (!why.empty()) throw DeviceUnavailableError("instance type cuda is not available on this host: " + why);
    g->cuda_min_rows_ = options.cuda_min_rows >= 0 ? options.cuda_min_rows : default_cuda_min_rows();
    g->device_ = open_gemm_device(0);
  }

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
    ctx.device = g->device_;
    ctx.device_min_rows = g->cuda_min_rows_;
    try {
      node.op = factory->second(ctx);
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
  if (g->device_) g->plan_device_chains(model, infos);
  return g;
}

void Graph::plan_device_chains(const ModelDesc& model, const std::vector<ValueInfo>& infos) {
  std::vector<int> readers(static_cast<size_t>(value_count_), 0);
  for (const Node& node : nodes_) {
    for (int id : node.inputs) {
      if (id >= 0) ++readers[id];
    }
  }
  std::vector<bool> is_output(static_cast<size_t>(value_count_), false);
  for (int id : output_ids_) is_output[id] = true;
  std::unordered_map<int, DeviceBufferId> uploaded;  // value id -> device buffer
  auto upload = [&](int id) {
    auto it = uploaded.find(id);
    if (it != uploaded.end()) return it->second;
    const Tensor& t = constants_[id];
    const DeviceBufferId b = device_->upload(t.data<float>(), t.size());
    uploaded.emplace(id, b);
    return b;
  };

  // Node n as a device product: a float Gemm (transA 0) or MatMul whose B is a constant matrix.
  auto product = [&](size_t n, DeviceLayer& layer, int& a_id) -> bool {
    const NodeDesc& nd = model.nodes[n];
    const Node& node = nodes_[n];
    const bool gemm = nd.op_type == "Gemm", matmul = nd.op_type == "MatMul";
    if (!nd.domain.empty() || (!gemm && !matmul)) return false;
    if (node.inputs.size() < 2 || node.inputs[0] < 0 || node.inputs[1] < 0) return false;
    if (node.outputs.size() != 1 || node.outputs[0] < 0) return false;
    const Tensor& b = constants_[node.inputs[1]];
    if (!b.defined() || b.dtype() != DType::kFloat || b.rank() != 2) return false;
    const ValueInfo& a = infos[node.inputs[0]];
    if (a.dtype != DType::kFloat || a.constant != nullptr || (a.has_shape && a.rank() != 2)) return false;
    DeviceLayer l;
    int bias_id = -1;
    if (gemm) {
      if (attr_int_or(nd, "transA", 0) != 0) return false;
      l.trans_b = attr_int_or(nd, "transB", 0) != 0;
      l.K = l.trans_b ? b.dim(1) : b.dim(0);
      l.N = l.trans_b ? b.dim(0) : b.dim(1);
      l.alpha = static_cast<float>(attr_float_or(nd, "alpha", 1.0));
      l.beta = static_cast<float>(attr_float_or(nd, "beta", 1.0));
      if (node.inputs.size() >= 3 && node.inputs[2] >= 0) {
        l.bias_len = bias_length(constants_[node.inputs[2]], l.N);
        if (l.bias_len == 0) return false;  // C a full matrix or not constant: per node
        bias_id = node.inputs[2];
      }
    } else {
      l.K = b.dim(0);
      l.N = b.dim(1);
    }
    if (a.has_shape && a.dims[1] >= 0 && a.dims[1] != l.K) return false;  // the operator reports it
    l.weight = upload(node.inputs[1]);
    if (bias_id >= 0) l.bias = upload(bias_id);
    layer = l;
    a_id = node.inputs[0];
    return true;
  };
  // Value v flows only into node n (so nothing else needs it materialised on the host).
  auto only_into = [&](int v, size_t n) {
    if (n >= nodes_.size() || readers[v] != 1 || is_output[v]) return false;
    const auto& in = nodes_[n].inputs;
    return std::find(in.begin(), in.end(), v) != in.end() && nodes_[n].outputs.size() == 1 && nodes_[n].outputs[0] >= 0;
  };

  for (size_t n = 0; n < nodes_.size(); ++n) {
    DeviceChain c;
    DeviceLayer layer;
    int a_id = -1;
    if (!product(n, layer, a_id)) continue;
    c.first = n;
    c.input = a_id;
    c.layers.push_back(layer);
    size_t cur = n;
    int v = nodes_[n].outputs[0];
    bool activated = false;
    while (only_into(v, cur + 1)) {
      const size_t next = cur + 1;
      const NodeDesc& nd = model.nodes[next];
      const Node& node = nodes_[next];
      DeviceLayer& last = c.layers.back();
      if (!nd.domain.empty()) break;
      if (nd.op_type == "Add" && !activated && last.bias < 0 && node.inputs.size() == 2) {
        const int other = node.inputs[0] == v ? node.inputs[1] : node.inputs[0];
        const int64_t len = other >= 0 ? bias_length(constants_[other], last.N) : 0;
        if (len == 0 || other == v) break;
        last.bias = upload(other);
        last.bias_len = len;
        last.beta = 1.0f;
      } else if ((nd.op_type == "Relu" || nd.op_type == "Sigmoid" || nd.op_type == "Tanh") && !activated &&
                 node.inputs.size() == 1) {
        last.activation = nd.op_type == "Relu"      ? DeviceActivation::kRelu
                          : nd.op_type == "Sigmoid" ? DeviceActivation::kSigmoid
                                                    : DeviceActivation::kTanh;
        activated = true;
      } else {
        DeviceLayer l2;
        int a2 = -1;
        if (!product(next, l2, a2) || a2 != v || l2.K != last.N) break;
        c.layers.push_back(l2);
        activated = false;
      }
      cur = next;
      v = nodes_[next].outputs[0];
    }
    c.end = cur + 1;
    c.output = v;
    nodes_[n].chain = static_cast<int>(chains_.size());
    chains_.push_back(std::move(c));
    n = cur;
  }
}

bool Graph::run_chain(const DeviceChain& c, std::vector<Tensor>& slots) const {
  const Tensor& x = slots[c.input];
  // Anything unexpected (a bad input the operators will name, a small batch) runs node by node.
  if (!x.defined() || x.dtype() != DType::kFloat || x.rank() != 2 || x.dim(1) != c.layers.front().K ||
      x.dim(0) < cuda_min_rows_) {
    return false;
  }
  const int64_t M = x.dim(0);
  Tensor y(DType::kFloat, {M, c.layers.back().N});
  device_->run_layers(c.layers.data(), c.layers.size(), M, x.data<float>(), std::max<int64_t>(x.dim(1), 1),
                      y.data<float>());
  slots[c.output] = std::move(y);
  return true;
}

std::string Graph::device_name() const { return device_ ? device_->name() : ""; }

size_t Graph::device_layers() const {
  size_t n = 0;
  for (const DeviceChain& c : chains_) n += c.layers.size();
  return n;
}

int64_t Graph::device_bytes() const { return device_ ? device_->resident_bytes() : 0; }

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

  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    if (node.chain >= 0) {
      const DeviceChain& c = chains_[static_cast<size_t>(node.chain)];
      bool ran = false;
      try {
        ran = run_chain(c, slots);
      } catch (...) {
        const size_t more = c.end - c.first - 1;
        rethrow_for(node.label + (more ? " and the " + std::to_string(more) + " nodes after it" : std::string()) +
                    ", on the CUDA device");
      }
      if (ran) {
        for (size_t k = c.first; k < c.end; ++k) {
          for (int id : nodes_[k].release) slots[id] = Tensor();
        }
        n = c.end - 1;
        continue;
      }
    }
    std::vector<const Tensor*> in(node.inputs.size(), nullptr);
    std::vector<Tensor*> reusable(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int id = node.inputs[k];
      if (id < 0) continue;
      in[k] = &slots[id];
      if (node.last_use[k]) reusable[k] = &slots[id];
    }
    OpContext ctx(std::move(in), std::move(reusable), node.outputs.size(), threads);
    try {
      node.op->run(ctx);
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
