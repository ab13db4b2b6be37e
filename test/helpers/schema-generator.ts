// Seeded random JSON Schemas over the constructs that src/llm/structured/json-schema.ts supports,
// for soundness checks (sample the grammar, validate with ajv) and for constrained generation by a
// random-weight model. Instances stay SMALL so that such a model finishes each in a few hundred
// tokens: strings of at most 12 characters (or a short enum, pattern or format), arrays of at most
// 4 items, nesting depth at most 3, and the one recursive $ref optional with a bounded node; each
// schema's largest instance (recursion counted 3 deep) is kept under MAX_INSTANCE_CHARS.

import { rng } from './random.js';

const MAX_INSTANCE_CHARS = 320;
const MAX_DEPTH = 3;

type Schema = Record<string, unknown>;
/** A schema and the length of its longest instance (compact JSON). */
type Sized = { schema: Schema; size: number };

// Patterns with bounded matches: anchored (their own bound) or paired with a maxLength.
const PATTERNS: ReadonlyArray<{ pattern: string; size: number; minLength?: number; maxLength?: number }> = [
  { pattern: '^[a-z]{1,8}$', size: 8 },
  { pattern: '^[A-Z]{2}-\\d{3}$', size: 6 },
  { pattern: '^(red|green|blue)$', size: 5 },
  { pattern: '^\\w{2,6}$', size: 6 },
  { pattern: '^(?:[0-9a-f]{2}){1,3}$', size: 6 },
  { pattern: '^a.?b$', size: 6 * 3 }, // `.` includes controls: up to 6 bytes escaped
  { pattern: '^[\\s\\S]{0,3}$', size: 3 * 6 },
  { pattern: '^[^a-z]{1,4}$', size: 4 * 6 },
  { pattern: '^[a-c]+$', size: 5, minLength: 2, maxLength: 5 },
  { pattern: 'ab', size: 6 * 6, maxLength: 6 },
  { pattern: '\\d', size: 5 * 6, minLength: 2, maxLength: 5 },
  { pattern: 'x|yz', size: 8 * 6, maxLength: 8 },
  { pattern: '^-?\\d+(\\.\\d+)?$', size: 10, maxLength: 10 },
  { pattern: '^[\\u00e0-\\u00ff\\u{1F600}-\\u{1F64F}]{1,4}$', size: 4 * 4 },
];
const FORMATS: ReadonlyArray<{ format: string; size: number }> = [
  { format: 'date', size: 10 },
  { format: 'uuid', size: 36 },
  { format: 'date-time', size: 35 },
  { format: 'time', size: 25 },
  { format: 'ipv4', size: 15 },
];
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'on', 'off', 'x', 'y', 'kind', 'name', 'id', 'tags', 'value', 'when', 'note', 'ok'];

