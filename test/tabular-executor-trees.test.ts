// Tree ensembles of the native tabular executor against onnxruntime-node: random forests built
// here (seeded; unbalanced trees, every branch mode, NaN inputs with missing_value_tracks_true)
// in all three operator forms (TreeEnsembleRegressor, TreeEnsembleClassifier, TreeEnsemble-5),
// every aggregate function and post transform, base values, int64 and string class labels, and
// the binary classifiers whose leaves hold one class column. Labels must match exactly and scores
// within 1e-5 + 1e-4 * |x|, at batch sizes 1, 7, 129 and 1000 (the last runs on the thread pool).
import { describe, expect, it } from 'vitest';

import type { TabularInputData } from '../src/tabular/executor/index.js';
import { attr, ModelBuilder, type AttrValue } from './helpers/onnx-builder.js';
import { rng } from './helpers/random.js';
import { randomFloats, randomInts } from './helpers/tabular-data.js';
import { BATCHES, compareWithOrt, compileBytes, expectClose, runOrt } from './helpers/tabular-executor.js';

// ---- a random forest, written out in each operator's attribute form ----

interface GenNode {
  id: number;
  leaf: boolean;
  feature: number;
  threshold: number;
  mode: string;
  missingTrue: boolean;
  trueId: number;
  falseId: number;
  weights: [number, number][]; // (target or class, weight)
}

interface ForestOptions {
  trees: number;
  depth: number;
  features: number;
  seed: number;
  /** Branch modes to draw from. */
  modes?: string[];
  /** Thresholds: integers in [0, 3] (for EQ/NEQ) instead of reals in [-1.5, 1.5]. */
  integerThresholds?: boolean;
  /** Share of branches with missing_value_tracks_true. */
  missing?: number;
  /** The (target, weight) votes of a leaf of tree t. */
  leaf: (r: () => number, tree: number) => [number, number][];
}

function randomForest(o: ForestOptions): GenNode[][] {
  const r = rng(o.seed);
  const modes = o.modes ?? ['BRANCH_LEQ'];
  const trees: GenNode[][] = [];
  for (let t = 0; t < o.trees; t++) {
    const nodes: GenNode[] = [];
    const grow = (depth: number): number => {
      const id = nodes.length;
      const node: GenNode = { id, leaf: false, feature: 0, threshold: 0, mode: 'LEAF', missingTrue: false, trueId: 0, falseId: 0, weights: [] };
      nodes.push(node);
      // Unbalanced: below depth 2 a branch becomes a leaf one time in five.
      if (depth >= o.depth || (depth >= 2 && r() < 0.2)) {
        node.leaf = true;
        node.weights = o.leaf(r, t);
        return id;
      }
      node.feature = Math.floor(r() * o.features);
      node.threshold = o.integerThresholds ? Math.floor(r() * 4) : Math.fround(-1.5 + 3 * r());
      node.mode = modes[Math.floor(r() * modes.length)]!;
      node.missingTrue = r() < (o.missing ?? 0);
      node.trueId = grow(depth + 1);
      node.falseId = grow(depth + 1);
      return id;
    };
    grow(0);
    trees.push(nodes);
  }
  return trees;
}

/** nodes_* and target_/class_ attributes of TreeEnsembleRegressor / TreeEnsembleClassifier. */
function v3Attributes(trees: GenNode[][], prefix: 'target_' | 'class_'): Record<string, AttrValue> {
  const all = trees.flatMap((nodes, t) => nodes.map((n) => ({ t, n })));
  const votes = all.flatMap(({ t, n }) => n.weights.map(([k, w]) => ({ t, id: n.id, k, w })));
  return {
    nodes_treeids: all.map((x) => x.t),
    nodes_nodeids: all.map((x) => x.n.id),
    nodes_featureids: all.map((x) => x.n.feature),
    nodes_modes: all.map((x) => (x.n.leaf ? 'LEAF' : x.n.mode)),
    nodes_values: attr.floats(all.map((x) => x.n.threshold)),
    nodes_truenodeids: all.map((x) => x.n.trueId),
    nodes_falsenodeids: all.map((x) => x.n.falseId),
    nodes_missing_value_tracks_true: all.map((x) => (x.n.missingTrue ? 1 : 0)),
    [`${prefix}ids`]: votes.map((v) => v.k),
    [`${prefix}nodeids`]: votes.map((v) => v.id),
    [`${prefix}treeids`]: votes.map((v) => v.t),
    [`${prefix}weights`]: attr.floats(votes.map((v) => v.w)),
  };
}

