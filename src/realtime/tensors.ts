// Host-side tensors: what the predict path hands to the executor and gets back. The first
// dimension is always the batch (rows), which is what lets the batcher join and split them.

export type TensorData = Float32Array | Float64Array | BigInt64Array | BigUint64Array | Int32Array | Uint32Array | string[];

export interface HostTensor {
  name: string;
  /** [N, ...]: N rows first. */
  dims: number[];
  data: TensorData;
}

export interface OutputTensor extends HostTensor {
  dataType: string;
  /** The class labels of a ZipMap output: data is then the [N, C] probabilities. */
  mapKeys?: BigInt64Array | string[];
}

export const rowSize = (dims: readonly number[]) => dims.slice(1).reduce((a, b) => a * b, 1);

/** Joins the tensors of several requests along the batch dimension. */
export function concatRows(parts: HostTensor[]): HostTensor {
  const first = parts[0]!;
  if (parts.length === 1) return first;
  const rows = parts.reduce((n, p) => n + p.dims[0]!, 0);
  const dims = [rows, ...first.dims.slice(1)];
  let data: TensorData;
  if (Array.isArray(first.data)) {
    data = parts.flatMap((p) => p.data as string[]);
  } else {
    const Ctor = first.data.constructor as new (n: number) => Exclude<TensorData, string[]>;
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

/** Rows [start, start + count) of a batch-major tensor. */
export function sliceRows<T extends HostTensor>(t: T, start: number, count: number): T {
  const size = rowSize(t.dims);
  const data = Array.isArray(t.data) ? t.data.slice(start * size, (start + count) * size) : t.data.subarray(start * size, (start + count) * size);
  return { ...t, dims: [count, ...t.dims.slice(1)], data };
}
