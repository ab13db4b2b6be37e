// parseOnnxModel: ONNX bytes -> the plain OnnxModel of types.ts, decoded with protobufjs through
// our schema, and checked for the structural faults that would make it unusable: not protobuf, no
// graph, values used but never produced, values produced twice, cycles, unsupported types, external
// data. Whether the engine supports its operators is normalize.ts's business (validateSupported).

import { OnnxModelError } from './errors.js';
import {
  has,
  int64ToBigInt,
  int64ToSafeNumber,
  ModelProto,
  TensorProto,
  type PbAttribute,
  type PbGraph,
  type PbInt64,
  type PbModel,
  type PbNode,
  type PbTensor,
  type PbType,
  type PbValueInfo,
} from './proto.js';
import { dataTypeName, decodeTensor, decodeUtf8, elementTypeFromCode, requireElementType } from './tensor.js';
import type {
  Dim,
  OnnxAttribute,
  OnnxGraph,
  OnnxModel,
  OnnxNode,
  OnnxSubgraphSummary,
  OnnxTensor,
  OnnxValueInfo,
} from './types.js';

export { OnnxModelError } from './errors.js';

/** The default domain's two spellings. */
export function normalizeDomain(domain: string): string {
  return domain === 'ai.onnx' ? '' : domain;
}

/** `Gemm` for the default domain, `ai.onnx.ml.ZipMap` otherwise. */
export function qualifiedOpType(domain: string, opType: string): string {
  return domain === '' ? opType : `${domain}.${opType}`;
}

function decodeFailure(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  // protobufjs's "index out of range: 12 + 10 > 16": a length or value runs past the end.
  if (/index out of range/i.test(msg)) return 'it is truncated or not protobuf data (a field runs past the end of the data)';
  return `it is not protobuf data (${msg})`;
}

function decode<T>(type: typeof ModelProto, bytes: Uint8Array): T {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('expected the file contents as a Uint8Array');
  if (bytes.byteLength === 0) throw new OnnxModelError('not an ONNX model: the file is empty');
  try {
    return type.decode(bytes) as unknown as T;
  } catch (err) {
    throw new OnnxModelError(`not an ONNX model: ${decodeFailure(err)}`);
  }
}

/**
 * Decodes a serialized TensorProto (the input_*.pb / output_*.pb files of the ONNX backend tests).
 */
export function parseTensorProto(bytes: Uint8Array): OnnxTensor {
  if (!(bytes instanceof Uint8Array)) throw new TypeError('expected the file contents as a Uint8Array');
  if (bytes.byteLength === 0) throw new OnnxModelError('not an ONNX tensor: the file is empty');
  let pb: PbTensor;
  try {
    pb = TensorProto.decode(bytes) as unknown as PbTensor;
  } catch (err) {
    throw new OnnxModelError(`not an ONNX tensor: ${decodeFailure(err)}`);
  }
  return decodeTensor(pb, pb.name ? `tensor "${pb.name}"` : 'the tensor');
}

function safeInt(v: PbInt64, what: string): number {
  const n = int64ToSafeNumber(v);
  if (n === null) throw new OnnxModelError(`${what} ${int64ToBigInt(v).toString()} is out of range`);
  return n;
}

// ---- types ----

/** A TypeProto as text for messages: tensor(float), seq(map(int64, tensor(float))), ... */
export function typeToString(t: PbType | null | undefined): string {
  if (!t) return 'no type';
  if (t.tensorType) return `tensor(${dataTypeName(t.tensorType.elemType)})`;
  if (t.sequenceType) return `seq(${typeToString(t.sequenceType.elemType)})`;
  if (t.mapType) return `map(${dataTypeName(t.mapType.keyType)}, ${typeToString(t.mapType.valueType)})`;
  if (t.optionalType) return `optional(${typeToString(t.optionalType.elemType)})`;
  if (t.sparseTensorType) return `sparse_tensor(${dataTypeName(t.sparseTensorType.elemType)})`;
  if (t.opaqueType) return 'opaque';
  return 'no type';
}

function parseShape(shape: { dim: { dimValue: PbInt64; dimParam: string; value?: string }[] } | null, what: string): Dim[] | null {
  if (!shape) return null;
  return shape.dim.map((d) => {
    if (d.value === 'dimValue' || (has(d, 'dimValue') && d.value === undefined)) {
      const n = int64ToSafeNumber(d.dimValue);
      if (n === null || n < 0) {
        throw new OnnxModelError(`${what} has an invalid dimension ${int64ToBigInt(d.dimValue).toString()}`);
      }
      return n;
    }
    if (d.value === 'dimParam' && d.dimParam !== '') return d.dimParam;
    return null;
  });
}

