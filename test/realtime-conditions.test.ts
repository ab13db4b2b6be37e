// Audience conditions: every operator, case-insensitive keys, AND semantics, and the checks that
// refuse bad conditions with the field named.
import { describe, expect, it } from 'vitest';
import { checkConditions, compileConditions } from '../src/realtime/conditions.js';
import { ApiError } from '../src/errors.js';

const match = (conditions: unknown, headers: Record<string, string>) => compileConditions(checkConditions(conditions, 'conditions'))(headers);
const unary = (operator: string, operand?: string, key = 'X-City') => ({ unary: [{ key, operator: `UNARY_OPERATOR_TYPE_${operator}`, ...(operand === undefined ? {} : { operand }) }] });

describe('unary operators', () => {
  it('EXACT_MATCH compares the whole value', () => {
    expect(match(unary('EXACT_MATCH', 'new-york'), { 'x-city': 'new-york' })).toBe(true);
    expect(match(unary('EXACT_MATCH', 'new-york'), { 'x-city': 'new-york-city' })).toBe(false);
    expect(match(unary('EXACT_MATCH', 'new-york'), {})).toBe(false);
  });
  it('PREFIX, SUFFIX and CONTAINS', () => {
    expect(match(unary('PREFIX_MATCH', 'new'), { 'x-city': 'new-york' })).toBe(true);
    expect(match(unary('PREFIX_MATCH', 'york'), { 'x-city': 'new-york' })).toBe(false);
    expect(match(unary('SUFFIX_MATCH', 'york'), { 'x-city': 'new-york' })).toBe(true);
    expect(match(unary('CONTAINS_MATCH', 'w-y'), { 'x-city': 'new-york' })).toBe(true);
    expect(match(unary('CONTAINS_MATCH', 'paris'), { 'x-city': 'new-york' })).toBe(false);
  });
  it('PRESENT_MATCH needs only the header', () => {
    expect(match(unary('PRESENT_MATCH'), { 'x-city': '' })).toBe(true);
    expect(match(unary('PRESENT_MATCH'), { 'x-town': 'a' })).toBe(false);
  });
  it('SAFE_REGEX_MATCH matches the whole value on a linear-time engine', () => {
    expect(match(unary('SAFE_REGEX_MATCH', 'new-(york|jersey)'), { 'x-city': 'new-jersey' })).toBe(true);
    expect(match(unary('SAFE_REGEX_MATCH', 'new'), { 'x-city': 'new-jersey' })).toBe(false);
    // Exponential for a backtracking engine; RE2 answers at once.
    expect(match(unary('SAFE_REGEX_MATCH', '(a+)+$'), { 'x-city': 'a'.repeat(5000) + 'b' })).toBe(false);
  });
});

describe('keys and combinations', () => {
  it('keys are case-insensitive header names', () => {
    expect(match(unary('EXACT_MATCH', 'x', 'X-SEGMENT'), { 'x-segment': 'x' })).toBe(true);
  });
  it('all conditions must hold', () => {
    const both = {
      unary: [{ key: 'location', operator: 'UNARY_OPERATOR_TYPE_EXACT_MATCH', operand: 'new-york' }],
      binary: [{ key: 'age', operator: 'BINARY_OPERATOR_TYPE_RANGE_MATCH', first_operand: 18, second_operand: 30 }],
    };
    expect(match(both, { location: 'new-york', age: '18' })).toBe(true);
    expect(match(both, { location: 'new-york', age: '30' })).toBe(false);
    expect(match(both, { location: 'boston', age: '20' })).toBe(false);
    expect(match(both, { location: 'new-york', age: '20.5' })).toBe(false);
    expect(match(both, { location: 'new-york' })).toBe(false);
  });
  it('no conditions match every request', () => {
    expect(match(undefined, {})).toBe(true);
    expect(match({}, { a: 'b' })).toBe(true);
  });
});

describe('bad conditions are refused with the field named', () => {
  const refused = (conditions: unknown): ApiError => {
    try {
      checkConditions(conditions, 'conditions');
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      return err as ApiError;
    }
    throw new Error('accepted');
  };
  it('an unknown operator', () => {
    expect(refused({ unary: [{ key: 'a', operator: 'UNARY_OPERATOR_TYPE_FUZZY', operand: 'x' }] }).param).toBe('conditions.unary[0].operator');
    expect(refused({ binary: [{ key: 'a', operator: 'LESS', first_operand: 1, second_operand: 2 }] }).param).toBe('conditions.binary[0].operator');
  });
  it('an empty key', () => {
    expect(refused({ unary: [{ key: '', operator: 'UNARY_OPERATOR_TYPE_PRESENT_MATCH' }] }).param).toBe('conditions.unary[0].key');
  });
  it('non-integer range operands', () => {
    const err = refused({ binary: [{ key: 'age', operator: 'BINARY_OPERATOR_TYPE_RANGE_MATCH', first_operand: 1.5, second_operand: 3 }] });
    expect(err.param).toBe('conditions.binary[0].first_operand');
    expect(err.message).toMatch(/must be an integer/);
    expect(refused({ binary: [{ key: 'age', operator: 'BINARY_OPERATOR_TYPE_RANGE_MATCH', first_operand: 1, second_operand: '9' }] }).param).toBe('conditions.binary[0].second_operand');
  });
  it('an invalid regular expression', () => {
    const err = refused({ unary: [{ key: 'a', operator: 'UNARY_OPERATOR_TYPE_SAFE_REGEX_MATCH', operand: '(unclosed' }] });
    expect(err.param).toBe('conditions.unary[0].operand');
    expect(err.message).toMatch(/not a valid regular expression/);
  });
});
