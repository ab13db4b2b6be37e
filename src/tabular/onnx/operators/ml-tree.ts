// The tree-ensemble ML operators (native/tabular/ops_ml_tree.cc and tree_ensemble.{h,cc}):
// TreeEnsembleRegressor and TreeEnsembleClassifier (ai.onnx.ml 1 and 3, deprecated in 5) and
// TreeEnsemble (ai.onnx.ml 5). All three normalise to float lists and mode names, so that the
// native side reads one form.

import type { OnnxAttribute, OnnxTensor } from '../types.js';
import { floats, i, ints, ML, operatorSpec, POST_TRANSFORMS, s, type AttributeRule, type NodeContext, type OperatorSpec } from './spec.js';

/** The aggregate_function values, in the order of TreeEnsemble-5's codes for them. */
const AGGREGATE_FUNCTIONS = ['AVERAGE', 'SUM', 'MIN', 'MAX'] as const;
const TREE_MODES = ['BRANCH_LEQ', 'BRANCH_LT', 'BRANCH_GTE', 'BRANCH_GT', 'BRANCH_EQ', 'BRANCH_NEQ', 'LEAF'] as const;
/** TreeEnsemble-5's uint8 node modes, by code. */
const TREE_ENSEMBLE_MODES = ['BRANCH_LEQ', 'BRANCH_LT', 'BRANCH_GTE', 'BRANCH_GT', 'BRANCH_EQ', 'BRANCH_NEQ', 'BRANCH_MEMBER'] as const;

// ---- attribute conversions ----

function tensorNumbers(ctx: NodeContext, name: string, t: OnnxTensor): number[] {
  if (t.data instanceof Float32Array || t.data instanceof Float64Array) return Array.from(t.data);
  return ctx.invalid(`attribute "${name}" must hold floating-point values, not ${t.dataType}`);
}

/** Replaces `<name>_as_tensor` (a tensor) by `<name>` (floats), as the canonical form. */
function asTensorToFloats(ctx: NodeContext, name: string): void {
  const attrs = ctx.node.attributes;
  const t = attrs[`${name}_as_tensor`];
  if (t === undefined) return;
  if (attrs[name] !== undefined) ctx.invalid(`sets both "${name}" and "${name}_as_tensor"`);
  delete attrs[`${name}_as_tensor`];
  if (t.type === 'tensor') attrs[name] = floats(tensorNumbers(ctx, `${name}_as_tensor`, t.value));
}

function tensorToFloatsAttr(ctx: NodeContext, name: string): void {
  const a = ctx.node.attributes[name];
  if (a?.type === 'tensor') ctx.node.attributes[name] = floats(tensorNumbers(ctx, name, a.value));
}

function listLength(a: OnnxAttribute | undefined): number {
  if (a === undefined) return 0;
  return Array.isArray(a.value) ? a.value.length : 1;
}

function requireSameLength(ctx: NodeContext, names: readonly string[]): number {
  const attrs = ctx.node.attributes;
  const present = names.filter((n) => attrs[n] !== undefined);
  const first = present[0];
  if (first === undefined) return 0;
  const n = listLength(attrs[first]);
  for (const other of present) {
    const m = listLength(attrs[other]);
    if (m !== n) ctx.invalid(`attributes "${first}" and "${other}" have different lengths (${n} and ${m})`);
  }
  return n;
}

/** Fills a per-node 0/1 list (missing_value_tracks_true) with zeros when it is absent or empty. */
function fillZeros(ctx: NodeContext, name: string, length: number): void {
  const a = ctx.node.attributes[name];
  if (a === undefined || (a.type === 'ints' && a.value.length === 0)) {
    ctx.node.attributes[name] = ints(new Array<number>(length).fill(0));
  } else if (listLength(a) !== length) {
    ctx.invalid(`attribute "${name}" has ${listLength(a)} entries for ${length} tree nodes`);
  }
}

function fillTargets(ctx: NodeContext, idsName: string): void {
  if (ctx.node.attributes.n_targets !== undefined) return;
  const ids = ctx.node.attributes[idsName];
  const values = ids?.type === 'ints' ? ids.value : [];
  ctx.node.attributes.n_targets = i(values.reduce((max, v) => Math.max(max, v + 1), 1));
}

// ---- TreeEnsembleRegressor and TreeEnsembleClassifier ----

