// Tree ensembles in a cache-friendly layout.
//
// The three ONNX tree operators (TreeEnsembleRegressor/Classifier with nodes_* attribute lists,
// and TreeEnsemble-5 with tree_roots and leaf arrays) are first read into one operator-independent
// RawForest (read_v3_forest / read_v5_forest), then flattened into a Forest: one array of 16-byte
// nodes (float thresholds; 24 bytes for double) holding the threshold, the feature index and both
// child indices, with the branch mode and missing-value flag in a parallel array that the plain
// walk does not touch. Each tree is laid out depth-first with the true child right after its
// parent, so a walk mostly moves forward in memory. Leaves point to themselves; their (target,
// weight) pairs sit in two flat arrays.
//
// Evaluation (ops_ml_tree.cc) takes blocks of rows and, per block, walks every tree for every row
// of the block (tree-outer, row-inner: a tree's nodes stay in L1 while the block's rows pass),
// eight walks at a time (kLanes) in lockstep with branch-free steps (see step() below), so the
// CPU overlaps their dependent loads instead of mispredicting one walk at a time. Blocks go to
// the thread pool when the batch is large.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace platform::tabular {
class CompileContext;  // op.h
}

namespace platform::tabular::trees {

enum class Mode : uint8_t { kLeaf = 0, kLeq, kLt, kGte, kGt, kEq, kNeq, kMember, kMixed };

Mode parse_mode(const std::string& name);  // "BRANCH_LEQ" ... "LEAF"; throws otherwise

struct RawNode {
  Mode mode = Mode::kLeaf;
  bool missing_true = false;
  int64_t feature = 0;
  double value = 0;              // threshold
  std::vector<double> members;   // kMember: the set
  int64_t true_child = -1;       // index into RawForest::nodes
  int64_t false_child = -1;
  std::vector<std::pair<int64_t, double>> weights;  // leaves: (target or class, weight)
};

struct RawForest {
  std::vector<RawNode> nodes;
  std::vector<int64_t> roots;  // one per tree, in tree order
  int64_t n_targets = 1;
};

// The nodes and leaf weights of a node's attributes, validated (lengths, ids, children, targets in
// [0, n_targets)); failures throw with a plain message (the graph adds the node). v3:
// TreeEnsembleRegressor / TreeEnsembleClassifier, nodes named by (tree id, node id), weights
// from target_* or (classifier) class_*; v5: TreeEnsemble, branch nodes by index, leaves apart.
RawForest read_v3_forest(const CompileContext& ctx, bool classifier, int64_t n_targets);
RawForest read_v5_forest(const CompileContext& ctx, int64_t n_targets);

template <typename TT>
struct FlatNode {
  TT value;         // branch: threshold (kMember: index of the set); leaf: its first weight
  int32_t feature;  // branch: the feature read; leaf: 0
  int32_t a;        // branch: true child; leaf: itself
  int32_t b;        // branch: false child; leaf: itself
};

// Per node, beside the node array (the plain walk never reads it): bits 0-3 mode, bit 4
// missing_value_tracks_true, bits 5-8 the outcome mask: which comparison outcomes take the true
// branch (bit 0 x < t, bit 1 x == t, bit 2 x > t, bit 3 unordered: x is NaN, set by the mode or by
// missing_value_tracks_true).
struct NodeFlags {
  uint16_t bits;
  Mode mode() const { return static_cast<Mode>(bits & 0xF); }
  bool missing_true() const { return (bits >> 4) & 1; }
  uint32_t mask() const { return (bits >> 5) & 0xF; }
};

constexpr int64_t kMaxFeature = (int64_t{1} << 30);

template <typename TT>
struct Forest {
  std::vector<FlatNode<TT>> nodes;
  std::vector<NodeFlags> flags;       // per node
  std::vector<int32_t> roots;
  std::vector<int32_t> depth;         // per tree: the most branches on a path from its root
  std::vector<int32_t> leaf_first;    // per node (leaves only): first weight
  std::vector<int32_t> leaf_count;    // per node (leaves only): number of weights
  std::vector<int32_t> weight_target;
  std::vector<TT> weight_value;
  std::vector<std::vector<TT>> sets;  // member sets
  int64_t n_targets = 1;
  int64_t max_feature = -1;           // -1: no branch reads a feature
  Mode uniform = Mode::kMixed;        // the one branch mode every branch uses, else kMixed
  bool any_missing = false;           // some branch has missing_value_tracks_true
  bool any_member = false;            // some branch is BRANCH_MEMBER
  bool single_weight = false;         // every leaf has exactly one weight, for target 0
  int64_t distinct_targets = 0;       // targets or classes that carry at least one weight
  bool all_weights_positive = true;

  // Validates (children exist, no cycles, targets in range) and flattens. Throws std::runtime_error.
  static Forest build(const RawForest& raw);
};

// One step of a walk from node i for the row x. Leaves point to themselves, so a walk can take a
// fixed number of steps (the tree's depth) without testing for leaves: branch-free, and several
// walks interleave in the CPU. M is kLeq/kLt/kGte/kGt for a forest of one mode, else kMixed
// (any mode but BRANCH_MEMBER, through the outcome mask).
template <typename TT, Mode M, bool kMissing>
inline int32_t step(const FlatNode<TT>* nodes, const NodeFlags* flags, int32_t i, const TT* x) {
  const FlatNode<TT>& n = nodes[i];
  const TT v = x[n.feature];
  bool go;
  if constexpr (M == Mode::kMixed) {
    const uint32_t o = 3u - 3u * (v < n.value) - 2u * (v == n.value) - (v > n.value);
    go = (flags[i].mask() >> o) & 1u;
  } else {
    if constexpr (M == Mode::kLeq) go = v <= n.value;
    if constexpr (M == Mode::kLt) go = v < n.value;
    if constexpr (M == Mode::kGte) go = v >= n.value;
    if constexpr (M == Mode::kGt) go = v > n.value;
    if constexpr (kMissing) go = go | (flags[i].missing_true() & (v != v));
  }
  // Select without a branch: the outcome is as good as random. (Compilers turn the plain ternary
  // into a branch, which only looks cheap in benchmarks that repeat the same rows, because the
  // predictor learns them.)
  const int32_t sel = -static_cast<int32_t>(go);
  return (n.a & sel) | (n.b & ~sel);
}

// Index of the leaf reached from node `i` for the row `x`, testing each node (any mode,
// BRANCH_MEMBER included).
template <typename TT>
inline int32_t find_leaf(const FlatNode<TT>* nodes, const NodeFlags* flags, int32_t i, const TT* x,
                         const std::vector<std::vector<TT>>& sets) {
  for (;;) {
    const FlatNode<TT>& n = nodes[i];
    const NodeFlags fl = flags[i];
    const Mode mode = fl.mode();
    if (mode == Mode::kLeaf) return i;
    const TT v = x[n.feature];
    bool go;
    if (mode == Mode::kMember) {
      go = false;
      for (TT e : sets[static_cast<size_t>(n.value)]) {
        if (e == v) {
          go = true;
          break;
        }
      }
      go = go || (fl.missing_true() && std::isnan(v));
    } else {
      const uint32_t o = 3u - 3u * (v < n.value) - 2u * (v == n.value) - (v > n.value);
      go = (fl.mask() >> o) & 1u;
    }
    i = go ? n.a : n.b;
  }
}

}  // namespace platform::tabular::trees