const V5_MODES = ['BRANCH_LEQ', 'BRANCH_LT', 'BRANCH_GTE', 'BRANCH_GT', 'BRANCH_EQ', 'BRANCH_NEQ', 'BRANCH_MEMBER'];

/** TreeEnsemble-5 attributes (one vote per leaf); BRANCH_MEMBER nodes get `members`. */
function v5Attributes(trees: GenNode[][], type: 'float' | 'double', members: (n: GenNode) => number[] = () => []): Record<string, AttrValue> {
  const branches: GenNode[] = [];
  const leaves: GenNode[] = [];
  const branchIndex = new Map<GenNode, number>();
  const leafIndex = new Map<GenNode, number>();
  for (const nodes of trees) {
    for (const n of nodes) {
      if (n.leaf) {
        leafIndex.set(n, leaves.length);
        leaves.push(n);
      } else {
        branchIndex.set(n, branches.length);
        branches.push(n);
      }
    }
  }
  const ref = (nodes: GenNode[], id: number) => nodes[id]!;
  const roots: number[] = [];
  // A single-leaf tree is a branch whose both sides name the same leaf.
  for (const nodes of trees) {
    const root = nodes[0]!;
    if (root.leaf) throw new Error('generator made a single-leaf tree');
    roots.push(branchIndex.get(root)!);
  }
  const owner = new Map<GenNode, GenNode[]>();
  for (const nodes of trees) for (const n of nodes) owner.set(n, nodes);
  const child = (b: GenNode, id: number) => ref(owner.get(b)!, id);
  const memberValues: number[] = [];
  for (const b of branches) {
    if (b.mode === 'BRANCH_MEMBER') memberValues.push(...members(b), NaN);
  }
  const tensor = (values: number[]) => attr.tensor({ type, dims: [values.length], values });
  return {
    nodes_featureids: branches.map((b) => b.feature),
    nodes_splits: tensor(branches.map((b) => (b.mode === 'BRANCH_MEMBER' ? NaN : b.threshold))),
    nodes_modes: attr.tensor({ type: 'uint8', dims: [branches.length], values: branches.map((b) => V5_MODES.indexOf(b.mode)) }),
    nodes_truenodeids: branches.map((b) => {
      const c = child(b, b.trueId);
      return c.leaf ? leafIndex.get(c)! : branchIndex.get(c)!;
    }),
    nodes_falsenodeids: branches.map((b) => {
      const c = child(b, b.falseId);
      return c.leaf ? leafIndex.get(c)! : branchIndex.get(c)!;
    }),
    nodes_trueleafs: branches.map((b) => (child(b, b.trueId).leaf ? 1 : 0)),
    nodes_falseleafs: branches.map((b) => (child(b, b.falseId).leaf ? 1 : 0)),
    nodes_missing_value_tracks_true: branches.map((b) => (b.missingTrue ? 1 : 0)),
    ...(memberValues.length ? { membership_values: tensor(memberValues) } : {}),
    tree_roots: roots,
    leaf_targetids: leaves.map((l) => l.weights[0]![0]),
    leaf_weights: tensor(leaves.map((l) => l.weights[0]![1])),
  };
}

/** Inputs with a share of NaNs. */
function rows(n: number, features: number, seed: number, nanShare = 0): Float32Array {
  const x = randomFloats(n * features, seed);
  const r = rng(seed + 1);
  for (let i = 0; i < x.length; i++) if (r() < nanShare) x[i] = NaN;
  return x;
}

const ML3 = { '': 13, 'ai.onnx.ml': 3 };
const PROBIT_TOL = { abs: 1e-4, rel: 1e-3 };
const F = 6;