/** The nodes_* attributes and post_transform of TreeEnsembleRegressor/Classifier 1 and 3. */
const TREE_NODE_ATTRIBUTES: Readonly<Record<string, AttributeRule>> = {
  nodes_treeids: { type: 'ints', required: true },
  nodes_nodeids: { type: 'ints', required: true },
  nodes_featureids: { type: 'ints', required: true },
  nodes_modes: { type: 'strings', required: true, allowed: TREE_MODES },
  nodes_values: { type: 'floats' },
  nodes_values_as_tensor: { type: 'tensor', since: 3 },
  nodes_truenodeids: { type: 'ints', required: true },
  nodes_falsenodeids: { type: 'ints', required: true },
  nodes_missing_value_tracks_true: { type: 'ints', allowed: [0, 1] },
  nodes_hitrates: { type: 'floats', drop: true, doc: 'performance hint, ignored' },
  nodes_hitrates_as_tensor: { type: 'tensor', since: 3, drop: true, doc: 'performance hint, ignored' },
  post_transform: { type: 'string', default: s('NONE'), allowed: POST_TRANSFORMS },
};

const TREE_NODE_LISTS = [
  'nodes_treeids',
  'nodes_nodeids',
  'nodes_featureids',
  'nodes_modes',
  'nodes_values',
  'nodes_truenodeids',
  'nodes_falsenodeids',
];

/** The regressor's target_* or the classifier's class_* lists: one entry per leaf weight. */
type LeafPrefix = 'target' | 'class';

function leafAttributes(prefix: LeafPrefix): Record<string, AttributeRule> {
  return {
    [`${prefix}_ids`]: { type: 'ints', required: true },
    [`${prefix}_nodeids`]: { type: 'ints', required: true },
    [`${prefix}_treeids`]: { type: 'ints', required: true },
    [`${prefix}_weights`]: { type: 'floats' },
    [`${prefix}_weights_as_tensor`]: { type: 'tensor', since: 3 },
  };
}

/** The canonical form the regressor and the classifier share (everything but n_targets). */
function normalizeTreeLists(ctx: NodeContext, prefix: LeafPrefix): void {
  for (const n of ['nodes_values', `${prefix}_weights`, 'base_values']) asTensorToFloats(ctx, n);
  if (ctx.node.attributes.base_values === undefined) ctx.node.attributes.base_values = floats([]);
  const count = requireSameLength(ctx, TREE_NODE_LISTS);
  fillZeros(ctx, 'nodes_missing_value_tracks_true', count);
  requireSameLength(ctx, [`${prefix}_ids`, `${prefix}_nodeids`, `${prefix}_treeids`, `${prefix}_weights`]);
}

const TREE_DEPRECATED = (version: number) =>
  version >= 5 ? 'it is deprecated from ai.onnx.ml opset 5, where ai.onnx.ml.TreeEnsemble replaces it' : '';

