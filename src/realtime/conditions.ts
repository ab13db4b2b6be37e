// Audience conditions (DESIGN.md section 4) compiled into a predicate over request headers.
// Keys are header names, case-insensitive; every condition must hold; an audience without
// conditions matches every request. Regular expressions run on RE2's linear-time engine
// (re2js), so no pattern can backtrack catastrophically.
import { RE2JS } from 're2js';
import { invalidArgument } from '../errors.js';
import { describeValue } from '../validation.js';

export const UNARY_OPERATORS = [
  'UNARY_OPERATOR_TYPE_EXACT_MATCH',
  'UNARY_OPERATOR_TYPE_SAFE_REGEX_MATCH',
  'UNARY_OPERATOR_TYPE_PRESENT_MATCH',
  'UNARY_OPERATOR_TYPE_PREFIX_MATCH',
  'UNARY_OPERATOR_TYPE_SUFFIX_MATCH',
  'UNARY_OPERATOR_TYPE_CONTAINS_MATCH',
] as const;
export const BINARY_OPERATORS = ['BINARY_OPERATOR_TYPE_RANGE_MATCH'] as const;

export interface UnaryCondition {
  key: string;
  operator: (typeof UNARY_OPERATORS)[number];
  /** Absent only for PRESENT_MATCH. */
  operand?: string;
}

export interface BinaryCondition {
  key: string;
  operator: (typeof BINARY_OPERATORS)[number];
  first_operand: number;
  second_operand: number;
}

export interface Conditions {
  unary: UnaryCondition[];
  binary: BinaryCondition[];
}

export type Headers = Record<string, string | string[] | undefined>;
export type HeaderPredicate = (headers: Headers) => boolean;

const MAX_PATTERN = 1024;

/** Header value as one string; repeated headers are joined the way HTTP folds them. */
function header(headers: Headers, key: string): string | undefined {
  const v = headers[key];
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * Checks raw conditions (from YAML or JSON) and returns them normalised, refusing each fault
 * with the field named, e.g. `conditions.unary[1].operator`. `at` prefixes the field path.
 */
export function checkConditions(raw: unknown, at: string): Conditions {
  if (raw === undefined || raw === null) return { unary: [], binary: [] };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalidArgument(`${at} must be an object with "unary" and/or "binary" lists`, at);
  const { unary = [], binary = [] } = raw as { unary?: unknown; binary?: unknown };
  if (!Array.isArray(unary)) throw invalidArgument(`${at}.unary must be a list`, `${at}.unary`);
  if (!Array.isArray(binary)) throw invalidArgument(`${at}.binary must be a list`, `${at}.binary`);

  const key = (c: Record<string, unknown>, path: string): string => {
    if (typeof c.key !== 'string' || c.key.trim() === '') throw invalidArgument(`${path}.key must be a non-empty header name`, `${path}.key`);
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(c.key)) throw invalidArgument(`${path}.key "${c.key}" is not a valid header name`, `${path}.key`);
    return c.key.toLowerCase();
  };

  const checkedUnary = unary.map((item, i): UnaryCondition => {
    const path = `${at}.unary[${i}]`;
    if (typeof item !== 'object' || item === null) throw invalidArgument(`${path} must be an object`, path);
    const c = item as Record<string, unknown>;
    const k = key(c, path);
    if (!(UNARY_OPERATORS as readonly unknown[]).includes(c.operator)) {
      throw invalidArgument(`${path}.operator ${describeValue(c.operator)} is not one of ${UNARY_OPERATORS.join(', ')}`, `${path}.operator`);
    }
    const operator = c.operator as UnaryCondition['operator'];
    if (operator === 'UNARY_OPERATOR_TYPE_PRESENT_MATCH') return { key: k, operator };
    // YAML reads `operand: 10` as a number; a header value is text, so compare as text.
    const operand = typeof c.operand === 'number' ? String(c.operand) : c.operand;
    if (typeof operand !== 'string') throw invalidArgument(`${path}.operand must be a string for ${operator}`, `${path}.operand`);
    if (operator === 'UNARY_OPERATOR_TYPE_SAFE_REGEX_MATCH') {
      if (operand.length > MAX_PATTERN) throw invalidArgument(`${path}.operand is longer than ${MAX_PATTERN} characters`, `${path}.operand`);
      try {
        RE2JS.compile(operand);
      } catch (err) {
        throw invalidArgument(`${path}.operand is not a valid regular expression: ${(err as Error).message}`, `${path}.operand`);
      }
    }
    return { key: k, operator, operand };
  });

  const checkedBinary = binary.map((item, i): BinaryCondition => {
    const path = `${at}.binary[${i}]`;
    if (typeof item !== 'object' || item === null) throw invalidArgument(`${path} must be an object`, path);
    const c = item as Record<string, unknown>;
    const k = key(c, path);
    if (!(BINARY_OPERATORS as readonly unknown[]).includes(c.operator)) {
      throw invalidArgument(`${path}.operator ${describeValue(c.operator)} is not one of ${BINARY_OPERATORS.join(', ')}`, `${path}.operator`);
    }
    for (const field of ['first_operand', 'second_operand'] as const) {
      if (!Number.isSafeInteger(c[field])) throw invalidArgument(`${path}.${field} must be an integer, got ${describeValue(c[field])}`, `${path}.${field}`);
    }
    const first = c.first_operand as number;
    const second = c.second_operand as number;
    if (first >= second) throw invalidArgument(`${path}: first_operand (${first}) must be less than second_operand (${second})`, `${path}.second_operand`);
    return { key: k, operator: 'BINARY_OPERATOR_TYPE_RANGE_MATCH', first_operand: first, second_operand: second };
  });

  return { unary: checkedUnary, binary: checkedBinary };
}

/** The predicate of checked conditions (compiled once, run per request). */
export function compileConditions(conditions: Conditions): HeaderPredicate {
  const tests: HeaderPredicate[] = [];
  for (const c of conditions.unary) {
    const operand = c.operand ?? '';
    switch (c.operator) {
      case 'UNARY_OPERATOR_TYPE_PRESENT_MATCH':
        tests.push((h) => header(h, c.key) !== undefined);
        break;
      case 'UNARY_OPERATOR_TYPE_EXACT_MATCH':
        tests.push((h) => header(h, c.key) === operand);
        break;
      case 'UNARY_OPERATOR_TYPE_PREFIX_MATCH':
        tests.push((h) => header(h, c.key)?.startsWith(operand) ?? false);
        break;
      case 'UNARY_OPERATOR_TYPE_SUFFIX_MATCH':
        tests.push((h) => header(h, c.key)?.endsWith(operand) ?? false);
        break;
      case 'UNARY_OPERATOR_TYPE_CONTAINS_MATCH':
        tests.push((h) => header(h, c.key)?.includes(operand) ?? false);
        break;
      case 'UNARY_OPERATOR_TYPE_SAFE_REGEX_MATCH': {
        // The whole value must match, as Envoy's safe_regex does.
        const re = RE2JS.compile(operand);
        tests.push((h) => {
          const v = header(h, c.key);
          return v !== undefined && re.matches(v);
        });
        break;
      }
    }
  }
  for (const c of conditions.binary) {
    tests.push((h) => {
      const v = header(h, c.key)?.trim();
      if (v === undefined || !/^-?\d{1,15}$/.test(v)) return false;
      const n = Number(v);
      return c.first_operand <= n && n < c.second_operand;
    });
  }
  return (headers) => tests.every((t) => t(headers));
}