describe('TreeEnsembleRegressor', () => {
  const regressor = (opts: { targets: number; agg: string; post: string; base?: number[]; weight?: (r: () => number) => number; seed: number; modes?: string[]; integer?: boolean; type?: 'float' | 'double' | 'int64' | 'int32' }) => {
    const trees = randomForest({
      trees: 12,
      depth: 6,
      features: F,
      seed: opts.seed,
      modes: opts.modes,
      integerThresholds: opts.integer,
      missing: 0.3,
      leaf: (r) =>
        opts.targets === 1
          ? [[0, (opts.weight ?? ((q) => -1 + 2 * q()))(r)]]
          : Array.from({ length: opts.targets }, (_, k) => [k, Math.fround(-1 + 2 * r())] as [number, number]).filter(() => r() < 0.8),
    });
    return new ModelBuilder({ opsets: ML3 })
      .input('x', opts.type ?? 'float', ['N', F])
      .mlNode('TreeEnsembleRegressor', ['x'], ['y'], {
        ...v3Attributes(trees, 'target_'),
        n_targets: opts.targets,
        aggregate_function: opts.agg,
        post_transform: opts.post,
        ...(opts.base ? { base_values: attr.floats(opts.base) } : {}),
      })
      .output('y', 'float', ['N', opts.targets])
      .toBytes();
  };

  for (const agg of ['SUM', 'AVERAGE', 'MIN', 'MAX']) {
    it(`aggregate ${agg}, 1 and 3 targets, base values, NaN with missing_value_tracks_true`, async () => {
      for (const [targets, base] of [
        [1, undefined],
        [1, [0.5]],
        [3, undefined],
        [3, [0.1, -0.2, 0.3]],
      ] as const) {
        const bytes = regressor({ targets, agg, post: 'NONE', base: base ? [...base] : undefined, seed: targets * 31 + agg.length });
        for (const n of BATCHES) {
          await compareWithOrt(bytes, [{ name: 'x', dims: [n, F], data: rows(n, F, n, 0.1) }], undefined, `${agg} ${targets} N=${n}`);
        }
      }
    });
  }

  it('a gradient-boosted ensemble of 300 trees of depth 6 agrees with onnxruntime', async () => {
    const trees = randomForest({ trees: 300, depth: 6, features: 20, seed: 300, missing: 0.2, leaf: (r) => [[0, Math.fround(0.1 * (r() - 0.5))]] });
    const bytes = new ModelBuilder({ opsets: ML3 })
      .input('x', 'float', ['N', 20])
      .mlNode('TreeEnsembleRegressor', ['x'], ['y'], { ...v3Attributes(trees, 'target_'), n_targets: 1, aggregate_function: 'SUM', post_transform: 'NONE', base_values: attr.floats([0.25]) })
      .output('y', 'float', ['N', 1])
      .toBytes();
    for (const n of [1, 64, 513]) await compareWithOrt(bytes, [{ name: 'x', dims: [n, 20], data: rows(n, 20, n + 7, 0.05) }], undefined, `300 trees N=${n}`);
  });

  it('post transforms: PROBIT for one target; SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT for three', async () => {
    // onnxruntime's PROBIT (an erf-inverse approximation) turns a 1-ulp difference in the score,
    // which the order of summation decides, into up to ~2e-5 near 0.5: a looser tolerance here.
    const probit = regressor({ targets: 1, agg: 'AVERAGE', post: 'PROBIT', seed: 5, weight: (r) => 0.05 + 0.9 * r() });
    for (const n of BATCHES) await compareWithOrt(probit, [{ name: 'x', dims: [n, F], data: rows(n, F, n) }], PROBIT_TOL);
    for (const post of ['SOFTMAX', 'LOGISTIC', 'SOFTMAX_ZERO']) {
      const bytes = regressor({ targets: 3, agg: 'SUM', post, seed: 6 });
      for (const n of BATCHES) await compareWithOrt(bytes, [{ name: 'x', dims: [n, F], data: rows(n, F, n, 0.05) }], undefined, post);
    }
  });

  it('mixed branch modes (LT, GTE, GT, EQ, NEQ, LEQ) on integer-valued features', async () => {
    const bytes = regressor({
      targets: 2,
      agg: 'SUM',
      post: 'NONE',
      seed: 9,
      modes: ['BRANCH_LEQ', 'BRANCH_LT', 'BRANCH_GTE', 'BRANCH_GT', 'BRANCH_EQ', 'BRANCH_NEQ'],
      integer: true,
    });
    for (const n of BATCHES) {
      const x = Float32Array.from(randomInts(n * F, n, 0, 3));
      x[0] = NaN;
      await compareWithOrt(bytes, [{ name: 'x', dims: [n, F], data: x }]);
    }
  });

  it('double, int64 and int32 inputs, and one-row [F] input', async () => {
    // onnxruntime has no TreeEnsembleRegressor kernel for these input types: the reference is the
    // same forest on float input holding the same (exactly representable) values.
    const spec = { targets: 1, agg: 'SUM', post: 'NONE', seed: 13, integer: true, modes: ['BRANCH_LEQ', 'BRANCH_LT'] };
    const reference = regressor(spec);
    for (const type of ['double', 'int64', 'int32'] as const) {
      const model = compileBytes(regressor({ ...spec, type }));
      for (const n of [1, 7, 129]) {
        const ints = randomInts(n * F, n, -1, 4);
        const values = type === 'double' ? ints.map((v) => v + 0.5) : ints;
        const data: TabularInputData =
          type === 'double' ? Float64Array.from(values) : type === 'int64' ? BigInt64Array.from(ints, BigInt) : Int32Array.from(ints);
        const want = await runOrt(reference, [{ name: 'x', dims: [n, F], data: Float32Array.from(values) }]);
        expectClose(model.runSync([{ name: 'x', dims: [n, F], data }])[0]!, want.get('y')!, undefined, `${type} N=${n}`);
      }
    }
    // A 1-D input is one row (onnxruntime's shape inference refuses it; compare with [1, F]).
    const forest = v3Attributes(randomForest({ trees: 3, depth: 3, features: F, seed: 2, leaf: (r) => [[0, r()]] }), 'target_');
    const withShape = (shape: (number | string)[]) =>
      new ModelBuilder({ opsets: ML3 })
        .input('x', 'float', shape)
        .mlNode('TreeEnsembleRegressor', ['x'], ['y'], { ...forest, n_targets: 1 })
        .output('y', 'float', [1, 1])
        .toBytes();
    const x = randomFloats(F, 3);
    const want = await runOrt(withShape([1, F]), [{ name: 'x', dims: [1, F], data: x }]);
    expectClose(compileBytes(withShape([F])).runSync([{ name: 'x', dims: [F], data: x }])[0]!, want.get('y')!);
  });
});

