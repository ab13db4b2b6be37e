// TreeEnsembleRegressor, TreeEnsembleClassifier (ai.onnx.ml 1 and 3) and TreeEnsemble (ai.onnx.ml 5).
//
// Each operator's attributes become a RawForest (read_v3_forest / read_v5_forest in
// tree_ensemble.cc), flattened into a Forest (tree_ensemble.h), and evaluated over blocks of rows:
// for each block, every tree is walked for every row of the block (tree-outer, row-inner) with a
// traversal loop specialised for the ensemble's branch mode and for whether any node tracks
// missing values; blocks run on the thread pool for large batches.
//
// Aggregation, base values, post transforms and the binary-classifier conventions follow
// onnxruntime's tree_ensemble_aggregator.h, with one deliberate difference: a two-class
// classifier whose leaves vote for both classes (no base values) predicts the class with the
// higher score, where onnxruntime predicts class index 1 whenever the second score is positive
// and then returns the literal 0/1 instead of the int64 class label.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "../core/thread_pool.h"
#include "op.h"
#include "tree_ensemble.h"

namespace platform::tabular {
namespace {

using trees::Forest;
using trees::Mode;
using trees::RawForest;
using trees::RawNode;
using trees::read_v3_forest;
using trees::read_v5_forest;

enum class TreeOp { kRegressor, kClassifier, kEnsemble };

// More targets or classes than this is refused (each row keeps a score per target).
constexpr int64_t kMaxTargets = int64_t{1} << 20;
enum class Aggregate { kSum, kAverage, kMin, kMax };

// Rows per block: one tree's nodes stay cached while the block's rows pass through it. Blocks
// shrink (to kMinBlockRows) so that mid-size batches still give every thread a block.
constexpr int64_t kBlockRows = 128;
constexpr int64_t kMinBlockRows = 16;
// Below this many (row, tree) walks (~0.5 ms on one core) a run stays on one thread: a parallel
// region costs 10-300 us when the other cores are busy or asleep (measured on a shared 2-vCPU
// VM), which would make mid-size batches slower on two threads than on one.
constexpr int64_t kParallelWalks = 1 << 15;

Aggregate parse_aggregate(const std::string& s) {
  if (s == "SUM") return Aggregate::kSum;
  if (s == "AVERAGE") return Aggregate::kAverage;
  if (s == "MIN") return Aggregate::kMin;
  if (s == "MAX") return Aggregate::kMax;
  fail("aggregate_function \"" + s + "\" is not supported");
}

bool float_exact(double v) { return std::isnan(v) || static_cast<double>(static_cast<float>(v)) == v; }

struct TreeConfig {
  TreeOp op = TreeOp::kRegressor;
  Aggregate agg = Aggregate::kSum;
  PostTransform post = PostTransform::kNone;
  std::vector<double> base;
  int64_t n_targets = 1;  // targets, or classes for the classifier
  std::vector<int64_t> int_labels;
  std::vector<std::string> str_labels;
  bool binary_case = false;  // two classes, leaves vote for one class only
  bool all_positive = true;
};

// ---- evaluation ----

template <typename TT>
struct Scratch {
  std::vector<TT> score;
  std::vector<uint8_t> has;
};

template <typename TT>
class TreeEnsembleOp : public Op {
 public:
  TreeEnsembleOp(Forest<TT> forest, TreeConfig cfg) : forest_(std::move(forest)), cfg_(std::move(cfg)) {
    for (double v : cfg_.base) base_.push_back(static_cast<TT>(v));
    n_trees_ = static_cast<int64_t>(forest_.roots.size());
    for (size_t k = 0; k < forest_.nodes.size(); ++k) {
      if (forest_.flags[k].mode() == Mode::kLeaf) {
        leaf_ = static_cast<int32_t>(k);
        break;
      }
    }
  }

  void run(OpContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.rank() < 1 || x.rank() > 2) fail("the input must be [N, F] or [F], got shape " + shape_str(x.shape()));
    const bool integer_input = x.dtype() == DType::kInt64 || x.dtype() == DType::kInt32;
    if (!is_floating(x.dtype()) && (cfg_.op == TreeOp::kEnsemble || !integer_input)) {
      fail(std::string("does not support input element type ") + dtype_name(x.dtype()));
    }
    const int64_t n = x.rank() == 1 ? 1 : x.dim(0);
    const int64_t f = x.rank() == 1 ? x.dim(0) : x.dim(1);
    if (forest_.max_feature >= f) {
      fail("a tree reads feature " + std::to_string(forest_.max_feature) + " but the input has " + std::to_string(f) +
           " features");
    }
    std::vector<TT> converted;
    const TT* xd = input_as<TT>(x, converted);
    const int64_t t = cfg_.n_targets;