/**
 * A ValueInfoProto as an OnnxValueInfo. Tensors and seq(map(int64|string, tensor)) are
 * representable; a missing type is 'unknown' where `allowUnknown`, anything else is refused.
 */
function parseValueInfo(vi: PbValueInfo, what: string, allowUnknown: boolean, allowSequenceMap: boolean): OnnxValueInfo {
  const t = vi.type;
  const name = vi.name;
  if (!t || (!t.tensorType && !t.sequenceType && !t.mapType && !t.optionalType && !t.sparseTensorType && !t.opaqueType)) {
    if (allowUnknown) return { name, kind: 'unknown' };
    throw new OnnxModelError(`${what} has no type`);
  }
  if (t.tensorType) {
    const elemType = requireElementType(t.tensorType.elemType, what);
    return { name, kind: 'tensor', elemType, shape: parseShape(t.tensorType.shape, what) };
  }
  const seqElem = t.sequenceType?.elemType;
  if (allowSequenceMap && seqElem?.mapType) {
    const key = elementTypeFromCode(seqElem.mapType.keyType);
    const value = seqElem.mapType.valueType?.tensorType;
    const valueType = value ? elementTypeFromCode(value.elemType) : undefined;
    if ((key === 'int64' || key === 'string') && valueType !== undefined) {
      return { name, kind: 'sequence-map', keyType: key, valueType };
    }
  }
  throw new OnnxModelError(`${what} has type ${typeToString(t)}, which is not supported`);
}

// ---- attributes ----

const ATTRIBUTE_TYPES: Readonly<Record<number, OnnxAttribute['type']>> = {
  1: 'float',
  2: 'int',
  3: 'string',
  4: 'tensor',
  5: 'graph',
  6: 'floats',
  7: 'ints',
  8: 'strings',
  9: 'tensors',
  10: 'graphs',
  11: 'sparse_tensor',
  12: 'sparse_tensors',
  13: 'type_proto',
  14: 'type_protos',
};

/** IR version 1 files carry no attribute type: infer it from the field that is set. */
function inferAttributeType(a: PbAttribute): OnnxAttribute['type'] | undefined {
  if (has(a, 'f')) return 'float';
  if (has(a, 'i')) return 'int';
  if (has(a, 's')) return 'string';
  if (a.t) return 'tensor';
  if (a.g) return 'graph';
  if (a.sparseTensor) return 'sparse_tensor';
  if (a.tp) return 'type_proto';
  if (a.floats.length) return 'floats';
  if (a.ints.length) return 'ints';
  if (a.strings.length) return 'strings';
  if (a.tensors.length) return 'tensors';
  if (a.graphs.length) return 'graphs';
  if (a.sparseTensors.length) return 'sparse_tensors';
  if (a.typeProtos.length) return 'type_protos';
  return undefined;
}

function summarizeGraph(g: PbGraph): OnnxSubgraphSummary {
  const opTypes: string[] = [];
  for (const n of g.node) {
    const q = qualifiedOpType(normalizeDomain(n.domain), n.opType);
    if (!opTypes.includes(q)) opTypes.push(q);
  }
  return { name: g.name, opTypes, nodeCount: g.node.length };
}

function parseAttribute(a: PbAttribute, nodeName: string): OnnxAttribute {
  const what = `attribute "${a.name}" of node "${nodeName}"`;
  if (a.refAttrName) {
    throw new OnnxModelError(`${what} refers to a function attribute ("${a.refAttrName}") outside a function`);
  }
  const type = a.type === 0 ? inferAttributeType(a) : ATTRIBUTE_TYPES[a.type];
  if (type === undefined) {
    throw new OnnxModelError(a.type === 0 ? `${what} has no value` : `${what} has an unknown type ${a.type}`);
  }
  switch (type) {
    case 'float':
      return { type, value: a.f };
    case 'int': {
      const n = int64ToSafeNumber(a.i);
      return n === null
        ? { type, value: Number(int64ToBigInt(a.i)), exact: int64ToBigInt(a.i).toString() }
        : { type, value: n };
    }
    case 'string':
      return { type, value: decodeUtf8(a.s, what) };
    case 'tensor':
      if (!a.t) throw new OnnxModelError(`${what} is of type tensor but holds none`);
      return { type, value: decodeTensor(a.t, what) };
    case 'graph':
      if (!a.g) throw new OnnxModelError(`${what} is of type graph but holds none`);
      return { type, value: summarizeGraph(a.g) };
    case 'floats':
      return { type, value: Array.from(a.floats) };
    case 'ints': {
      const values = a.ints.map((v) => int64ToSafeNumber(v));
      if (values.every((v) => v !== null)) return { type, value: values as number[] };
      return {
        type,
        value: a.ints.map((v) => Number(int64ToBigInt(v))),
        exact: a.ints.map((v) => int64ToBigInt(v).toString()),
      };
    }
    case 'strings':
      return { type, value: a.strings.map((s) => decodeUtf8(s, what)) };
    case 'tensors':
      return { type, value: a.tensors.map((t, i) => decodeTensor(t, `tensor ${i} of ${what}`)) };
    case 'graphs':
      return { type, value: a.graphs.map(summarizeGraph) };
    default:
      return { type, value: null };
  }
}