describe('TreeEnsembleClassifier', () => {
  const classifier = (opts: {
    labels: number[] | string[];
    post: string;
    base?: number[];
    seed: number;
    leaf: (r: () => number, tree: number) => [number, number][];
    trees?: number;
  }) => {
    const trees = randomForest({ trees: opts.trees ?? 10, depth: 5, features: F, seed: opts.seed, missing: 0.2, leaf: opts.leaf });
    const strings = typeof opts.labels[0] === 'string';
    return new ModelBuilder({ opsets: ML3 })
      .input('x', 'float', ['N', F])
      .mlNode('TreeEnsembleClassifier', ['x'], ['label', 'scores'], {
        ...v3Attributes(trees, 'class_'),
        ...(strings ? { classlabels_strings: opts.labels as string[] } : { classlabels_int64s: opts.labels as number[] }),
        post_transform: opts.post,
        ...(opts.base ? { base_values: attr.floats(opts.base) } : {}),
      })
      .output('label', strings ? 'string' : 'int64', ['N'])
      .output('scores', 'float', ['N', opts.labels.length])
      .toBytes();
  };
  // Random forest style: every leaf votes for every class (probabilities).
  const rfLeaf = (classes: number) => (r: () => number) => {
    const p = Array.from({ length: classes }, () => r());
    const s = p.reduce((a, b) => a + b, 0);
    return p.map((v, k) => [k, Math.fround(v / s / 10)] as [number, number]);
  };
  // Gradient boosting style: tree t votes for class t % classes with a signed margin.
  const gbLeaf = (classes: number) => (r: () => number, t: number) => [[t % classes, Math.fround(-1 + 2 * r())]] as [number, number][];

  for (const labels of [[4, 2, 9], ['a', 'b', 'c']]) {
    it(`multiclass with ${typeof labels[0]} labels, RF and GB leaves, every post_transform, base values`, async () => {
      for (const [leaf, post, base] of [
        [rfLeaf(3), 'NONE', undefined],
        [rfLeaf(3), 'SOFTMAX', undefined],
        [gbLeaf(3), 'SOFTMAX', [0.1, -0.3, 0.2]],
        [gbLeaf(3), 'LOGISTIC', undefined],
        [gbLeaf(3), 'SOFTMAX_ZERO', undefined],
        [gbLeaf(3), 'NONE', [1, 2, 3]],
      ] as const) {
        const bytes = classifier({ labels, post, base: base ? [...base] : undefined, seed: post.length, leaf });
        for (const n of BATCHES) {
          await compareWithOrt(bytes, [{ name: 'x', dims: [n, F], data: rows(n, F, n, 0.1) }], undefined, `${post} N=${n}`);
        }
      }
    });
  }

  it('binary with one class column: probabilities (all positive) and margins (mixed, LOGISTIC, base value)', async () => {
    const cases = [
      // sklearn decision tree / random forest: class 0 column holds P(class 1).
      { leaf: (r: () => number) => [[0, Math.fround(r() / 10)]] as [number, number][], post: 'NONE', base: undefined },
      // sklearn gradient boosting: signed margins, one base value, LOGISTIC.
      { leaf: (r: () => number) => [[0, Math.fround(-0.5 + r())]] as [number, number][], post: 'LOGISTIC', base: [-0.4] },
      { leaf: (r: () => number) => [[0, Math.fround(-0.5 + r())]] as [number, number][], post: 'NONE', base: undefined },
      // Votes in the class 1 column only.
      { leaf: (r: () => number) => [[1, Math.fround(r() / 10)]] as [number, number][], post: 'NONE', base: undefined },
      { leaf: (r: () => number) => [[1, Math.fround(-0.5 + r())]] as [number, number][], post: 'LOGISTIC', base: undefined },
      { leaf: (r: () => number) => [[0, Math.fround(-0.5 + r())]] as [number, number][], post: 'NONE', base: [0.25, 0.5] },
    ];
    for (const [k, c] of cases.entries()) {
      for (const labels of [[0, 1], [-1, 5], ['no', 'yes']]) {
        const bytes = classifier({ labels, post: c.post, base: c.base, seed: 40 + k, leaf: c.leaf });
        for (const n of BATCHES) {
          await compareWithOrt(bytes, [{ name: 'x', dims: [n, F], data: rows(n, F, n, 0.1) }], undefined, `case ${k} ${String(labels)} N=${n}`);
        }
      }
    }
  });

  it('binary with votes for both classes: onnxruntime scores, labels by the higher score', async () => {
    // onnxruntime labels these rows by "second score > 0" and returns 0/1 instead of the labels;
    // the executor returns the label of the higher score (see ops_ml_tree.cc).
    const bytes = classifier({ labels: [3, 7], post: 'NONE', seed: 77, leaf: rfLeaf(2) });
    const n = 129;
    const x = rows(n, F, 5, 0.1);
    const ours = compileBytes(bytes).runSync([{ name: 'x', dims: [n, F], data: x }]);
    const theirs = await runOrt(bytes, [{ name: 'x', dims: [n, F], data: x }]);
    expectClose(ours[1]!, theirs.get('scores')!);
    const scores = ours[1]!.data as Float32Array;
    const labels = ours[0]!.data as BigInt64Array;
    for (let i = 0; i < n; i++) expect(labels[i]).toBe(scores[2 * i + 1]! > scores[2 * i]! ? 7n : 3n);
  });
});

