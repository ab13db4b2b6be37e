// Checks a parsed model against the operator support table (operators/) and rewrites every node
// into the one canonical form its operator's row describes, so that the executor implements one
// form per operator instead of every opset's.
//
// validateSupported(model) throws UnsupportedOperatorError (or OnnxModelError for a malformed node)
// for the first node the engine cannot run; normalize(model) returns the executor's form of the
// model. What normalize guarantees, for every node it returns:
// - the node's operator is in OPERATORS and `version` is the operator version that applies;
// - every attribute is of the type listed in the operator's `attributes`, every attribute with a
//   default is present (defaults filled in), version-specific and ignored attributes are gone, and
//   the operator-specific canonical form (the row's `canonical`) holds;
// - trailing omitted inputs ('') are trimmed, so `inputs.length` counts the inputs given;
// - Constant nodes are folded into initializers (named after their output), so the executor never
//   sees a Constant; initializers no node or graph output uses any more are dropped;
// - integer attributes are exact (no int64 outside ±(2^53 - 1) survives).

import { OnnxModelError, UnsupportedOperatorError } from './errors.js';
import { findOperator } from './operators/index.js';
import { SUPPORTED_OPSETS, type AttributeRule, type NodeContext, type OperatorSpec } from './operators/spec.js';
import { qualifiedOpType } from './parse.js';
import type { NormalizedModel, NormalizedNode, OnnxAttribute, OnnxAttributeType, OnnxModel, OnnxTensor } from './types.js';

// ---- messages ----

function domainLabel(domain: string): string {
  return domain === '' ? 'ai.onnx' : domain;
}

function formatScalar(v: string | number | bigint): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

function formatAttribute(a: OnnxAttribute): string {
  switch (a.type) {
    case 'float':
    case 'string':
      return formatScalar(a.value);
    case 'int':
      return a.exact ?? String(a.value);
    case 'floats':
    case 'strings':
    case 'ints': {
      const items = (a.type === 'ints' && a.exact ? a.exact : a.value.map(formatScalar)).slice(0, 8);
      return `[${items.join(', ')}${a.value.length > 8 ? ', ...' : ''}]`;
    }
    case 'tensor':
      return `tensor(${a.value.dataType})[${a.value.dims.join(', ')}]`;
    default:
      return a.type;
  }
}

const ARTICLE: Readonly<Record<OnnxAttributeType, string>> = {
  float: 'a float',
  int: 'an int',
  string: 'a string',
  tensor: 'a tensor',
  graph: 'a graph',
  floats: 'a list of floats',
  ints: 'a list of ints',
  strings: 'a list of strings',
  tensors: 'a list of tensors',
  graphs: 'a list of graphs',
  sparse_tensor: 'a sparse tensor',
  sparse_tensors: 'a list of sparse tensors',
  type_proto: 'a type',
  type_protos: 'a list of types',
};

function ruleFor(spec: OperatorSpec, name: string, version: number): AttributeRule | undefined {
  const rule = spec.attributes[name];
  if (rule === undefined) return undefined;
  if (rule.since !== undefined && version < rule.since) return undefined;
  if (rule.until !== undefined && version > rule.until) return undefined;
  return rule;
}

// ---- normalisation ----

/** The since-version that applies at `opset`: the highest one not above it. */
export function resolveVersion(spec: OperatorSpec, opset: number): number | undefined {
  let found: number | undefined;
  for (const v of spec.history) if (v <= opset) found = v;
  return found;
}

interface ModelState {
  model: OnnxModel;
  constants: Map<string, OnnxTensor>;
  initializers: OnnxTensor[];
  taken: Set<string>;
}

function freshName(state: ModelState, base: string): string {
  let name = base;
  for (let k = 1; state.taken.has(name); k++) name = `${base}_${k}`;
  state.taken.add(name);
  return name;
}

function trimTrailing(names: string[]): string[] {
  let end = names.length;
  while (end > 0 && names[end - 1] === '') end--;
  return names.slice(0, end);
}

