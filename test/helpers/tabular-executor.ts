// Shared by the tabular executor tests (test/tabular-executor-*.test.ts): compiling builder models,
// running the same model on onnxruntime-node, and comparing outputs. Seeded input data is in
// tabular-data.ts.
import ort from 'onnxruntime-node';
import { expect } from 'vitest';

import { compileTabularModel, type TabularInput, type TabularModel, type TabularOutput } from '../../src/tabular/executor/index.js';
import { parseOnnxModel } from '../../src/tabular/onnx/parse.js';
import { ModelProto } from '../../src/tabular/onnx/proto.js';
import type { ElementType } from '../../src/tabular/onnx/types.js';
import { normalized } from './tabular-data.js';

// onnxruntime's warnings about old opsets and lenient shape merges are noise here.
ort.env.logLevel = 'error';

export const BATCHES = [1, 7, 129, 1000] as const;

export function compileBytes(bytes: Uint8Array): TabularModel {
  return compileTabularModel(normalized(bytes));
}

// ---- onnxruntime ----

const ORT_TYPE: Partial<Record<ElementType, ort.Tensor.Type>> = {
  float: 'float32',
  double: 'float64',
  int64: 'int64',
  uint64: 'uint64',
  int32: 'int32',
  uint32: 'uint32',
  int16: 'int16',
  uint16: 'uint16',
  int8: 'int8',
  uint8: 'uint8',
  bool: 'bool',
  string: 'string',
};

function ortTensor(input: TabularInput, type: ElementType): ort.Tensor {
  const t = ORT_TYPE[type];
  if (t === undefined) throw new Error(`no onnxruntime type for ${type}`);
  let data: ort.Tensor.DataType = input.data as ort.Tensor.DataType;
  const ints = input.data as Int32Array;
  if (type === 'int8') data = Int8Array.from(ints);
  if (type === 'uint8' || type === 'bool') data = Uint8Array.from(ints);
  if (type === 'int16') data = Int16Array.from(ints);
  if (type === 'uint16') data = Uint16Array.from(ints);
  return new ort.Tensor(t, data, input.dims);
}

/**
 * The model as onnxruntime-node can run it: ZipMap outputs (seq(map), which onnxruntime-node cannot
 * return) are replaced by the ZipMap's input tensor, and numeric first input dimensions are made
 * symbolic (some converters declare 1 there although the model handles any batch).
 * Returns the bytes and, per graph output, the name onnxruntime reports it under.
 */
export function ortProbe(bytes: Uint8Array): { bytes: Uint8Array; names: Map<string, string> } {
  const m = ModelProto.decode(bytes) as unknown as {
    graph: {
      input: { name: string; type?: { tensorType?: { shape?: { dim?: Record<string, unknown>[] } } } }[];
      output: { name: string }[];
      node: { opType: string; input: string[]; output: string[] }[];
    };
  };
  const names = new Map<string, string>();
  for (const o of m.graph.output) names.set(o.name, o.name);
  for (const n of m.graph.node) {
    if (n.opType !== 'ZipMap') continue;
    const out = n.output[0]!;
    const idx = m.graph.output.findIndex((o) => o.name === out);
    if (idx >= 0) {
      m.graph.output[idx] = { name: n.input[0]! };
      names.set(out, n.input[0]!);
    }
  }
  for (const i of m.graph.input) {
    const dim = i.type?.tensorType?.shape?.dim;
    if (dim && dim.length > 0) dim[0] = { dimParam: 'batch' };
  }
  return { bytes: ModelProto.encode(m as never).finish(), names };
}

export interface Expected {
  dims: readonly number[];
  data: ArrayLike<number | bigint | string | boolean>;
}

/** Runs the model on onnxruntime-node; results keyed by graph output name. */
export async function runOrt(bytes: Uint8Array, inputs: readonly TabularInput[]): Promise<Map<string, Expected>> {
  const model = parseOnnxModel(bytes);
  const probe = ortProbe(bytes);
  const session = await ort.InferenceSession.create(probe.bytes);
  const feeds: Record<string, ort.Tensor> = {};
  for (const input of inputs) {
    const info = model.graph.inputs.find((i) => i.name === input.name);
    if (info?.kind !== 'tensor') throw new Error(`no tensor input ${input.name}`);
    feeds[input.name] = ortTensor(input, info.elemType);
  }
  const result = await session.run(feeds);
  const out = new Map<string, Expected>();
  for (const [graphName, ortName] of probe.names) {
    const t = result[ortName];
    if (t) out.set(graphName, { dims: t.dims, data: t.data as Expected['data'] });
  }
  await session.release();
  return out;
}

export interface Tolerance {
  abs: number;
  rel: number;
}

export const FLOAT_TOL: Tolerance = { abs: 1e-5, rel: 1e-4 };

/** Element-wise comparison: numbers within abs + rel * |expected| (NaN matches NaN), others exact. */
export function expectClose(actual: TabularOutput, expected: Expected, tol: Tolerance = FLOAT_TOL, what = actual.name): void {
  expect(actual.dims, `${what}: dims`).toEqual([...expected.dims]);
  expect(actual.data.length, `${what}: length`).toBe(expected.data.length);
  const a = actual.data as ArrayLike<number | bigint | string>;
  for (let i = 0; i < expected.data.length; i++) {
    const e = expected.data[i];
    const v = a[i];
    if (typeof e === 'number' && typeof v === 'number') {
      if (Number.isNaN(e)) {
        expect(Number.isNaN(v), `${what}[${i}]: expected NaN, got ${v}`).toBe(true);
        continue;
      }
      if (!Number.isFinite(e)) {
        expect(v, `${what}[${i}]`).toBe(e);
        continue;
      }
      const ok = Math.abs(v - e) <= tol.abs + tol.rel * Math.abs(e);
      if (!ok) expect.fail(`${what}[${i}]: got ${v}, expected ${e} (tolerance ${tol.abs} + ${tol.rel} * |expected|)`);
    } else if (typeof e === 'boolean') {
      expect(Boolean(v), `${what}[${i}]`).toBe(e);
    } else {
      expect(v, `${what}[${i}]`).toBe(e);
    }
  }
}

/** Runs `bytes` on both engines (ours through runSync) and compares every graph output. */
export async function compareWithOrt(
  bytes: Uint8Array,
  inputs: readonly TabularInput[],
  tol: Tolerance = FLOAT_TOL,
  label = '',
): Promise<TabularOutput[]> {
  const ours = compileBytes(bytes);
  try {
    const got = ours.runSync(inputs);
    const want = await runOrt(bytes, inputs);
    for (const out of got) {
      const e = want.get(out.name);
      if (!e) throw new Error(`onnxruntime produced no ${out.name}`);
      expectClose(out, e, tol, `${label}${label ? ' ' : ''}${out.name}`);
    }
    return got;
  } finally {
    ours.dispose();
  }
}
