// Which graph inputs a model declares missing-value handling for: where a NaN (the missing value
// of a float feature) is given a meaning by the graph rather than propagating into the answer.
// scikit-learn models converted by skl2onnx declare it in two ways:
//   - a SimpleImputer becomes an ai.onnx.ml Imputer whose replaced_value_float is NaN: it replaces
//     NaN with the imputed value;
//   - a tree ensemble (TreeEnsembleClassifier / TreeEnsembleRegressor, ai.onnx.ml 1-4, and
//     TreeEnsemble, ai.onnx.ml 5) routes NaN at each split along the node's missing-value track
//     (missing_value_tracks_true), the comparison's false branch where the track is not set.
// An input is handled when every path its values take reaches one of these, going only through
// operators that move values without computing with them (Cast to a float type, Concat, Reshape,
// Flatten, Squeeze, Unsqueeze, Identity, ArrayFeatureExtractor) or that keep a NaN a NaN in its
// own cell (Scaler). Any other consumer, or a graph output, could turn the NaN into a silently
// wrong number, so the input is not handled. Tracking is per tensor, not per column: a
// ColumnTransformer that sends some columns of one input to an Imputer and others elsewhere is
// judged as a whole, which can refuse a null the model would handle but never accepts one it
// would not.
import type { OnnxModel, OnnxNode } from './types.js';

const ML = 'ai.onnx.ml';

const TREE_ENSEMBLES = new Set(['TreeEnsembleClassifier', 'TreeEnsembleRegressor', 'TreeEnsemble']);

/** Default-domain operators whose first input reaches their output unchanged but for its layout. */
const LAYOUT_ONLY = new Set(['Identity', 'Concat', 'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze']);

/** Whether `node`, reading a value at input `position`, gives a NaN there a defined meaning. */
function handlesMissing(node: OnnxNode, position: number): boolean {
  if (node.domain !== ML || position !== 0) return false;
  if (TREE_ENSEMBLES.has(node.opType)) return true;
  if (node.opType === 'Imputer') {
    const replaced = node.attributes['replaced_value_float'];
    return replaced?.type === 'float' && Number.isNaN(replaced.value);
  }
  return false;
}

/** Whether `node` passes a NaN read at input `position` on to its outputs, still a NaN. */
function passesMissingOn(node: OnnxNode, position: number): boolean {
  if (node.domain === '') {
    if (node.opType === 'Concat') return true;
    if (node.opType === 'Cast') {
      const to = node.attributes['to'];
      return position === 0 && to?.type === 'string' && (to.value === 'float' || to.value === 'double');
    }
    return position === 0 && LAYOUT_ONLY.has(node.opType);
  }
  if (node.domain === ML) return position === 0 && (node.opType === 'Scaler' || node.opType === 'ArrayFeatureExtractor');
  return false;
}

/**
 * The names of the graph inputs whose NaN values the model handles (see above). Expects a
 * normalized model (`normalize`), whose attributes are in canonical form.
 */
export function inputsHandlingMissingValues(model: OnnxModel): Set<string> {
  const consumers = new Map<string, Array<{ node: OnnxNode; position: number }>>();
  for (const node of model.graph.nodes) {
    node.inputs.forEach((value, position) => {
      if (value === '') return;
      const list = consumers.get(value) ?? [];
      list.push({ node, position });
      consumers.set(value, list);
    });
  }
  const graphOutputs = new Set(model.graph.outputs.map((o) => o.name));

  const handled = new Set<string>();
  for (const input of model.graph.inputs) {
    const pending = [input.name];
    const seen = new Set<string>();
    let ok = true;
    while (ok && pending.length > 0) {
      const value = pending.pop()!;
      if (seen.has(value)) continue;
      seen.add(value);
      if (graphOutputs.has(value)) ok = false;
      for (const { node, position } of consumers.get(value) ?? []) {
        if (handlesMissing(node, position)) continue;
        if (passesMissingOn(node, position)) pending.push(...node.outputs.filter((o) => o !== ''));
        else ok = false;
      }
    }
    if (ok) handled.add(input.name);
  }
  return handled;
}
