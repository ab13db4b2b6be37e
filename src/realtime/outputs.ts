// The executor's output tensors turned into the predict response: one object per input row, in
// order, mapping each output name to its value. A [N] or [N, 1] output gives a scalar, [N, K] an
// array, and a ZipMap output (a classifier's probabilities) an object from class label to value.
import type { FeatureSchema } from '../tabular/onnx/index.js';
import type { TabularOutput } from '../tabular/executor/index.js';
import { rowSize } from './batch-rows.js';

type Json = number | string | null | Json[] | { [key: string]: Json };

/** One input row's answer: each output name mapped to a scalar, an array or a label -> value map. */
export type PredictRow = Record<string, Json>;

function scalar(data: TabularOutput['data'], i: number): Json {
  const v = data[i];
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  return v ?? null;
}

export function outputsToRows(schema: FeatureSchema, outputs: TabularOutput[], rows: number): PredictRow[] {
  const result: PredictRow[] = Array.from({ length: rows }, () => ({}));
  outputs.forEach((out, k) => {
    const name = schema.outputs[k]?.name ?? out.name;
    const size = rowSize(out.dims);
    const keys = out.mapKeys ? Array.from(out.mapKeys as ArrayLike<bigint | string>, (key) => String(key)) : undefined;
    for (let r = 0; r < rows; r++) {
      const row = result[r]!;
      if (keys) {
        const map: Record<string, Json> = {};
        keys.forEach((key, c) => (map[key] = scalar(out.data, r * size + c)));
        row[name] = map;
      } else if (size === 1) {
        row[name] = scalar(out.data, r);
      } else {
        row[name] = Array.from({ length: size }, (_, c) => scalar(out.data, r * size + c));
      }
    }
  });
  return result;
}
