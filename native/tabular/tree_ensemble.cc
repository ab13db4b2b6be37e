// Reading the ONNX operators' attributes into a RawForest, and flattening it into a Forest.
#include "tree_ensemble.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "op.h"

namespace platform::tabular::trees {

Mode parse_mode(const std::string& name) {
  if (name == "BRANCH_LEQ") return Mode::kLeq;
  if (name == "BRANCH_LT") return Mode::kLt;
  if (name == "BRANCH_GTE") return Mode::kGte;
  if (name == "BRANCH_GT") return Mode::kGt;
  if (name == "BRANCH_EQ") return Mode::kEq;
  if (name == "BRANCH_NEQ") return Mode::kNeq;
  if (name == "BRANCH_MEMBER") return Mode::kMember;
  if (name == "LEAF") return Mode::kLeaf;
  throw std::runtime_error("node mode \"" + name + "\" is not supported");
}

// TreeEnsembleRegressor / TreeEnsembleClassifier: nodes identified by (tree id, node id).
RawForest read_v3_forest(const CompileContext& ctx, bool classifier, int64_t n_targets) {
  const auto tree_ids = ctx.attr_ints("nodes_treeids");
  const auto node_ids = ctx.attr_ints("nodes_nodeids");
  const auto features = ctx.attr_ints("nodes_featureids");
  const auto modes = ctx.attr_strings("nodes_modes");
  const auto values = ctx.attr_floats("nodes_values");
  const auto trues = ctx.attr_ints("nodes_truenodeids");
  const auto falses = ctx.attr_ints("nodes_falsenodeids");
  const auto missing = ctx.attr_ints("nodes_missing_value_tracks_true");
  const size_t n = tree_ids.size();
  if (n == 0) fail("has no tree nodes");
  if (node_ids.size() != n || features.size() != n || modes.size() != n || values.size() != n || trues.size() != n ||
      falses.size() != n || (!missing.empty() && missing.size() != n)) {
    fail("has nodes_* attributes of different lengths");
  }
  RawForest raw;
  raw.n_targets = n_targets;
  raw.nodes.resize(n);
  std::map<std::pair<int64_t, int64_t>, int64_t> index;
  std::map<int64_t, bool> seen_tree;
  for (size_t i = 0; i < n; ++i) {
    const auto key = std::make_pair(tree_ids[i], node_ids[i]);
    if (!index.emplace(key, static_cast<int64_t>(i)).second) {
      fail("node " + std::to_string(node_ids[i]) + " of tree " + std::to_string(tree_ids[i]) + " is defined twice");
    }
    // A tree's root is its first node in the attribute order (as in onnxruntime).
    if (seen_tree.emplace(tree_ids[i], true).second) raw.roots.push_back(static_cast<int64_t>(i));
    RawNode& r = raw.nodes[i];
    try {
      r.mode = parse_mode(modes[i]);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    if (r.mode == Mode::kMember) fail("node mode BRANCH_MEMBER needs ai.onnx.ml.TreeEnsemble");
    r.missing_true = !missing.empty() && missing[i] != 0;
    r.feature = features[i];
    r.value = values[i];
  }
  for (size_t i = 0; i < n; ++i) {
    RawNode& r = raw.nodes[i];
    if (r.mode == Mode::kLeaf) continue;
    auto child = [&](int64_t id, const char* which) {
      auto it = index.find({tree_ids[i], id});
      if (it == index.end()) {
        fail("node " + std::to_string(node_ids[i]) + " of tree " + std::to_string(tree_ids[i]) + " has the " + which +
             " child " + std::to_string(id) + ", which does not exist");
      }
      if (it->second == static_cast<int64_t>(i)) {
        fail("node " + std::to_string(node_ids[i]) + " of tree " + std::to_string(tree_ids[i]) + " is its own child");
      }
      return it->second;
    };
    r.true_child = child(trues[i], "true");
    r.false_child = child(falses[i], "false");
  }
  const char* p = classifier ? "class_" : "target_";
  const auto w_ids = ctx.attr_ints(classifier ? "class_ids" : "target_ids");
  const auto w_nodes = ctx.attr_ints(classifier ? "class_nodeids" : "target_nodeids");
  const auto w_trees = ctx.attr_ints(classifier ? "class_treeids" : "target_treeids");
  const auto w_values = ctx.attr_floats(classifier ? "class_weights" : "target_weights");
  if (w_nodes.size() != w_ids.size() || w_trees.size() != w_ids.size() || w_values.size() != w_ids.size()) {
    fail(std::string("has ") + p + "* attributes of different lengths");
  }
  for (size_t k = 0; k < w_ids.size(); ++k) {
    auto it = index.find({w_trees[k], w_nodes[k]});
    if (it == index.end()) {
      fail(std::string("has a weight for node ") + std::to_string(w_nodes[k]) + " of tree " + std::to_string(w_trees[k]) +
           ", which does not exist");
    }
    if (w_ids[k] < 0 || w_ids[k] >= n_targets) {
      fail(std::string(p) + "ids holds " + std::to_string(w_ids[k]) + " but there are " + std::to_string(n_targets) +
           (classifier ? " classes" : " targets"));
    }
    RawNode& leaf = raw.nodes[it->second];
    // Weights on branch nodes are ignored, as onnxruntime does (old converters wrote some).
    if (leaf.mode == Mode::kLeaf) leaf.weights.emplace_back(w_ids[k], w_values[k]);
  }
  return raw;
}

// TreeEnsemble-5: branch nodes by index, leaves in separate arrays, explicit roots.
RawForest read_v5_forest(const CompileContext& ctx, int64_t n_targets) {
  const auto features = ctx.attr_ints("nodes_featureids");
  const auto splits = ctx.attr_floats("nodes_splits");
  const auto modes = ctx.attr_strings("nodes_modes");
  const auto trues = ctx.attr_ints("nodes_truenodeids");
  const auto falses = ctx.attr_ints("nodes_falsenodeids");
  const auto true_leafs = ctx.attr_ints("nodes_trueleafs");
  const auto false_leafs = ctx.attr_ints("nodes_falseleafs");
  const auto missing = ctx.attr_ints("nodes_missing_value_tracks_true");
  const auto members = ctx.attr_floats("membership_values");
  const auto roots = ctx.attr_ints("tree_roots");
  const auto leaf_targets = ctx.attr_ints("leaf_targetids");
  const auto leaf_weights = ctx.attr_floats("leaf_weights");
  const size_t b = features.size();
  if (splits.size() != b || modes.size() != b || trues.size() != b || falses.size() != b || true_leafs.size() != b ||
      false_leafs.size() != b || (!missing.empty() && missing.size() != b)) {
    fail("has nodes_* attributes of different lengths");
  }
  if (leaf_targets.size() != leaf_weights.size()) fail("has leaf_targetids and leaf_weights of different lengths");
  if (roots.empty()) fail("has no trees (tree_roots is empty)");
  const size_t l = leaf_targets.size();
  RawForest raw;
  raw.n_targets = n_targets;
  raw.nodes.resize(b + l);
  size_t member_pos = 0;
  for (size_t i = 0; i < b; ++i) {
    RawNode& r = raw.nodes[i];
    try {
      r.mode = parse_mode(modes[i]);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    if (r.mode == Mode::kLeaf) fail("nodes_modes may not hold LEAF in TreeEnsemble (leaves are separate)");
    r.feature = features[i];
    r.value = splits[i];
    r.missing_true = !missing.empty() && missing[i] != 0;
    if (r.mode == Mode::kMember) {
      // membership_values holds one NaN-terminated run per BRANCH_MEMBER node, in node order.
      while (member_pos < members.size() && !std::isnan(members[member_pos])) r.members.push_back(members[member_pos++]);
      ++member_pos;
      if (r.members.empty()) fail("BRANCH_MEMBER node " + std::to_string(i) + " has no membership values");
    }
    auto target = [&](int64_t id, bool is_leaf, const char* which) -> int64_t {
      const size_t limit = is_leaf ? l : b;
      if (id < 0 || static_cast<size_t>(id) >= limit) {
        fail("node " + std::to_string(i) + " has the " + which + " " + (is_leaf ? "leaf " : "node ") + std::to_string(id) +
             ", which does not exist");
      }
      return is_leaf ? static_cast<int64_t>(b) + id : id;
    };
    r.true_child = target(trues[i], true_leafs[i] != 0, "true");
    r.false_child = target(falses[i], false_leafs[i] != 0, "false");
  }
  for (size_t k = 0; k < l; ++k) {
    if (leaf_targets[k] < 0 || leaf_targets[k] >= n_targets) {
      fail("leaf_targetids holds " + std::to_string(leaf_targets[k]) + " but n_targets is " + std::to_string(n_targets));
    }
    raw.nodes[b + k].weights.emplace_back(leaf_targets[k], leaf_weights[k]);
  }
  for (int64_t r : roots) {
    if (r < 0 || static_cast<size_t>(r) >= b) fail("tree_roots holds " + std::to_string(r) + ", which is not a node");
    // A tree that is a single leaf: both branches of its root name the same leaf.
    if (true_leafs[r] && false_leafs[r] && trues[r] == falses[r]) {
      raw.roots.push_back(static_cast<int64_t>(b) + trues[r]);
    } else {
      raw.roots.push_back(r);
    }
  }
  return raw;
}

template <typename TT>
Forest<TT> Forest<TT>::build(const RawForest& raw) {
  const int64_t count = static_cast<int64_t>(raw.nodes.size());
  if (count >= std::numeric_limits<int32_t>::max()) throw std::runtime_error("the ensemble has too many nodes");
  if (raw.n_targets < 1) throw std::runtime_error("the ensemble has no targets");
  for (int64_t r : raw.roots) {
    if (r < 0 || r >= count) throw std::runtime_error("tree root " + std::to_string(r) + " does not exist");
  }

  Forest f;
  f.n_targets = raw.n_targets;
  f.nodes.reserve(raw.nodes.size());
  std::vector<int32_t> flat_of(raw.nodes.size(), -1);
  std::vector<uint8_t> state(raw.nodes.size(), 0);  // 0 unseen, 1 on the current path, 2 done
  std::vector<int32_t> depth(raw.nodes.size(), 0);  // branches on the longest path below a node
  std::set<int64_t> targets;
  bool first_branch = true;
  bool single = true;

  // Outcome masks (see FlatNode::mask): which comparison outcomes take the true branch.
  auto mask_of = [](Mode m, bool missing) -> uint32_t {
    uint32_t k = 0;
    switch (m) {
      case Mode::kLeq: k = 0b0011; break;
      case Mode::kLt: k = 0b0001; break;
      case Mode::kGte: k = 0b0110; break;
      case Mode::kGt: k = 0b0100; break;
      case Mode::kEq: k = 0b0010; break;
      case Mode::kNeq: k = 0b1101; break;  // NaN != t is true
      default: break;
    }
    return missing ? (k | 0b1000) : k;
  };

  // Creates the flat node of raw node u (a branch's children are linked later).
  auto emit = [&](int64_t u) {
    const RawNode& n = raw.nodes[u];
    FlatNode<TT> fn{};
    const int32_t self = static_cast<int32_t>(f.nodes.size());
    std::pair<int32_t, int32_t> leaf_range{0, 0};
    uint16_t bits = 0;
    if (n.mode == Mode::kLeaf) {
      fn.feature = 0;
      fn.a = fn.b = self;
      leaf_range = {static_cast<int32_t>(f.weight_value.size()), static_cast<int32_t>(n.weights.size())};
      fn.value = n.weights.empty() ? TT(0) : static_cast<TT>(n.weights[0].second);
      for (const auto& [t, w] : n.weights) {
        if (t < 0 || t >= raw.n_targets) {
          throw std::runtime_error("a leaf weight is for target " + std::to_string(t) + " but there are " +
                                   std::to_string(raw.n_targets) + " targets or classes");
        }
        f.weight_target.push_back(static_cast<int32_t>(t));
        f.weight_value.push_back(static_cast<TT>(w));
        targets.insert(t);
        if (w < 0) f.all_weights_positive = false;
      }
      if (n.weights.size() != 1 || n.weights[0].first != 0) single = false;
    } else {
      if (n.feature < 0 || n.feature > kMaxFeature) {
        throw std::runtime_error("a branch reads feature " + std::to_string(n.feature) + ", which is out of range");
      }
      if (n.true_child < 0 || n.true_child >= count || n.false_child < 0 || n.false_child >= count) {
        throw std::runtime_error("a branch on feature " + std::to_string(n.feature) +
                                 " points to a child that does not exist");
      }
      TT value = static_cast<TT>(n.value);
      if (n.mode == Mode::kMember) {
        std::vector<TT> s;
        for (double m : n.members) s.push_back(static_cast<TT>(m));
        value = static_cast<TT>(f.sets.size());
        f.sets.push_back(std::move(s));
        f.any_member = true;
      }
      fn.value = value;
      fn.feature = static_cast<int32_t>(n.feature);
      bits = static_cast<uint16_t>(static_cast<uint32_t>(n.mode) | (n.missing_true ? (1u << 4) : 0u) |
                                   (mask_of(n.mode, n.missing_true) << 5));
      f.max_feature = std::max(f.max_feature, n.feature);
      if (n.missing_true) f.any_missing = true;
      if (first_branch) {
        f.uniform = n.mode;
        first_branch = false;
      } else if (f.uniform != n.mode) {
        f.uniform = Mode::kMixed;
      }
    }
    flat_of[u] = self;
    f.nodes.push_back(fn);
    f.flags.push_back(NodeFlags{bits});
    f.leaf_first.push_back(leaf_range.first);
    f.leaf_count.push_back(leaf_range.second);
  };

  struct Frame {
    int64_t node;
    int stage;
  };
  std::vector<Frame> stack;
  for (int64_t root : raw.roots) {
    if (state[root] == 2) {
      f.roots.push_back(flat_of[root]);
      f.depth.push_back(depth[root]);
      continue;
    }
    stack.push_back({root, 0});
    while (!stack.empty()) {
      const size_t top = stack.size() - 1;
      const int64_t u = stack[top].node;
      const RawNode& n = raw.nodes[u];
      if (stack[top].stage == 0) {
        emit(u);
        state[u] = 1;
        if (n.mode == Mode::kLeaf) {
          state[u] = 2;
          stack.pop_back();
          continue;
        }
      }
      if (stack[top].stage < 2) {
        // Stage 0 descends into the true child, stage 1 into the false child (depth-first, true
        // child placed right after its parent).
        const int stage = stack[top].stage;
        const int64_t child = stage == 0 ? n.true_child : n.false_child;
        if (stage == 1) f.nodes[flat_of[u]].a = flat_of[n.true_child];
        stack[top].stage = stage + 1;
        if (state[child] == 1) throw std::runtime_error("a tree has a cycle");
        if (state[child] == 0) stack.push_back({child, 0});
        continue;
      }
      f.nodes[flat_of[u]].b = flat_of[n.false_child];
      depth[u] = 1 + std::max(depth[n.true_child], depth[n.false_child]);
      state[u] = 2;
      stack.pop_back();
    }
    f.roots.push_back(flat_of[root]);
    f.depth.push_back(depth[root]);
  }
  if (f.max_feature >= 0 && f.sets.size() >= (size_t{1} << 24)) throw std::runtime_error("too many member sets");
  f.single_weight = single && raw.n_targets == 1 && !f.nodes.empty();
  f.distinct_targets = static_cast<int64_t>(targets.size());
  return f;
}

template struct Forest<float>;
template struct Forest<double>;

}  // namespace platform::tabular::trees