    Tensor out, labels;
    if (cfg_.op == TreeOp::kClassifier) {
      labels = Tensor(cfg_.str_labels.empty() ? DType::kInt64 : DType::kString, {n});
      out = Tensor(DType::kFloat, {n, t});
    } else {
      out = Tensor(cfg_.op == TreeOp::kEnsemble ? x.dtype() : DType::kFloat, {n, t});
    }

    const bool parallel = ctx.threads() > 1 && n * n_trees_ >= kParallelWalks;
    const int64_t per_thread = (n + ctx.threads() - 1) / ctx.threads();
    int64_t block_rows = parallel ? std::clamp(per_thread, kMinBlockRows, kBlockRows) : kBlockRows;
    // Keep a block's scores (rows x targets) within ~8 MB for wide outputs.
    block_rows = std::max<int64_t>(1, std::min(block_rows, (int64_t{1} << 20) / t));
    const int64_t blocks = (n + block_rows - 1) / block_rows;
    auto run_block = [&](int64_t blk, Scratch<TT>& s) {
      const int64_t r0 = blk * block_rows, r1 = std::min(n, r0 + block_rows);
      eval_block(xd, f, r0, r1, s);
      finish_block(r0, r1, s, out, labels);
    };
    if (parallel && blocks > 1) {
      // Blocks are claimed one at a time rather than split in advance: a thread that starts late
      // (its core busy elsewhere) takes fewer blocks instead of holding up the call.
      std::atomic<int64_t> next{0};
      const int tasks = static_cast<int>(std::min<int64_t>(ctx.threads(), blocks));
      run_tasks(tasks, [&](int) {
        Scratch<TT> s;
        for (int64_t blk = next.fetch_add(1); blk < blocks; blk = next.fetch_add(1)) run_block(blk, s);
      });
    } else {
      Scratch<TT> s;
      for (int64_t blk = 0; blk < blocks; ++blk) run_block(blk, s);
    }
    if (cfg_.op == TreeOp::kClassifier) {
      ctx.set_output(0, std::move(labels));
      ctx.set_output(1, std::move(out));
    } else {
      ctx.set_output(0, std::move(out));
    }
  }

 private:
  template <typename T>
  static const T* input_as(const Tensor& x, std::vector<T>& buf) {
    if (x.dtype() == dtype_of<T>()) return x.data<T>();
    buf.resize(static_cast<size_t>(x.size()));
    dispatch_numeric(x.dtype(), "the tree ensemble", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* d = x.data<S>();
      for (int64_t i = 0; i < x.size(); ++i) buf[i] = static_cast<T>(d[i]);
    });
    return buf.data();
  }

  // Walks every tree for rows [r0, r1) and aggregates the leaves into s (score and has-score per
  // row and target).
  void eval_block(const TT* x, int64_t f, int64_t r0, int64_t r1, Scratch<TT>& s) const {
    const int64_t rows = r1 - r0, t = cfg_.n_targets;
    s.score.assign(static_cast<size_t>(rows * t), TT(0));
    s.has.assign(static_cast<size_t>(rows * t), 0);
    // Lockstep walks read feature 0 at leaves: they need at least one feature (and no member sets).
    if (forest_.any_member || f == 0) return eval_checked(x, f, r0, r1, s);
    // missing_value_tracks_true only matters for NaN: blocks without one take the plain walk.
    bool miss = false;
    if (forest_.any_missing) {
      for (const TT* p = x + r0 * f, *e = x + r1 * f; p < e && !miss; ++p) miss = std::isnan(*p);
    }
    switch (forest_.uniform) {
      case Mode::kLeq: return eval_uniform<Mode::kLeq>(miss, x, f, r0, r1, s);
      case Mode::kLt: return eval_uniform<Mode::kLt>(miss, x, f, r0, r1, s);
      case Mode::kGte: return eval_uniform<Mode::kGte>(miss, x, f, r0, r1, s);
      case Mode::kGt: return eval_uniform<Mode::kGt>(miss, x, f, r0, r1, s);
      default: return eval_lockstep<Mode::kMixed, false>(x, f, r0, r1, s);
    }
  }