class Generator {
  private defs: Record<string, Sized> = {};
  constructor(private readonly random: () => number) {}

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.random() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.random() < p;
  }

  schema(): Schema {
    this.defs = {};
    const defs: Record<string, Schema> = {};
    if (this.chance(0.4)) {
      this.defs.point = this.sizedObject({ x: this.integer(), y: this.integer() }, ['x', 'y'], true);
      this.defs.color = this.enumOf(['red', 'green', 'blue']);
      if (this.chance(0.6)) {
        // A linked list: one optional recursive branch per node, so instances end soon.
        const node: Schema = {
          type: 'object',
          properties: { value: { type: 'integer', minimum: 0, maximum: 99 }, next: this.chance(0.5) ? { $ref: '#/$defs/node' } : { anyOf: [{ type: 'null' }, { $ref: '#/$defs/node' }] } },
          required: ['value'],
          additionalProperties: false,
        };
        this.defs.node = { schema: node, size: 3 * 25 };
      }
      for (const [name, sized] of Object.entries(this.defs)) defs[name] = sized.schema;
    }
    for (let attempt = 0; ; attempt++) {
      const root = attempt < 20 && this.chance(0.75) ? this.object(0) : this.value(0);
      if (root.size <= MAX_INSTANCE_CHARS) return Object.keys(defs).length > 0 ? { ...root.schema, $defs: defs } : root.schema;
    }
  }

  value(depth: number): Sized {
    const composite = depth < MAX_DEPTH ? ['object', 'array', 'anyOf', 'oneOf', 'ref'] : [];
    const kind = this.pick([...composite, 'string', 'string', 'pattern', 'format', 'integer', 'number', 'boolean', 'null', 'enum', 'const']);
    switch (kind) {
      case 'object':
        return this.object(depth);
      case 'array':
        return this.array(depth);
      case 'anyOf': {
        const branches = Array.from({ length: this.int(2, 3) }, () => this.value(depth + 1));
        return { schema: { anyOf: branches.map((b) => b.schema) }, size: Math.max(...branches.map((b) => b.size)) };
      }
      case 'oneOf':
        return this.oneOf(depth);
      case 'ref': {
        const names = Object.keys(this.defs);
        if (names.length === 0) return this.string();
        const name = this.pick(names);
        return { schema: { $ref: `#/$defs/${name}` }, size: this.defs[name]!.size };
      }
      case 'string':
        return this.string();
      case 'pattern': {
        const p = this.pick(PATTERNS);
        const schema: Schema = { type: 'string', pattern: p.pattern };
        if (p.minLength !== undefined) schema.minLength = p.minLength;
        if (p.maxLength !== undefined) schema.maxLength = p.maxLength;
        return { schema, size: p.size + 2 };
      }
      case 'format': {
        const f = this.pick(FORMATS);
        return { schema: { type: 'string', format: f.format }, size: f.size + 2 };
      }
      case 'integer':
        return this.integer();
      case 'number':
        return this.number();
      case 'boolean':
        return { schema: { type: 'boolean' }, size: 5 };
      case 'null':
        return { schema: { type: 'null' }, size: 4 };
      case 'enum':
        return this.enumOf(this.pick([['a', 'b', 'c'], [1, 2, 3], ['on', null, 7, true], ['x', { y: 1 }, [1, 2]]]));
      default: {
        const value = this.pick<unknown>(['fixed', 42, -1.5, true, null, { a: [1, 'b'] }]);
        return { schema: { const: value }, size: JSON.stringify(value).length };
      }
    }
  }

  string(): Sized {
    const maxLength = this.int(0, 12);
    const schema: Schema = { type: 'string', maxLength };
    if (this.chance(0.5)) schema.minLength = this.int(0, maxLength);
    // Up to 6 bytes a character when escaped (\u001f), 4 when astral.
    return { schema, size: 2 + 6 * maxLength };
  }

  integer(): Sized {
    const schema: Schema = { type: 'integer' };
    const lo = this.int(-1000, 1000);
    const hi = lo + this.int(0, 2000);
    const style = this.int(0, 4);
    if (style === 0) return { schema, size: 16 }; // unbounded: at most 15 digits
    if (style === 1) Object.assign(schema, { minimum: lo, maximum: hi });
    if (style === 2) Object.assign(schema, { exclusiveMinimum: lo - 1, exclusiveMaximum: hi + 1 });
    if (style === 3) Object.assign(schema, { minimum: -hi, maximum: -lo }); // often all negative
    if (style === 4) Object.assign(schema, { minimum: lo });
    return { schema, size: 16 };
  }

  number(): Sized {
    const schema: Schema = { type: 'number' };
    const lo = this.int(-50, 50);
    const hi = lo + this.int(1, 100);
    const style = this.int(0, 3);
    if (style === 1) Object.assign(schema, { minimum: lo, maximum: hi });
    if (style === 2) Object.assign(schema, { exclusiveMinimum: lo, exclusiveMaximum: hi });
    if (style === 3) Object.assign(schema, { minimum: lo, exclusiveMaximum: hi });
    return { schema, size: 17 };
  }

  enumOf(values: unknown[]): Sized {
    return { schema: { enum: values }, size: Math.max(...values.map((v) => JSON.stringify(v).length)) };
  }

  sizedObject(properties: Record<string, Sized>, required: string[], closed: boolean | undefined): Sized {
    const schema: Schema = { type: 'object', properties: Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, v.schema])) };
    if (required.length > 0) schema.required = required;
    if (closed !== undefined) schema.additionalProperties = !closed;
    const size = 2 + Object.entries(properties).reduce((sum, [k, v]) => sum + k.length + 4 + v.size, 0);
    return { schema, size };
  }

  object(depth: number): Sized {
    const count = this.int(1, depth === 0 ? 4 : 2);
    const properties: Record<string, Sized> = {};
    while (Object.keys(properties).length < count) properties[this.pick(WORDS)] = this.value(depth + 1);
    const names = Object.keys(properties);
    const required = names.filter(() => this.chance(0.6));
    const sized = this.sizedObject(properties, required, this.chance(0.85) ? true : undefined);
    if (this.chance(0.15)) {
      sized.schema.minProperties = Math.min(names.length, required.length + 1);
      sized.schema.maxProperties = Math.max(sized.schema.minProperties as number, names.length - 1);
    }
    return sized;
  }

  array(depth: number): Sized {
    const minItems = this.int(0, 2);
    const maxItems = this.int(Math.max(minItems, 1), 4);
    if (this.chance(0.3)) {
      const prefix = Array.from({ length: this.int(1, 2) }, () => this.value(depth + 1));
      const rest = this.chance(0.5) ? null : this.value(depth + 1);
      const schema: Schema = { type: 'array', prefixItems: prefix.map((p) => p.schema), items: rest ? rest.schema : false, minItems: Math.min(minItems, prefix.length) };
      const sizes = [...prefix.map((p) => p.size), ...(rest ? Array(Math.max(0, maxItems - prefix.length)).fill(rest.size) : [])];
      if (rest) schema.maxItems = Math.max(maxItems, prefix.length);
      return { schema, size: 2 + sizes.reduce((a, b) => a + b + 1, 0) };
    }
    const item = this.value(depth + 1);
    return { schema: { type: 'array', items: item.schema, minItems, maxItems }, size: 2 + maxItems * (item.size + 1) };
  }

  oneOf(depth: number): Sized {
    if (this.chance(0.5)) {
      const a = this.string();
      const b = this.integer();
      return { schema: { oneOf: [a.schema, b.schema, { type: 'null' }] }, size: Math.max(a.size, b.size) };
    }
    // Objects told apart by a required const tag.
    const branch = (tag: string) =>
      this.sizedObject({ kind: { schema: { const: tag }, size: tag.length + 2 }, [this.pick(['x', 'y', 'note'])]: this.value(depth + 1) }, ['kind'], true);
    const branches = [branch('a'), branch('b')];
    return { schema: { oneOf: branches.map((b) => b.schema) }, size: Math.max(...branches.map((b) => b.size)) };
  }
}

/** `count` schemas from `seed`, the same on every run. */
export function generateSchemas(seed: number, count: number): object[] {
  const generator = new Generator(rng(seed));
  return Array.from({ length: count }, () => generator.schema());
}
