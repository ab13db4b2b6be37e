// The split-orient feature payload {columns, index, data} turned into the build's input tensors.
// Columns are matched to features by name in any order; every fault is a 400 that names the
// column, the row, or both. Values may be numbers or strings ("1.5" for a numeric feature);
// null is a missing value (NaN) for float features, which trees and imputers understand.
import { invalidArgument } from '../errors.js';
import type { FeatureSchema } from '../tabular/onnx/index.js';
import type { TabularInput, TabularInputData } from '../tabular/executor/index.js';

export interface FeaturePayload {
  columns: string[];
  index?: number[];
  data: unknown[][];
}

type Cell = string | number | boolean | null | undefined | object;

function describe(value: Cell): string {
  return typeof value === 'string' ? `"${value.length > 40 ? value.slice(0, 40) + '...' : value}"` : JSON.stringify(value) ?? String(value);
}

function toNumber(value: Cell, where: () => string): number {
  if (typeof value === 'number') return value;
  if (value === null) return Number.NaN;
  if (typeof value === 'string') {
    const text = value.trim();
    const n = Number(text);
    if (text !== '' && !Number.isNaN(n)) return n;
    if (/^nan$/i.test(text)) return Number.NaN;
  }
  throw invalidArgument(`${where()} is ${describe(value)}, not a number`, 'data');
}

function toInt64(value: Cell, where: () => string): bigint {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value)) {
    const n = BigInt(value.trim());
    if (n >= -(2n ** 63n) && n < 2n ** 63n) return n;
  }
  throw invalidArgument(`${where()} is ${describe(value)}, not an integer`, 'data');
}

function toText(value: Cell, where: () => string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw invalidArgument(`${where()} is ${describe(value)}, not a string`, 'data');
}

export function payloadToInputs(schema: FeatureSchema, payload: FeaturePayload): { inputs: TabularInput[]; rows: number } {
  const { columns, data, index } = payload;
  const rows = data.length;
  if (rows === 0) throw invalidArgument('data has no rows', 'data');
  if (index !== undefined && index.length !== rows) {
    throw invalidArgument(`index has ${index.length} entries but data has ${rows} rows`, 'index');
  }

  // Column position in the payload -> feature position in the schema.
  const featureByName = new Map(schema.features.map((f, i) => [f.name, i]));
  const positionOf = new Array<number>(schema.features.length).fill(-1);
  columns.forEach((name, col) => {
    const feature = featureByName.get(name);
    if (feature === undefined) {
      throw invalidArgument(`unknown column "${name}"; the model's features are ${schema.features.map((f) => f.name).join(', ')}`, `columns[${col}]`);
    }
    if (positionOf[feature] !== -1) throw invalidArgument(`column "${name}" is given twice`, `columns[${col}]`);
    positionOf[feature] = col;
  });
  const missing = schema.features.filter((_, i) => positionOf[i] === -1).map((f) => `"${f.name}"`);
  if (missing.length > 0) throw invalidArgument(`missing column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`, 'columns');

  data.forEach((row, r) => {
    if (!Array.isArray(row)) throw invalidArgument(`data[${r}] is not an array`, `data[${r}]`);
    if (row.length !== columns.length) {
      throw invalidArgument(`data[${r}] has ${row.length} values but there are ${columns.length} columns`, `data[${r}]`);
    }
  });

  const inputs = schema.inputs.map((input): TabularInput => {
    const width = input.width;
    const dims = input.rank === 1 ? [rows] : [rows, ...new Array<number>(input.rank - 2).fill(1), width];
    const size = rows * width;
    let data: TabularInputData;
    switch (input.elemType) {
      case 'float':
        data = new Float32Array(size);
        break;
      case 'double':
        data = new Float64Array(size);
        break;
      case 'int64':
        data = new BigInt64Array(size);
        break;
      case 'int32':
      case 'bool':
        data = new Int32Array(size);
        break;
      case 'string':
        data = new Array<string>(size);
        break;
      default:
        throw invalidArgument(`input "${input.name}" has element type ${input.elemType}, which predict cannot fill`, 'columns');
    }
    for (let c = 0; c < width; c++) {
      const featureIndex = input.firstFeature + c;
      const feature = schema.features[featureIndex]!;
      const col = positionOf[featureIndex]!;
      for (let r = 0; r < rows; r++) {
        const value = payload.data[r]![col] as Cell;
        const where = () => `data[${r}][${col}] (column "${feature.name}")`;
        const at = r * width + c;
        if (data instanceof Float32Array || data instanceof Float64Array) data[at] = toNumber(value, where);
        else if (data instanceof BigInt64Array) data[at] = toInt64(value, where);
        else if (data instanceof Int32Array) {
          const n = input.elemType === 'bool' && typeof value === 'boolean' ? Number(value) : toNumber(value, where);
          if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) throw invalidArgument(`${where()} is ${describe(value)}, not a 32-bit integer`, 'data');
          data[at] = n;
        } else data[at] = toText(value, where);
      }
    }
    return { name: input.name, dims, data };
  });
  return { inputs, rows };
}
