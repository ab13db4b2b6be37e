// Joining and splitting executor tensors along the batch: the first dimension of every predict
// input and output is the row, which is what lets the batcher run several requests as one call.
import type { TabularInput, TabularInputData } from '../tabular/executor/index.js';

/** Values per row: the product of every dimension after the first. */
export const rowSize = (dims: readonly number[]) => dims.slice(1).reduce((a, b) => a * b, 1);

/** Joins the tensors of several requests along the batch dimension. */
export function concatRows(parts: TabularInput[]): TabularInput {
  const first = parts[0]!;
  if (parts.length === 1) return first;
  const rows = parts.reduce((n, p) => n + p.dims[0]!, 0);
  const dims = [rows, ...first.dims.slice(1)];
  let data: TabularInputData;
  if (Array.isArray(first.data)) {
    data = parts.flatMap((p) => p.data as string[]);
  } else {
    const Ctor = first.data.constructor as new (n: number) => Exclude<TabularInputData, string[]>;
    const out = new Ctor(rows * rowSize(first.dims));
    let offset = 0;
    for (const p of parts) {
      (out as Float32Array).set(p.data as Float32Array, offset);
      offset += p.data.length;
    }
    data = out;
  }
  return { name: first.name, dims, data };
}

/** Rows [start, start + count) of a batch-major tensor (an input or an output). */
export function sliceRows<T extends TabularInput>(t: T, start: number, count: number): T {
  const size = rowSize(t.dims);
  const data = Array.isArray(t.data) ? t.data.slice(start * size, (start + count) * size) : t.data.subarray(start * size, (start + count) * size);
  return { ...t, dims: [count, ...t.dims.slice(1)], data };
}
