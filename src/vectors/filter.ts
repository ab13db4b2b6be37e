// The search filter of DESIGN.md section 6, on top-level properties:
//
//   {"eq":    {"color": "red", "size": 3}}              every named property equals its value
//   {"in":    {"color": ["red", "blue"]}}              every named property is one of the values
//   {"range": {"price": {"gte": 10, "lt": 20}}}         every named property within its bounds
//   {"and":   [filter, ...]}   {"or": [filter, ...]}
//
// A property that holds an array matches when any of its elements does (as in Qdrant). Values
// are strings, numbers, booleans or null; range bounds are all numbers or all strings, and a
// property of another type never matches a range. parseFilter checks a request's filter on the
// main thread and names the offending field; compileFilter turns a checked one into a predicate
// for the index worker. The Filter type is in types.ts, beside the other values the two threads
// exchange.
import { invalidArgument } from '../errors.js';
import type { Filter, Properties, RangeBounds, Scalar } from './types.js';

const OPERATORS = ['eq', 'in', 'range', 'and', 'or'] as const;
const BOUNDS = ['gt', 'gte', 'lt', 'lte'] as const;
const MAX_DEPTH = 16;
const MAX_NODES = 1000;
const MAX_IN_VALUES = 10_000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScalar = (v: unknown): v is Scalar =>
  v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
const key = (path: string, name: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`);

/** Checks a filter from a request body; throws a 400 naming the field at fault. */
export function parseFilter(value: unknown, path = 'filter'): Filter {
  let nodes = 0;
  const walk = (v: unknown, at: string, depth: number): Filter => {
    if (++nodes > MAX_NODES) throw invalidArgument(`${path} has more than ${MAX_NODES} conditions`, path);
    if (depth > MAX_DEPTH) throw invalidArgument(`${at} nests filters deeper than ${MAX_DEPTH} levels`, at);
    if (!isObject(v)) throw invalidArgument(`${at} must be an object with one of ${OPERATORS.join(', ')}`, at);
    const ops = Object.keys(v);
    if (ops.length !== 1) {
      throw invalidArgument(
        ops.length === 0
          ? `${at} is empty; give one of ${OPERATORS.join(', ')}`
          : `${at} has ${ops.length} operators (${ops.join(', ')}); combine conditions with "and" or "or"`,
        at,
      );
    }
    const op = ops[0]!;
    const arg = v[op];
    const opPath = `${at}.${op}`;
    switch (op) {
      case 'and':
      case 'or': {
        if (!Array.isArray(arg) || arg.length === 0) throw invalidArgument(`${opPath} must be a non-empty array of filters`, opPath);
        const parts = arg.map((f, i) => walk(f, `${opPath}[${i}]`, depth + 1));
        return op === 'and' ? { and: parts } : { or: parts };
      }
      case 'eq': {
        const fields = namedFields(arg, opPath);
        for (const [name, val] of fields) {
          if (!isScalar(val)) throw invalidArgument(`${key(opPath, name)} must be a string, number, boolean or null`, key(opPath, name));
        }
        return { eq: Object.fromEntries(fields) as Record<string, Scalar> };
      }
      case 'in': {
        const fields = namedFields(arg, opPath);
        for (const [name, val] of fields) {
          const at2 = key(opPath, name);
          if (!Array.isArray(val) || val.length === 0) throw invalidArgument(`${at2} must be a non-empty array of values`, at2);
          if (val.length > MAX_IN_VALUES) throw invalidArgument(`${at2} has more than ${MAX_IN_VALUES} values`, at2);
          val.forEach((x, i) => {
            if (!isScalar(x)) throw invalidArgument(`${at2}[${i}] must be a string, number, boolean or null`, `${at2}[${i}]`);
          });
        }
        return { in: Object.fromEntries(fields) as Record<string, Scalar[]> };
      }
      case 'range': {
        const fields = namedFields(arg, opPath);
        const out: Record<string, RangeBounds> = {};
        for (const [name, val] of fields) {
          const at2 = key(opPath, name);
          if (!isObject(val)) throw invalidArgument(`${at2} must be an object of bounds (gt, gte, lt, lte)`, at2);
          const given = Object.keys(val);
          const unknown = given.filter((b) => !(BOUNDS as readonly string[]).includes(b));
          if (unknown.length > 0) throw invalidArgument(`${at2}.${unknown[0]} is not a bound; use gt, gte, lt or lte`, `${at2}.${unknown[0]}`);
          if (given.length === 0) throw invalidArgument(`${at2} has no bounds; give gt, gte, lt or lte`, at2);
          const types = new Set<string>();
          for (const b of given) {
            const x = val[b];
            const ok = typeof x === 'string' || (typeof x === 'number' && Number.isFinite(x));
            if (!ok) throw invalidArgument(`${at2}.${b} must be a finite number or a string`, `${at2}.${b}`);
            types.add(typeof x);
          }
          if (types.size > 1) throw invalidArgument(`${at2} mixes number and string bounds`, at2);
          out[name] = val as RangeBounds;
        }
        return { range: out };
      }
      default:
        throw invalidArgument(`${at} has the unknown operator "${op}"; use one of ${OPERATORS.join(', ')}`, at);
    }
  };
  return walk(value, path, 1);
}

function namedFields(arg: unknown, at: string): [string, unknown][] {
  if (!isObject(arg)) throw invalidArgument(`${at} must be an object of property names`, at);
  const fields = Object.entries(arg);
  if (fields.length === 0) throw invalidArgument(`${at} names no property`, at);
  return fields;
}

export type Predicate = (properties: Properties) => boolean;

const anyOf = (value: unknown, test: (x: unknown) => boolean): boolean =>
  Array.isArray(value) ? value.some(test) : test(value);

function inRange(x: unknown, b: RangeBounds): boolean {
  const kind = typeof (b.gt ?? b.gte ?? b.lt ?? b.lte);
  if (typeof x !== kind || (kind === 'number' && Number.isNaN(x))) return false;
  const v = x as number | string;
  if (b.gt !== undefined && !(v > b.gt)) return false;
  if (b.gte !== undefined && !(v >= b.gte)) return false;
  if (b.lt !== undefined && !(v < b.lt)) return false;
  if (b.lte !== undefined && !(v <= b.lte)) return false;
  return true;
}

/** A predicate over a vector's properties for a filter that parseFilter accepted. */
export function compileFilter(filter: Filter): Predicate {
  if ('and' in filter) {
    const parts = filter.and.map(compileFilter);
    return (p) => parts.every((f) => f(p));
  }
  if ('or' in filter) {
    const parts = filter.or.map(compileFilter);
    return (p) => parts.some((f) => f(p));
  }
  if ('eq' in filter) {
    const fields = Object.entries(filter.eq);
    return (p) => fields.every(([name, want]) => Object.hasOwn(p, name) && anyOf(p[name], (x) => x === want));
  }
  if ('in' in filter) {
    const fields = Object.entries(filter.in).map(([name, values]) => [name, new Set<unknown>(values)] as const);
    return (p) => fields.every(([name, set]) => Object.hasOwn(p, name) && anyOf(p[name], (x) => set.has(x)));
  }
  const fields = Object.entries(filter.range);
  return (p) => fields.every(([name, bounds]) => Object.hasOwn(p, name) && anyOf(p[name], (x) => inRange(x, bounds)));
}