  template <Mode M>
  void eval_uniform(bool missing, const TT* x, int64_t f, int64_t r0, int64_t r1, Scratch<TT>& s) const {
    if (missing) {
      eval_lockstep<M, true>(x, f, r0, r1, s);
    } else {
      eval_lockstep<M, false>(x, f, r0, r1, s);
    }
  }

  // Walks of (tree, row) pairs in tree-major order, kLanes at a time in lockstep; each row still
  // sums its trees in tree order (as onnxruntime does), so sums match to the bit. A short last
  // group is padded with walks that start on a leaf (and stay there).
  static constexpr int kLanes = 8;

  template <Mode M, bool kMissing, size_t... L>
  static void walk(const trees::FlatNode<TT>* nodes, const trees::NodeFlags* flags, int32_t* idx,
                   const TT* const* xr, int32_t depth, std::index_sequence<L...>) {
    // One statement per lane inside the depth loop (not a loop over lanes, which the compiler
    // would interchange with the depth loop): kLanes independent dependency chains per step.
    int32_t i[kLanes] = {idx[L]...};
    for (int32_t d = 0; d < depth; ++d) {
      ((i[L] = trees::step<TT, M, kMissing>(nodes, flags, i[L], xr[L])), ...);
    }
    ((idx[L] = i[L]), ...);
  }

  template <Mode M, bool kMissing>
  void eval_lockstep(const TT* x, int64_t f, int64_t r0, int64_t r1, Scratch<TT>& s) const {
    const auto* nodes = forest_.nodes.data();
    const int64_t rows = r1 - r0;
    int32_t idx[kLanes];
    const TT* xr[kLanes];
    int32_t lane_row[kLanes];
    int64_t tree = 0, row = 0;
    while (tree < n_trees_) {
      int cnt = 0;
      int32_t depth = 0;
      while (cnt < kLanes && tree < n_trees_) {
        idx[cnt] = forest_.roots[tree];
        xr[cnt] = x + (r0 + row) * f;
        lane_row[cnt] = static_cast<int32_t>(row);
        depth = std::max(depth, forest_.depth[tree]);
        ++cnt;
        if (++row == rows) {
          row = 0;
          ++tree;
        }
      }
      for (int l = cnt; l < kLanes; ++l) {
        idx[l] = leaf_;
        xr[l] = x + r0 * f;
      }
      walk<M, kMissing>(nodes, forest_.flags.data(), idx, xr, depth, std::make_index_sequence<kLanes>{});
      for (int l = 0; l < cnt; ++l) aggregate(lane_row[l], idx[l], s);
    }
  }

  // One walk at a time, testing each node: BRANCH_MEMBER sets, or rows without features.
  void eval_checked(const TT* x, int64_t f, int64_t r0, int64_t r1, Scratch<TT>& s) const {
    const auto* nodes = forest_.nodes.data();
    for (int64_t tree = 0; tree < n_trees_; ++tree) {
      const int32_t root = forest_.roots[tree];
      for (int64_t r = r0; r < r1; ++r) {
        aggregate(r - r0, trees::find_leaf<TT>(nodes, forest_.flags.data(), root, x + r * f, forest_.sets), s);
      }
    }
  }

  inline void aggregate(int64_t row, int32_t leaf, Scratch<TT>& s) const {
    const Aggregate agg = cfg_.agg;
    if (forest_.single_weight) {
      add(agg, s.score[row], s.has[row], forest_.nodes[leaf].value);
      return;
    }
    const int64_t t = cfg_.n_targets;
    for (int32_t w = forest_.leaf_first[leaf], e = w + forest_.leaf_count[leaf]; w < e; ++w) {
      const int64_t k = row * t + forest_.weight_target[w];
      add(agg, s.score[k], s.has[k], forest_.weight_value[w]);
    }
  }

  static inline void add(Aggregate agg, TT& score, uint8_t& has, TT v) {
    switch (agg) {
      case Aggregate::kMin:
        score = (!has || v < score) ? v : score;
        break;
      case Aggregate::kMax:
        score = (!has || v > score) ? v : score;
        break;
      default:
        score += v;
        break;
    }
    has = 1;
  }

