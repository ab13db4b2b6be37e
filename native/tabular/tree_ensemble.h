// Tree ensembles in a cache-friendly layout.
//
// The three ONNX tree operators (TreeEnsembleRegressor/Classifier with nodes_* attribute lists,
// and TreeEnsemble-5 with tree_roots and leaf arrays) are first read into one operator-independent
// RawForest, then flattened into a Forest: one array of 16-byte nodes (float thresholds; 24 bytes
// for double) holding the threshold, the feature index with the branch mode and the
// missing-value flag packed into one word, and both child indices. Each tree is laid out
// depth-first with the true child right after its parent, so a walk mostly moves forward in
// memory. Leaves hold the range of their (target, weight) pairs in two flat arrays.
//
// Evaluation (ops_ml_tree.cc) takes blocks of rows and, per block, walks every tree for every row
// of the block (tree-outer, row-inner): a tree's nodes stay in L1 while the block's rows stream
// past, and blocks go to the thread pool when the batch is large.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

template <typename TT>
struct FlatNode {
  TT value;         // branch: threshold (kMember: index of the set); leaf: its single weight
  uint32_t packed;  // bits 0-23 feature, 24-27 mode, 28 missing_value_tracks_true
  int32_t a;        // branch: true child; leaf: first weight
  int32_t b;        // branch: false child; leaf: number of weights

  Mode mode() const { return static_cast<Mode>((packed >> 24) & 0xF); }
  uint32_t feature() const { return packed & 0xFFFFFF; }
  bool missing_true() const { return (packed >> 28) & 1; }
};

constexpr int64_t kMaxFeature = (int64_t{1} << 24) - 1;

template <typename TT>
struct Forest {
  std::vector<FlatNode<TT>> nodes;
  std::vector<int32_t> roots;
  std::vector<int32_t> weight_target;
  std::vector<TT> weight_value;
  std::vector<std::vector<TT>> sets;  // sorted member sets
  int64_t n_targets = 1;
  int64_t max_feature = -1;           // -1: no branch reads a feature
  Mode uniform = Mode::kMixed;        // the one branch mode every branch uses, else kMixed
  bool any_missing = false;           // some branch has missing_value_tracks_true
  bool single_weight = false;         // every leaf has exactly one weight, for target 0
  int64_t distinct_targets = 0;       // targets or classes that carry at least one weight
  bool all_weights_positive = true;

  // Validates (children exist, no cycles, targets in range) and flattens. Throws std::runtime_error.
  static Forest build(const RawForest& raw);
};

// Index of the leaf reached from node `i` for the row `x`.
template <typename TT, Mode M, bool kMissing>
inline int32_t find_leaf(const FlatNode<TT>* nodes, int32_t i, const TT* x, const std::vector<std::vector<TT>>& sets) {
  for (;;) {
    const FlatNode<TT>& n = nodes[i];
    const Mode mode = n.mode();
    if (mode == Mode::kLeaf) return i;
    const TT v = x[n.feature()];
    bool go;
    const Mode m = M == Mode::kMixed ? mode : M;
    switch (m) {
      case Mode::kLeq: go = v <= n.value; break;
      case Mode::kLt: go = v < n.value; break;
      case Mode::kGte: go = v >= n.value; break;
      case Mode::kGt: go = v > n.value; break;
      case Mode::kEq: go = v == n.value; break;
      case Mode::kNeq: go = v != n.value; break;
      default: {
        const auto& s = sets[static_cast<size_t>(n.value)];
        go = false;
        for (TT e : s) {
          if (e == v) {
            go = true;
            break;
          }
        }
        break;
      }
    }
    if constexpr (kMissing) go = go || (n.missing_true() && std::isnan(v));
    i = go ? n.a : n.b;
  }
}

}  // namespace platform::tabular::trees