describe('TreeEnsemble (ai.onnx.ml 5)', () => {
  const ML5 = { '': 13, 'ai.onnx.ml': 5 };
  const ensemble = (type: 'float' | 'double', agg: number, post: number, seed: number, members = false) => {
    const trees = randomForest({
      trees: 8,
      depth: 5,
      features: F,
      seed,
      missing: 0.3,
      integerThresholds: members,
      modes: members ? ['BRANCH_LEQ', 'BRANCH_MEMBER', 'BRANCH_EQ'] : ['BRANCH_LEQ', 'BRANCH_GT'],
      leaf: (r) => [[Math.floor(r() * 3), Math.fround(-1 + 2 * r())]],
    });
    // Trees whose root is a leaf cannot be written with tree_roots; the generator never makes one.
    const setOf = (n: GenNode) => [n.threshold, (n.threshold + 2) % 4];
    return (postCode: number) =>
      new ModelBuilder({ opsets: ML5 })
        .input('x', type, ['N', F])
        .mlNode('TreeEnsemble', ['x'], ['y'], { ...v5Attributes(trees, type, setOf), n_targets: 3, aggregate_function: agg, post_transform: postCode })
        .output('y', type, ['N', 3])
        .toBytes();
  };

  it('float and double, every aggregate, BRANCH_MEMBER sets, NaN inputs', async () => {
    for (const type of ['float', 'double'] as const) {
      for (const agg of [0, 1, 2, 3]) {
        for (const members of [false, true]) {
          const bytes = ensemble(type, agg, 0, agg * 7 + (members ? 1 : 0), members)(0);
          for (const n of BATCHES) {
            const ints = randomInts(n * F, n, 0, 3);
            const x = members ? Float32Array.from(ints) : rows(n, F, n);
            for (let i = 3; i < x.length; i += 11) x[i] = NaN;
            const data = type === 'float' ? x : Float64Array.from(x);
            await compareWithOrt(bytes, [{ name: 'x', dims: [n, F], data }], undefined, `${type} agg ${agg} members ${members} N=${n}`);
          }
        }
      }
    }
  });

  it('post_transform codes follow the ONNX spec (onnxruntime swaps SOFTMAX and LOGISTIC)', async () => {
    const make = ensemble('float', 1, 0, 3);
    const x = rows(129, F, 4);
    const input = [{ name: 'x', dims: [129, F], data: x }];
    for (const code of [0, 3, 4]) {
      if (code === 4) continue; // PROBIT needs scores in (0, 1); covered for the regressor
      await compareWithOrt(make(code), input, undefined, `post ${code}`);
    }
    // Spec: 1 = SOFTMAX, 2 = LOGISTIC. onnxruntime 1.30 reads 1 as LOGISTIC and 2 as SOFTMAX.
    const softmax = compileBytes(make(1)).runSync(input)[0]!;
    const logistic = compileBytes(make(2)).runSync(input)[0]!;
    expectClose(softmax, (await runOrt(make(2), input)).get('y')!);
    expectClose(logistic, (await runOrt(make(1), input)).get('y')!);
    const row = Array.from((softmax.data as Float32Array).subarray(0, 3));
    expect(row.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
  });

  it('a 100-tree ensemble on 1000 rows agrees with single-row runs (thread pool path)', () => {
    const trees = randomForest({ trees: 100, depth: 8, features: 20, seed: 99, missing: 0.1, leaf: (r) => [[0, Math.fround(r())]] });
    const bytes = new ModelBuilder({ opsets: ML5 })
      .input('x', 'float', ['N', 20])
      .mlNode('TreeEnsemble', ['x'], ['y'], { ...v5Attributes(trees, 'float'), n_targets: 1, aggregate_function: 1, post_transform: 0 })
      .output('y', 'float', ['N', 1])
      .toBytes();
    const model = compileBytes(bytes);
    const x = rows(1000, 20, 8, 0.05);
    const batch = model.runSync([{ name: 'x', dims: [1000, 20], data: x }])[0]!.data as Float32Array;
    for (let i = 0; i < 1000; i += 37) {
      const one = model.runSync([{ name: 'x', dims: [1, 20], data: x.slice(i * 20, i * 20 + 20) }])[0]!.data as Float32Array;
      expect(one[0]).toBe(batch[i]);
    }
  });
});