  void finish_block(int64_t r0, int64_t r1, Scratch<TT>& s, Tensor& out, Tensor& labels) const {
    const int64_t t = cfg_.n_targets;
    std::vector<float> z(static_cast<size_t>(std::max<int64_t>(t, 2)));
    for (int64_t r = r0; r < r1; ++r) {
      TT* sc = s.score.data() + (r - r0) * t;
      uint8_t* has = s.has.data() + (r - r0) * t;
      if (cfg_.op == TreeOp::kClassifier) {
        const int64_t cls = finish_classifier(sc, has, z.data());
        std::copy(z.begin(), z.begin() + t, out.data<float>() + r * t);
        if (cfg_.str_labels.empty()) {
          labels.data<int64_t>()[r] = cfg_.int_labels[cls];
        } else {
          labels.strings()[r] = cfg_.str_labels[cls];
        }
        continue;
      }
      finish_regression(sc, has);
      if (out.dtype() == DType::kDouble) {
        write_row(sc, out.data<double>() + r * t, z.data());
      } else {
        write_row(sc, out.data<float>() + r * t, z.data());
      }
    }
  }

  // Base values and averaging (onnxruntime's FinalizeScores / FinalizeScores1). With two or more
  // targets, onnxruntime writes 0 for a target no leaf voted for, base value or not; so do we.
  void finish_regression(TT* sc, const uint8_t* has) const {
    const int64_t t = cfg_.n_targets;
    const bool use_base = static_cast<int64_t>(base_.size()) == t;
    for (int64_t j = 0; j < t; ++j) {
      const TT b = use_base ? base_[j] : TT(0);
      switch (cfg_.agg) {
        case Aggregate::kSum: sc[j] += b; break;
        case Aggregate::kAverage: sc[j] = sc[j] / static_cast<TT>(n_trees_) + b; break;
        default: sc[j] = has[j] ? sc[j] + b : b; break;
      }
      if (t > 1 && !has[j]) sc[j] = TT(0);
    }
  }

  // Post transform: one target gets PROBIT only; two or more get every transform, computed in
  // float (onnxruntime's write_scores).
  template <typename O>
  void write_row(const TT* sc, O* dst, float* z) const {
    const int64_t t = cfg_.n_targets;
    if (cfg_.post == PostTransform::kNone || (t == 1 && cfg_.post != PostTransform::kProbit)) {
      for (int64_t j = 0; j < t; ++j) dst[j] = static_cast<O>(sc[j]);
      return;
    }
    for (int64_t j = 0; j < t; ++j) z[j] = static_cast<float>(sc[j]);
    if (t == 1) {
      z[0] = ml_probit(z[0]);
    } else {
      apply_post_transform(z, t, cfg_.post);
    }
    for (int64_t j = 0; j < t; ++j) dst[j] = static_cast<O>(z[j]);
  }

