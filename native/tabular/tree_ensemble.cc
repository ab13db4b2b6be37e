#include "tree_ensemble.h"

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>

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