// ---- graph ----

function parseNodes(pbNodes: PbNode[], opsetImports: Record<string, number>): OnnxNode[] {
  const taken = new Set(pbNodes.map((n) => n.name).filter((n) => n !== ''));
  return pbNodes.map((n, index) => {
    if (!n.opType) {
      throw new OnnxModelError(
        n.name ? `node "${n.name}" has no operator type` : `node ${index} of the graph has no operator type`,
      );
    }
    let name = n.name;
    if (name === '') {
      name = `${n.opType}_${index}`;
      for (let k = 1; taken.has(name); k++) name = `${n.opType}_${index}_${k}`;
      taken.add(name);
    }
    const domain = normalizeDomain(n.domain);
    if (opsetImports[domain] === undefined) {
      throw new OnnxModelError(
        `node "${name}" uses the operator set ${domain === '' ? 'ai.onnx' : `"${domain}"`}, which the model does not import`,
      );
    }
    const attributes: Record<string, OnnxAttribute> = {};
    for (const a of n.attribute) {
      if (!a.name) throw new OnnxModelError(`node "${name}" has an attribute without a name`);
      if (Object.prototype.hasOwnProperty.call(attributes, a.name)) {
        throw new OnnxModelError(`node "${name}" sets attribute "${a.name}" twice`);
      }
      attributes[a.name] = parseAttribute(a, name);
    }
    if (n.output.length === 0 || n.output.every((o) => o === '')) {
      throw new OnnxModelError(`node "${name}" has no outputs`);
    }
    return { name, opType: n.opType, domain, inputs: [...n.input], outputs: [...n.output], attributes };
  });
}

/** The nodes in a topological order that keeps the file's order where it already is one. */
function topologicalOrder(nodes: OnnxNode[], producer: Map<string, number>): OnnxNode[] {
  const state = new Uint8Array(nodes.length); // 0 new, 1 on the stack, 2 done
  const order: OnnxNode[] = [];
  const deps = nodes.map((n) => {
    const d: number[] = [];
    for (const input of n.inputs) {
      const p = input === '' ? undefined : producer.get(input);
      if (p !== undefined) d.push(p);
    }
    return d;
  });
  for (let start = 0; start < nodes.length; start++) {
    if (state[start] !== 0) continue;
    const stack: { node: number; next: number }[] = [{ node: start, next: 0 }];
    state[start] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const d = deps[top.node]!;
      if (top.next < d.length) {
        const dep = d[top.next++]!;
        if (state[dep] === 1) {
          throw new OnnxModelError(`the graph has a cycle through node "${nodes[dep]!.name}"`);
        }
        if (state[dep] === 0) {
          state[dep] = 1;
          stack.push({ node: dep, next: 0 });
        }
      } else {
        state[top.node] = 2;
        order.push(nodes[top.node]!);
        stack.pop();
      }
    }
  }
  return order;
}