  // Scores and class index of one row (onnxruntime's TreeAggregatorClassifier::FinalizeScores).
  int64_t finish_classifier(TT* s, uint8_t* has, float* z) const {
    const int64_t c = cfg_.n_targets;
    const size_t nb = base_.size();
    if (c > 2) {
      for (size_t k = 0; k < nb; ++k) {
        if (!has[k]) {
          has[k] = 1;
          s[k] = base_[k];
        } else {
          s[k] += base_[k];
        }
      }
      int64_t best = -1;
      for (int64_t k = 0; k < c; ++k) {
        if (has[k] && (best < 0 || s[k] > s[best])) best = k;
      }
      // A class without votes scores 0 (onnxruntime's ScoreValue reads as 0 without has_score).
      for (int64_t k = 0; k < c; ++k) z[k] = has[k] ? static_cast<float>(s[k]) : 0.0f;
      apply_post_transform(z, c, cfg_.post);
      return best < 0 ? 0 : best;
    }
    // Two classes.
    int size = 2;
    int second = -1;  // how the single score becomes two (onnxruntime's add_second_class)
    if (nb == 2) {
      if (has[1]) {
        s[1] = base_[1] + s[0];
        s[0] = -s[1];
      } else {
        s[1] += base_[1];
        s[0] += base_[0];
      }
    } else if (nb == 1) {
      s[0] += base_[0];
      if (!has[1]) size = 1;
    } else {
      second = 3;
      if (!has[1]) size = 1;
    }
    const TT pos = (size == 2 && has[1]) ? s[1] : (has[0] ? s[0] : TT(0));
    int64_t cls;
    if (cfg_.binary_case) {
      if (cfg_.all_positive) {
        cls = pos > TT(0.5) ? 1 : 0;
        second = cls ? 0 : 1;
      } else {
        cls = pos > TT(0) ? 1 : 0;
        second = cls ? 2 : 3;
      }
    } else if (size == 2) {
      cls = s[1] > s[0] ? 1 : 0;
    } else {
      cls = pos > TT(0) ? 1 : 0;
    }
    if (size == 2) {
      z[0] = has[0] ? static_cast<float>(s[0]) : 0.0f;
      z[1] = has[1] ? static_cast<float>(s[1]) : 0.0f;
      apply_post_transform(z, 2, cfg_.post);
      return cls;
    }
    const float v = has[0] ? static_cast<float>(s[0]) : 0.0f;
    if (cfg_.post == PostTransform::kProbit) {
      z[0] = ml_probit(v);
      z[1] = 0.0f;
    } else if (second == 0 || second == 1) {
      z[0] = 1.0f - v;
      z[1] = v;
    } else if (second == 2 || second == 3) {
      if (cfg_.post == PostTransform::kLogistic) {
        z[0] = ml_logistic(-v);
        z[1] = ml_logistic(v);
      } else {
        z[0] = -v;
        z[1] = v;
      }
    } else {
      z[0] = v;
      z[1] = 0.0f;
    }
    return cls;
  }

  Forest<TT> forest_;
  TreeConfig cfg_;
  std::vector<TT> base_;
  int64_t n_trees_ = 0;
  int32_t leaf_ = 0;  // any leaf: where padding walks start
};

// Static shape of the rows of an [N, F] / [F] input: N or -1.
int64_t static_rows(const ValueInfo& x) {
  if (!x.has_shape) return -1;
  if (x.rank() == 1) return 1;
  if (x.rank() == 2) return x.dims[0];
  fail("the input must be [N, F] or [F], got shape " + dims_str(x.dims));
}