export const ML_TREE_OPERATORS: readonly OperatorSpec[] = [
  operatorSpec(ML, 'TreeEnsembleRegressor', [1, 3, 5], {
    supported: [1, 3],
    unsupportedVersion: TREE_DEPRECATED,
    attributes: {
      ...TREE_NODE_ATTRIBUTES,
      aggregate_function: { type: 'string', default: s('SUM'), allowed: AGGREGATE_FUNCTIONS },
      base_values: { type: 'floats' },
      base_values_as_tensor: { type: 'tensor', since: 3 },
      n_targets: { type: 'int' },
      ...leafAttributes('target'),
    },
    exactlyOne: [
      ['nodes_values', 'nodes_values_as_tensor'],
      ['target_weights', 'target_weights_as_tensor'],
    ],
    canonical:
      'nodes_treeids, nodes_nodeids, nodes_featureids, nodes_truenodeids, nodes_falsenodeids (ints), nodes_modes ' +
      '(strings BRANCH_LEQ|BRANCH_LT|BRANCH_GTE|BRANCH_GT|BRANCH_EQ|BRANCH_NEQ|LEAF), nodes_values (floats), ' +
      'nodes_missing_value_tracks_true (ints, one per node, zeros by default), target_ids, target_nodeids, ' +
      'target_treeids (ints), target_weights (floats), base_values (floats, may be empty), n_targets (int; ' +
      'max(target_ids) + 1 when absent), aggregate_function (SUM|AVERAGE|MIN|MAX), post_transform; the ' +
      '*_as_tensor variants become the plain floats attributes (values exact, as numbers); nodes_hitrates dropped',
    normalize(ctx) {
      normalizeTreeLists(ctx, 'target');
      fillTargets(ctx, 'target_ids');
    },
  }),
  operatorSpec(ML, 'TreeEnsembleClassifier', [1, 3, 5], {
    supported: [1, 3],
    unsupportedVersion: TREE_DEPRECATED,
    outputs: [1, 2],
    attributes: {
      ...TREE_NODE_ATTRIBUTES,
      base_values: { type: 'floats' },
      base_values_as_tensor: { type: 'tensor', since: 3 },
      ...leafAttributes('class'),
      classlabels_int64s: { type: 'ints' },
      classlabels_strings: { type: 'strings' },
    },
    exactlyOne: [
      ['nodes_values', 'nodes_values_as_tensor'],
      ['class_weights', 'class_weights_as_tensor'],
      ['classlabels_int64s', 'classlabels_strings'],
    ],
    canonical:
      'as TreeEnsembleRegressor for nodes_*; class_ids, class_nodeids, class_treeids (ints), class_weights ' +
      '(floats), exactly one of classlabels_int64s / classlabels_strings, base_values (floats, may be empty), ' +
      'post_transform; outputs Y (labels) and Z (scores [N, E])',
    normalize(ctx) {
      normalizeTreeLists(ctx, 'class');
    },
  }),

  // ---- TreeEnsemble (ai.onnx.ml 5) ----
  operatorSpec(ML, 'TreeEnsemble', [5], {
    attributes: {
      nodes_featureids: { type: 'ints', required: true },
      nodes_splits: { type: 'tensor', required: true },
      nodes_hitrates: { type: 'tensor', drop: true, doc: 'performance hint, ignored' },
      nodes_modes: { type: 'tensor', required: true, doc: 'uint8 codes 0..6, see TREE_ENSEMBLE_MODES' },
      nodes_truenodeids: { type: 'ints', required: true },
      nodes_falsenodeids: { type: 'ints', required: true },
      nodes_trueleafs: { type: 'ints', required: true, allowed: [0, 1] },
      nodes_falseleafs: { type: 'ints', required: true, allowed: [0, 1] },
      nodes_missing_value_tracks_true: { type: 'ints', allowed: [0, 1] },
      tree_roots: { type: 'ints', required: true },
      membership_values: { type: 'tensor' },
      leaf_targetids: { type: 'ints', required: true },
      leaf_weights: { type: 'tensor', required: true },
      n_targets: { type: 'int' },
      post_transform: { type: 'int', default: i(0), allowed: [0, 1, 2, 3, 4] },
      aggregate_function: { type: 'int', default: i(1), allowed: [0, 1, 2, 3] },
    },
    canonical:
      'nodes_modes as strings (BRANCH_LEQ|BRANCH_LT|BRANCH_GTE|BRANCH_GT|BRANCH_EQ|BRANCH_NEQ|BRANCH_MEMBER), ' +
      'post_transform and aggregate_function as the same strings as the older tree operators; nodes_splits, ' +
      'leaf_weights, membership_values (empty when absent) as floats; nodes_missing_value_tracks_true filled with ' +
      'zeros; n_targets max(leaf_targetids) + 1 when absent; nodes_hitrates dropped',
    normalize(ctx) {
      const attrs = ctx.node.attributes;
      const modes = attrs.nodes_modes;
      if (modes?.type === 'tensor') {
        const names = Array.from(modes.value.data as ArrayLike<number | bigint | string>, (code) => {
          const name = typeof code === 'number' ? TREE_ENSEMBLE_MODES[code] : undefined;
          return name ?? ctx.unsupportedAttribute('nodes_modes', String(code));
        });
        attrs.nodes_modes = { type: 'strings', value: names };
      }
      const post = attrs.post_transform;
      if (post?.type === 'int') attrs.post_transform = s(POST_TRANSFORMS[post.value] ?? 'NONE');
      const agg = attrs.aggregate_function;
      if (agg?.type === 'int') attrs.aggregate_function = s(AGGREGATE_FUNCTIONS[agg.value] ?? 'SUM');
      for (const n of ['nodes_splits', 'leaf_weights', 'membership_values']) tensorToFloatsAttr(ctx, n);
      if (attrs.membership_values === undefined) attrs.membership_values = floats([]);
      const count = requireSameLength(ctx, [
        'nodes_featureids',
        'nodes_splits',
        'nodes_modes',
        'nodes_truenodeids',
        'nodes_falsenodeids',
        'nodes_trueleafs',
        'nodes_falseleafs',
      ]);
      fillZeros(ctx, 'nodes_missing_value_tracks_true', count);
      requireSameLength(ctx, ['leaf_targetids', 'leaf_weights']);
      fillTargets(ctx, 'leaf_targetids');
    },
  }),
];