/** Normalises one node, or returns null when it was folded away. */
function normalizeNode(node: OnnxModel['graph']['nodes'][number], state: ModelState): NormalizedNode | null {
  const q = qualifiedOpType(node.domain, node.opType);
  const opset = state.model.opsetImports[node.domain] ?? 0;
  const opLabel = `operator "${q}" (node "${node.name}", opset ${domainLabel(node.domain)} ${opset})`;
  const details = { operator: q, node: node.name, domain: node.domain, opset };
  const unsupported = (reason?: string): never => {
    throw new UnsupportedOperatorError(`${opLabel} is not supported${reason ? `: ${reason}` : ''}`, details);
  };
  const unsupportedAttribute = (name: string, value?: string): never => {
    throw new UnsupportedOperatorError(
      `attribute "${name}"${value === undefined ? '' : `=${value}`} of ${opLabel} is not supported`,
      { ...details, attribute: name },
    );
  };
  const invalid = (what: string): never => {
    throw new OnnxModelError(`node "${node.name}" (operator "${q}") ${what}`);
  };

  const spec = findOperator(node.domain, node.opType);
  if (spec === undefined) {
    return unsupported(state.model.functions.includes(q) ? 'it is a model-local function' : undefined);
  }
  const range = SUPPORTED_OPSETS[node.domain];
  if (range && opset > range.max) {
    unsupported(`the newest supported ${domainLabel(node.domain)} opset is ${range.max}`);
  }
  const version = resolveVersion(spec, opset);
  if (version === undefined) {
    return unsupported(`it does not exist before ${domainLabel(node.domain)} opset ${spec.history[0]}`);
  }
  if (!spec.supported.includes(version)) return unsupported(spec.unsupportedVersion?.(version) || undefined);

  const inputs = trimTrailing(node.inputs);
  const outputs = trimTrailing(node.outputs);
  const [minIn, maxIn] = spec.inputs(version);
  if (inputs.length < minIn || inputs.length > maxIn) {
    const takes = minIn === maxIn ? `${minIn}` : maxIn === Infinity ? `at least ${minIn}` : `${minIn} to ${maxIn}`;
    invalid(`has ${inputs.length} input${inputs.length === 1 ? '' : 's'}, but version ${version} takes ${takes}`);
  }
  for (let k = 0; k < minIn; k++) if (inputs[k] === '') invalid(`leaves its required input ${k} empty`);
  const [minOut, maxOut] = spec.outputs;
  if (outputs.length < minOut || outputs.length > maxOut) {
    invalid(`has ${outputs.length} outputs, but version ${version} has ${minOut === maxOut ? minOut : `${minOut} to ${maxOut}`}`);
  }
  if (outputs[0] === '') invalid('leaves its first output empty');

  // Attributes: known, of the right type, with supported values.
  const attributes: Record<string, OnnxAttribute> = {};
  for (const [name, a] of Object.entries(node.attributes)) {
    const rule = ruleFor(spec, name, version);
    if (rule === undefined) return unsupportedAttribute(name);
    if (rule.refused) unsupportedAttribute(name, formatAttribute(a));
    const type = rule.legacy && version <= rule.legacy.until ? rule.legacy.type : rule.type;
    if (a.type !== type) invalid(`attribute "${name}" must be ${ARTICLE[type]}, not ${ARTICLE[a.type]}`);
    if ((a.type === 'int' || a.type === 'ints') && a.exact !== undefined) {
      const exact = typeof a.exact === 'string' ? [a.exact] : a.exact;
      const big = exact.find((e) => !Number.isSafeInteger(Number(e)));
      unsupportedAttribute(name, big ?? exact[0]);
    }
    if (rule.allowed) {
      const values: (string | number)[] =
        a.type === 'int' || a.type === 'float' || a.type === 'string'
          ? [a.value]
          : a.type === 'ints' || a.type === 'floats' || a.type === 'strings'
            ? a.value
            : [];
      const bad = values.find((v) => !rule.allowed!.includes(v));
      if (bad !== undefined) unsupportedAttribute(name, formatScalar(bad));
    }
    if (!rule.drop) attributes[name] = a;
  }
  for (const [name, rule] of Object.entries(spec.attributes)) {
    if (ruleFor(spec, name, version) !== rule) continue;
    if (node.attributes[name] === undefined) {
      if (rule.required) invalid(`lacks the required attribute "${name}"`);
      if (rule.default !== undefined) {
        attributes[name] = typeof rule.default === 'function' ? rule.default(version) : rule.default;
      }
    }
  }
  for (const group of spec.exactlyOne ?? []) {
    const applicable = group.filter((n) => ruleFor(spec, n, version) !== undefined);
    const set = applicable.filter((n) => node.attributes[n] !== undefined);
    if (set.length === 0) invalid(`sets none of the attributes ${applicable.map((n) => `"${n}"`).join(', ')}; it needs one`);
    if (set.length > 1) invalid(`sets both "${set[0]}" and "${set[1]}", of which it needs exactly one`);
  }

  const result: NormalizedNode = {
    name: node.name,
    opType: node.opType,
    domain: node.domain,
    version,
    inputs: [...inputs],
    outputs: [...outputs],
    attributes,
  };
  let folded = false;
  const ctx: NodeContext = {
    node: result,
    version,
    opset,
    constant: (name) => state.constants.get(name),
    addInitializer(base, tensor) {
      const name = freshName(state, base);
      const t = { ...tensor, name };
      state.constants.set(name, t);
      state.initializers.push(t);
      return name;
    },
    fold(tensor) {
      const name = outputs[0]!;
      const t = { ...tensor, name };
      state.constants.set(name, t);
      state.initializers.push(t);
      folded = true;
    },
    unsupported,
    unsupportedAttribute,
    invalid,
  };
  spec.normalize?.(ctx);
  if (folded) return null;
  result.inputs = trimTrailing(result.inputs);
  return result;
}

/**
 * The executor's form of a parsed model (see the guarantees at the top of this file). Throws
 * UnsupportedOperatorError for the first node the engine cannot run, or OnnxModelError for a node
 * that is malformed for its operator. Does not modify `model`; tensors are shared, not copied.
 */
export function normalize(model: OnnxModel): NormalizedModel {
  const g = model.graph;
  const state: ModelState = {
    model,
    constants: new Map(g.initializers.map((t) => [t.name, t])),
    initializers: [...g.initializers],
    taken: new Set([
      ...g.inputs.map((v) => v.name),
      ...g.initializers.map((t) => t.name),
      ...g.nodes.flatMap((n) => n.outputs),
    ]),
  };
  const nodes: NormalizedNode[] = [];
  for (const node of g.nodes) {
    const n = normalizeNode(node, state);
    if (n) nodes.push(n);
  }
  const used = new Set([...nodes.flatMap((n) => n.inputs), ...g.outputs.map((o) => o.name)]);
  return {
    ...model,
    graph: {
      ...g,
      initializers: state.initializers.filter((t) => used.has(t.name)),
      nodes,
    },
  };
}

/**
 * Checks that the engine can run every node of the model: throws UnsupportedOperatorError naming
 * the operator, the node and the opset (or the attribute) of the first one it cannot, and
 * OnnxModelError for a node that is malformed for its operator.
 */
export function validateSupported(model: OnnxModel): void {
  normalize(model);
}