function parseGraph(g: PbGraph, opsetImports: Record<string, number>): OnnxGraph {
  const initializers: OnnxTensor[] = [];
  const initializerNames = new Set<string>();
  for (const [i, pb] of g.initializer.entries()) {
    if (!pb.name) throw new OnnxModelError(`initializer ${i} of the graph has no name`);
    if (initializerNames.has(pb.name)) throw new OnnxModelError(`initializer "${pb.name}" is declared twice`);
    initializerNames.add(pb.name);
    initializers.push(decodeTensor(pb, `initializer "${pb.name}"`));
  }
  const sparse = g.sparseInitializer[0];
  if (sparse) {
    throw new OnnxModelError(`sparse initializer "${sparse.values?.name ?? ''}" is not supported`);
  }

  const inputs: OnnxValueInfo[] = [];
  const inputNames = new Set<string>();
  for (const [i, vi] of g.input.entries()) {
    if (!vi.name) throw new OnnxModelError(`graph input ${i} has no name`);
    if (inputNames.has(vi.name)) throw new OnnxModelError(`graph input "${vi.name}" is declared twice`);
    inputNames.add(vi.name);
    // An input that is also an initializer is a constant with a default (IR >= 4) or the IR 3 way
    // of declaring weights: either way not something a caller feeds.
    if (initializerNames.has(vi.name)) continue;
    inputs.push(parseValueInfo(vi, `graph input "${vi.name}"`, false, false));
  }
  const realInputNames = new Set(inputs.map((i) => i.name));

  const nodes = parseNodes(g.node, opsetImports);
  const producer = new Map<string, number>();
  for (const [index, node] of nodes.entries()) {
    for (const out of node.outputs) {
      if (out === '') continue;
      const prev = producer.get(out);
      if (prev !== undefined) {
        throw new OnnxModelError(
          prev === index
            ? `node "${node.name}" lists output "${out}" twice`
            : `value "${out}" is produced twice, by node "${nodes[prev]!.name}" and by node "${node.name}"`,
        );
      }
      if (realInputNames.has(out)) {
        throw new OnnxModelError(`node "${node.name}" output "${out}" has the name of a graph input`);
      }
      if (initializerNames.has(out)) {
        throw new OnnxModelError(`node "${node.name}" output "${out}" has the name of an initializer`);
      }
      producer.set(out, index);
    }
  }
  const known = (name: string) => realInputNames.has(name) || initializerNames.has(name) || producer.has(name);
  for (const node of nodes) {
    for (const input of node.inputs) {
      if (input !== '' && !known(input)) {
        throw new OnnxModelError(
          `node "${node.name}" input "${input}" is never produced: it is not a graph input, an initializer or the output of a node`,
        );
      }
    }
  }

  if (g.output.length === 0) throw new OnnxModelError('the graph has no outputs');
  const outputs: OnnxValueInfo[] = [];
  const outputNames = new Set<string>();
  for (const [i, vi] of g.output.entries()) {
    if (!vi.name) throw new OnnxModelError(`graph output ${i} has no name`);
    if (outputNames.has(vi.name)) throw new OnnxModelError(`graph output "${vi.name}" is declared twice`);
    outputNames.add(vi.name);
    if (!known(vi.name)) throw new OnnxModelError(`graph output "${vi.name}" is never produced`);
    outputs.push(parseValueInfo(vi, `graph output "${vi.name}"`, true, true));
  }

  const valueInfo: OnnxValueInfo[] = [];
  for (const vi of g.valueInfo) {
    if (!vi.name) continue;
    try {
      valueInfo.push(parseValueInfo(vi, `value "${vi.name}"`, true, true));
    } catch {
      // Declared types of intermediate values are hints; an unrepresentable one is left out.
    }
  }

  return {
    name: g.name,
    inputs,
    outputs,
    initializers,
    nodes: topologicalOrder(nodes, producer),
    valueInfo,
  };
}

/**
 * Parses an ONNX model (the bytes of a .onnx file) into the plain OnnxModel of types.ts.
 * Throws OnnxModelError, with a one-sentence message, for anything that is not a usable model.
 */
export function parseOnnxModel(bytes: Uint8Array): OnnxModel {
  const pb = decode<PbModel>(ModelProto, bytes);

  if (!has(pb, 'irVersion')) throw new OnnxModelError('not an ONNX model: it has no IR version');
  const irVersion = int64ToSafeNumber(pb.irVersion);
  if (irVersion === null || irVersion < 1) {
    throw new OnnxModelError(`not an ONNX model: its IR version ${int64ToBigInt(pb.irVersion).toString()} is invalid`);
  }

  if (!pb.graph) throw new OnnxModelError('the ONNX model has no graph');

  const opsetImports: Record<string, number> = {};
  for (const o of pb.opsetImport) {
    const domain = normalizeDomain(o.domain);
    const label = domain === '' ? 'ai.onnx' : `"${domain}"`;
    const version = safeInt(o.version, `the version of operator set ${label}`);
    if (version < 1) throw new OnnxModelError(`the model imports operator set ${label} at invalid version ${version}`);
    if (opsetImports[domain] !== undefined) {
      throw new OnnxModelError(`the model imports operator set ${label} twice`);
    }
    opsetImports[domain] = version;
  }
  if (pb.opsetImport.length === 0) throw new OnnxModelError('the model imports no operator set');

  const metadata: Record<string, string> = {};
  for (const e of pb.metadataProps) metadata[e.key] = e.value;

  return {
    irVersion,
    opsetImports,
    producerName: pb.producerName,
    producerVersion: pb.producerVersion,
    metadata,
    functions: pb.functions.map((f) => qualifiedOpType(normalizeDomain(f.domain), f.name)),
    graph: parseGraph(pb.graph, opsetImports),
  };
}