template <TreeOp op>
std::unique_ptr<Op> make_tree(CompileContext& ctx) {
  ctx.expect_inputs(1, 1);
  ctx.expect_outputs(1, op == TreeOp::kClassifier ? 2 : 1);
  const ValueInfo& x = ctx.input(0);
  if constexpr (op == TreeOp::kEnsemble) {
    ctx.expect_type(0, {DType::kFloat, DType::kDouble});
  } else {
    ctx.expect_type(0, {DType::kFloat, DType::kDouble, DType::kInt64, DType::kInt32});
  }
  const int64_t rows = static_rows(x);

  TreeConfig cfg;
  cfg.op = op;
  cfg.post = parse_post_transform(ctx.attr_string("post_transform", "NONE"));
  RawForest raw;
  if constexpr (op == TreeOp::kClassifier) {
    cfg.int_labels = ctx.attr_ints("classlabels_int64s");
    cfg.str_labels = ctx.attr_strings("classlabels_strings");
    if (cfg.int_labels.empty() == cfg.str_labels.empty()) {
      fail("needs exactly one non-empty list of classlabels_int64s and classlabels_strings");
    }
    cfg.n_targets = static_cast<int64_t>(cfg.str_labels.empty() ? cfg.int_labels.size() : cfg.str_labels.size());
    if (cfg.n_targets < 2) fail("needs at least two class labels");
    raw = read_v3_forest(ctx, true, cfg.n_targets);
    cfg.base = ctx.attr_floats("base_values");
    const size_t nb = cfg.base.size();
    if (cfg.n_targets == 2 ? nb > 2 : (nb != 0 && static_cast<int64_t>(nb) != cfg.n_targets)) {
      fail("has " + std::to_string(nb) + " base_values for " + std::to_string(cfg.n_targets) + " classes");
    }
  } else if constexpr (op == TreeOp::kRegressor) {
    cfg.n_targets = ctx.attr_int("n_targets", 1);
    if (cfg.n_targets < 1 || cfg.n_targets > kMaxTargets) {
      fail("attribute \"n_targets\" must be from 1 to " + std::to_string(kMaxTargets));
    }
    cfg.agg = parse_aggregate(ctx.attr_string("aggregate_function", "SUM"));
    raw = read_v3_forest(ctx, false, cfg.n_targets);
    cfg.base = ctx.attr_floats("base_values");
  } else {
    cfg.n_targets = ctx.attr_int("n_targets", 1);
    if (cfg.n_targets < 1 || cfg.n_targets > kMaxTargets) {
      fail("attribute \"n_targets\" must be from 1 to " + std::to_string(kMaxTargets));
    }
    cfg.agg = parse_aggregate(ctx.attr_string("aggregate_function", "SUM"));
    raw = read_v5_forest(ctx, cfg.n_targets);
  }
  if (cfg.n_targets > kMaxTargets) {
    fail("has " + std::to_string(cfg.n_targets) + " targets or classes; at most " + std::to_string(kMaxTargets) +
         " are supported");
  }
  if (op != TreeOp::kClassifier && !cfg.base.empty() && static_cast<int64_t>(cfg.base.size()) != cfg.n_targets) {
    fail("has " + std::to_string(cfg.base.size()) + " base_values for " + std::to_string(cfg.n_targets) + " targets");
  }

  // Thresholds and sums in float when that loses nothing and the input is not double (as
  // onnxruntime's float ThresholdType); otherwise double. TreeEnsemble-5 computes in its input type.
  bool use_double = x.dtype == DType::kDouble || x.dtype == DType::kUndefined;
  if (op != TreeOp::kEnsemble && !use_double) {
    auto exact = [](const std::vector<double>& v) { return std::all_of(v.begin(), v.end(), float_exact); };
    use_double = !exact(cfg.base);
    for (const RawNode& n : raw.nodes) {
      if (use_double) break;
      if (!float_exact(n.value) || !exact(n.members)) use_double = true;
      for (const auto& w : n.weights) {
        if (!float_exact(w.second)) use_double = true;
      }
    }
  }

  std::vector<ValueInfo> outs;
  const DType out_type = op == TreeOp::kEnsemble && x.dtype != DType::kUndefined ? x.dtype : DType::kFloat;
  if constexpr (op == TreeOp::kClassifier) {
    outs.push_back(ValueInfo::of(cfg.str_labels.empty() ? DType::kInt64 : DType::kString, {rows}));
  }
  outs.push_back(op == TreeOp::kEnsemble && x.dtype == DType::kUndefined ? ValueInfo()
                                                                        : ValueInfo::of(out_type, {rows, cfg.n_targets}));
  if (outs.back().dtype == DType::kUndefined) {
    outs.back().has_shape = true;
    outs.back().dims = {rows, cfg.n_targets};
  }
  ctx.outputs = outs;

  auto finish = [&](auto tag) -> std::unique_ptr<Op> {
    using TT = typename decltype(tag)::type;
    Forest<TT> forest;
    try {
      forest = Forest<TT>::build(raw);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    if (x.has_shape && x.rank() >= 1 && x.dims.back() >= 0 && forest.max_feature >= x.dims.back()) {
      fail("a tree reads feature " + std::to_string(forest.max_feature) + " but the input has " +
           std::to_string(x.dims.back()) + " features");
    }
    if constexpr (op == TreeOp::kClassifier) {
      cfg.binary_case = cfg.n_targets == 2 && forest.distinct_targets == 1;
      cfg.all_positive = forest.all_weights_positive;
    }
    return std::make_unique<TreeEnsembleOp<TT>>(std::move(forest), cfg);
  };
  if (op == TreeOp::kEnsemble) {
    // Arithmetic in the input type; an input of unknown type is evaluated in double (exact for
    // float inputs too) and the output still takes the input's type.
    if (x.dtype == DType::kFloat) return finish(TypeTag<float>{});
    return finish(TypeTag<double>{});
  }
  return use_double ? finish(TypeTag<double>{}) : finish(TypeTag<float>{});
}

}  // namespace

void add_ml_tree_ops(OpRegistry& r) {
  r["ai.onnx.ml:TreeEnsembleRegressor"] = make_tree<TreeOp::kRegressor>;
  r["ai.onnx.ml:TreeEnsembleClassifier"] = make_tree<TreeOp::kClassifier>;
  r["ai.onnx.ml:TreeEnsemble"] = make_tree<TreeOp::kEnsemble>;
}

}  // namespace platform::tabular
