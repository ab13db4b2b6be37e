// Typed access to GGUF metadata: `meta.string('general.architecture')` returns a string or throws
// a GgufError naming the key and the type it really has, so a consumer (the tokenizer, the model
// loader) never has to inspect GgufEntry types itself. Integer getters accept any integer type
// (converters disagree on u32 vs i32 vs u64 for the same key) as long as the value fits.

import { GgufError } from './errors.js';
import type { GgufArray, GgufEntry, GgufFile, GgufValue, GgufValueTypeName } from './types.js';

const INTEGER_TYPES = new Set<GgufValueTypeName>(['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'UINT64', 'INT64']);
const FLOAT_TYPES = new Set<GgufValueTypeName>(['FLOAT32', 'FLOAT64']);

export class GgufMetadata {
  private readonly byKey: Map<string, GgufEntry>;

  constructor(entries: readonly GgufEntry[]) {
    this.byKey = new Map(entries.map((e) => [e.key, e]));
  }

  static of(file: GgufFile | GgufMetadata): GgufMetadata {
    return file instanceof GgufMetadata ? file : new GgufMetadata(file.entries);
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  keys(): string[] {
    return [...this.byKey.keys()];
  }

  entry(key: string): GgufEntry | undefined {
    return this.byKey.get(key);
  }

  /** The raw value, whatever its type. */
  get(key: string): GgufValue | undefined {
    return this.byKey.get(key)?.value;
  }

  /** A string; undefined when absent, GgufError when present with another type. */
  optString(key: string): string | undefined {
    const e = this.byKey.get(key);
    if (!e) return undefined;
    if (e.type !== 'STRING') throw wrongType(e, 'a string');
    return e.value as string;
  }

  string(key: string): string {
    return required(key, this.optString(key));
  }

  optBool(key: string): boolean | undefined {
    const e = this.byKey.get(key);
    if (!e) return undefined;
    if (e.type !== 'BOOL') throw wrongType(e, 'a bool');
    return e.value as boolean;
  }

  bool(key: string): boolean {
    return required(key, this.optBool(key));
  }

  /** An integer of any GGUF integer type, as a number (GgufError if it does not fit exactly). */
  optInteger(key: string): number | undefined {
    const e = this.byKey.get(key);
    if (!e) return undefined;
    if (!INTEGER_TYPES.has(e.type)) throw wrongType(e, 'an integer');
    const v = e.value as number | bigint;
    if (typeof v === 'bigint') {
      if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
        throw new GgufError(`metadata key "${key}" is ${v}, too large for this reader`);
      }
      return Number(v);
    }
    return v;
  }

  integer(key: string): number {
    return required(key, this.optInteger(key));
  }

  /** A float or an integer, as a number. */
  optNumber(key: string): number | undefined {
    const e = this.byKey.get(key);
    if (!e) return undefined;
    if (FLOAT_TYPES.has(e.type)) return e.value as number;
    if (INTEGER_TYPES.has(e.type)) return this.optInteger(key);
    throw wrongType(e, 'a number');
  }

  number(key: string): number {
    return required(key, this.optNumber(key));
  }

  /** An array of strings. */
  optStringArray(key: string): string[] | undefined {
    const e = this.byKey.get(key);
    if (!e) return undefined;
    if (e.type !== 'ARRAY' || e.elementType !== 'STRING') throw wrongType(e, 'an array of strings');
    return e.value as string[];
  }

  stringArray(key: string): string[] {
    return required(key, this.optStringArray(key));
  }

  /** An array whose element type is one of `types`. */
  optArray<T extends GgufArray>(key: string, types: readonly GgufValueTypeName[]): T | undefined {
    const e = this.byKey.get(key);
    if (!e) return undefined;
    if (e.type !== 'ARRAY' || !e.elementType || !types.includes(e.elementType)) {
      throw wrongType(e, `an array of ${types.join(' or ')}`);
    }
    return e.value as T;
  }
}

function describe(e: GgufEntry): string {
  return e.type === 'ARRAY' ? `an array of ${e.elementType}` : e.type;
}

function wrongType(e: GgufEntry, expected: string): GgufError {
  return new GgufError(`metadata key "${e.key}" is ${describe(e)}, expected ${expected}`);
}

function required<T>(key: string, v: T | undefined): T {
  if (v === undefined) throw new GgufError(`metadata key "${key}" is missing`);
  return v;
}
