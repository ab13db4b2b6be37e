// The split-orient feature payload {columns, index, data} turned into the build's input tensors.
// Columns are matched to features by name in any order; every fault is a 400 that names the
// column, the row, or both. Values may be numbers or strings ("1.5" for a numeric feature).
// A missing value, null or the string "NaN", becomes NaN for a float feature whose input the model
// declares missing-value handling for (an Imputer or a tree ensemble reads it:
// ServingSchema.missingValueInputs); anywhere else it is refused, because NaN would flow into the
// answer as a silently wrong number (a label 0, null probabilities).
import { invalidArgument } from '../errors.js';
import type { ServingSchema } from './builds.js';
import type { TabularInput, TabularInputData } from '../tabular/executor/index.js';
import { decimalNumber, describeValue } from '../validation.js';

export interface FeaturePayload {
  columns: string[];
  index?: number[];
  data: unknown[][];
}

type Cell = string | number | boolean | null | undefined | object;

function describe(value: Cell): string {
  return typeof value === 'string' ? `"${value.length > 40 ? value.slice(0, 40) + '...' : value}"` : describeValue(value);
}

/** How a caller sends a missing value: null, or "NaN" in any case (what pandas writes for one). */
const isMissing = (value: Cell): boolean => value === null || (typeof value === 'string' && /^\s*nan\s*$/i.test(value));

function toNumber(value: Cell, where: () => string): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    // A decimal literal only: never "0x10", " 7 " or "Infinity".
    const n = decimalNumber(value);
    if (n !== undefined) return n;
  }
  throw invalidArgument(`${where()} is ${describe(value)}, not a number`, 'data');
}

/** The 400 for a missing value where the model gives it no meaning, saying why and what to send. */
function missingRefused(value: Cell, where: string, feature: { name: string; elemType: string }): never {
  const why =
    feature.elemType === 'float' || feature.elemType === 'double'
      ? `the model declares no missing-value handling for "${feature.name}" (no Imputer or tree ensemble reads it), so send a number`
      : `feature "${feature.name}" has type ${feature.elemType}, which has no missing value; send a ${feature.elemType === 'string' ? 'string' : 'number'}`;
  throw invalidArgument(`${where} is ${describe(value)}; ${why}`, 'data');
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

export function payloadToInputs(schema: ServingSchema, payload: FeaturePayload): { inputs: TabularInput[]; rows: number } {
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
    const nanForMissing = schema.missingValueInputs.has(input.name) && (data instanceof Float32Array || data instanceof Float64Array);
    for (let c = 0; c < width; c++) {
      const featureIndex = input.firstFeature + c;
      const feature = schema.features[featureIndex]!;
      const col = positionOf[featureIndex]!;
      for (let r = 0; r < rows; r++) {
        const value = payload.data[r]![col] as Cell;
        const where = () => `data[${r}][${col}] ("${feature.name}")`;
        const at = r * width + c;
        // A string feature keeps "NaN" as the text it is; only null is missing there.
        const missing = value === null || (input.elemType !== 'string' && isMissing(value));
        if (missing && !nanForMissing) missingRefused(value, where(), feature);
        if (data instanceof Float32Array || data instanceof Float64Array) data[at] = missing ? Number.NaN : toNumber(value, where);
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
