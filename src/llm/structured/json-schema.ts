// JSON Schema to grammar, exactly: every string the grammar accepts parses as JSON and validates
// against the schema (as ajv with ajv-formats validates it). Constructs that cannot be made exact
// are refused with a SchemaError naming them and where they are, never silently loosened. The
// grammar may accept fewer spellings than JSON allows (declared properties come in declaration
// order, numbers have no exponent, bounded digits and whitespace), which keeps generation short.
//
// Supported and refused constructs, and the limits: README.md in this folder.

import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';

import { AutomatonTooLargeError, intersectDfa, patternDfa, type AutomatonLimits, type Dfa } from './automaton.js';
import { FORMAT_PATTERNS } from './formats.js';
import { GrammarBuilder, GrammarTooLargeError, grammarMatches, type Grammar, type Sequence } from './grammar.js';
import { JsonNumbers, type Bound } from './numbers.js';
import { JsonStrings } from './json-string.js';
import { parseRegex, RegexError } from './regex.js';

/** The schema is invalid, unsupported, unsatisfiable or too large; `path` points into the schema. */
export class SchemaError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
    this.name = 'SchemaError';
  }
}

export interface SchemaCompileOptions {
  /** Grammar size limit in items (jsonSchemaGrammar's builder), default 200_000. */
  maxItems?: number;
  /** Wall-clock limit for compiling, default 2000 ms. */
  deadlineMs?: number;
}

const DEFAULT_MAX_ITEMS = 200_000;
const DEFAULT_DEADLINE_MS = 2000;
/** Whitespace between tokens: none, one space, or a newline and up to this many spaces or tabs. */
const MAX_INDENT = 16;

// The JSON types a value may take, as bits: `number` is INTEGER | FRACTION.
const NULL = 1;
const BOOLEAN = 2;
const INTEGER = 4;
const FRACTION = 8;
const STRING = 16;
const ARRAY = 32;
const OBJECT = 64;
const ALL = 127;
const TYPE_BITS: Record<string, number> = {
  null: NULL,
  boolean: BOOLEAN,
  integer: INTEGER,
  number: INTEGER | FRACTION,
  string: STRING,
  array: ARRAY,
  object: OBJECT,
};

// Keywords that constrain values: beside $ref/anyOf/oneOf/allOf they would need a schema
// intersection, which is refused. Everything else (annotations, unknown words) is ignored.
const CONSTRAINING = new Set([
  'enum', 'const', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'format', 'items', 'prefixItems', 'additionalItems',
  'contains', 'minContains', 'maxContains', 'maxItems', 'minItems', 'uniqueItems', 'properties',
  'patternProperties', 'additionalProperties', 'propertyNames', 'required', 'minProperties',
  'maxProperties', 'dependentRequired', 'dependentSchemas', 'dependencies', 'unevaluatedItems',
  'unevaluatedProperties', 'not', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf', '$ref',
  '$dynamicRef', '$recursiveRef',
]);
const APPLICATORS = ['$ref', 'anyOf', 'oneOf', 'allOf'] as const;
const REFUSED_ANYWHERE = ['not', 'if', 'then', 'else', '$dynamicRef', '$recursiveRef'];
const REFUSED_FOR_OBJECTS = ['patternProperties', 'propertyNames', 'dependentRequired', 'dependentSchemas', 'dependencies', 'unevaluatedProperties'];

type Schema = boolean | Record<string, unknown>;
interface RuleEntry {
  id: number;
  pending: boolean;
}

// A stand-in for "any value" (the schema `true`), so that it is memoized like a $ref target.
const ANY_SCHEMA: Record<string, unknown> = {};

const validatedRoots = new WeakSet<object>();
let draft07: Ajv | undefined;
let draft2020: Ajv2020 | undefined;

/** Enum values ajv compares pairwise (its meta-schema asks them to be unique): quadratic time. */
const MAX_ENUM_VALUES = 4096;
const MAX_SCHEMA_DEPTH = 128;
const MAX_SCHEMA_NODES = 1_000_000;

/**
 * Refuses, in linear time, what would make ajv's own check slow or overflow its stack. Returns
 * the sub-schemas under $defs and prefixItems, which the draft-07 meta-schema does not look into.
 */
function precheck(schema: object): Array<{ schema: unknown; path: string }> {
  const unchecked: Array<{ schema: unknown; path: string }> = [];
  const stack: Array<{ node: unknown; path: string; depth: number }> = [{ node: schema, path: '', depth: 0 }];
  for (let nodes = 0; stack.length > 0; nodes++) {
    const { node, path, depth } = stack.pop()!;
    if (nodes > MAX_SCHEMA_NODES) throw new SchemaError(`the schema has more than ${MAX_SCHEMA_NODES} values`, '');
    if (depth > MAX_SCHEMA_DEPTH) throw new SchemaError(`the schema nests deeper than ${MAX_SCHEMA_DEPTH} levels ${describe(path)}`, path);
    if (node === null || typeof node !== 'object') continue;
    const enumValues = (node as { enum?: unknown }).enum;
    if (!Array.isArray(node) && Array.isArray(enumValues) && enumValues.length > MAX_ENUM_VALUES) {
      throw new SchemaError(`an enum with more than ${MAX_ENUM_VALUES} values is not supported ${describe(path)}`, `${path}/enum`);
    }
    if (!Array.isArray(node)) {
      const { $defs, prefixItems } = node as { $defs?: unknown; prefixItems?: unknown };
      if ($defs && typeof $defs === 'object' && !Array.isArray($defs)) {
        for (const [name, sub] of Object.entries($defs)) unchecked.push({ schema: sub, path: `${path}/$defs/${escapePointer(name)}` });
      }
      if (Array.isArray(prefixItems)) prefixItems.forEach((sub, i) => unchecked.push({ schema: sub, path: `${path}/prefixItems/${i}` }));
    }
    for (const [key, value] of Object.entries(node)) stack.push({ node: value, path: `${path}/${escapePointer(key)}`, depth: depth + 1 });
  }
  return unchecked;
}

/** Refuses a schema that is not valid JSON Schema (draft-07, or 2020-12 when it says so). */
function validateSchema(schema: unknown): void {
  if (typeof schema === 'boolean') return;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new SchemaError('a JSON Schema must be an object or a boolean', '');
  if (validatedRoots.has(schema)) return;
  const unchecked = precheck(schema);
  const declared = (schema as { $schema?: unknown }).$schema;
  let ajv: Ajv | Ajv2020;
  let ok: boolean;
  if (typeof declared === 'string' && declared.includes('2020-12')) {
    ajv = draft2020 ??= new Ajv2020({ strict: false });
    ok = ajv.validateSchema(schema) as boolean;
  } else {
    // Other drafts' keywords are read as draft-07 ones; $schema itself is an annotation here.
    ajv = draft07 ??= new Ajv({ strict: false });
    const { $schema: _ignored, ...rest } = schema as Record<string, unknown>;
    ok = ajv.validateSchema(rest) as boolean;
    for (let i = 0; ok && i < unchecked.length; i++) {
      const sub = unchecked[i]!;
      if (typeof sub.schema === 'boolean') continue;
      ok = typeof sub.schema === 'object' && sub.schema !== null && (ajv.validateSchema(sub.schema) as boolean);
      if (!ok) {
        const text = ajv.errors ? ajv.errorsText(ajv.errors, { dataVar: 'schema' }) : 'a schema must be an object or a boolean';
        throw new SchemaError(`invalid JSON Schema: ${text} ${describe(sub.path)}`, `${sub.path}${ajv.errors?.[0]?.instancePath ?? ''}`);
      }
    }
  }
  if (!ok) {
    const text = ajv.errorsText(ajv.errors, { dataVar: 'schema' });
    throw new SchemaError(`invalid JSON Schema: ${text}`, ajv.errors?.[0]?.instancePath ?? '');
  }
  validatedRoots.add(schema);
}

const describe = (path: string) => `(at ${path || '/'})`;
const unsupported = (keyword: string, path: string, why = 'is not supported') =>
  new SchemaError(`${keyword} ${why} ${describe(path)}`, `${path}/${keyword}`);

/** Canonical text of a JSON value for equality (object keys sorted). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

function typeBitOf(value: unknown): number {
  if (value === null) return NULL;
  if (typeof value === 'boolean') return BOOLEAN;
  if (typeof value === 'number') return Number.isInteger(value) ? INTEGER : FRACTION;
  if (typeof value === 'string') return STRING;
  if (Array.isArray(value)) return ARRAY;
  return OBJECT;
}

const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Compiles JSON Schemas into one GrammarBuilder. `$ref`s resolve against `root`; one compiler
 * serves several sub-schemas (tool parameters), and rules are shared between them.
 */
export class JsonSchemaCompiler {
  private readonly strings: JsonStrings;
  private readonly numbers: JsonNumbers;
  private readonly rules = new Map<unknown, Map<string, RuleEntry>>();
  /** Rules being compiled with no byte consumed since they began: a $ref back to one loops. */
  private leftEdge = new Set<RuleEntry>();
  private readonly deadline: number;
  private readonly deadlineMs: number;
  private readonly maxItems: number;
  private wsSeq: Sequence | undefined;

  constructor(
    private readonly builder: GrammarBuilder,
    private readonly root: unknown,
    options: SchemaCompileOptions = {},
  ) {
    validateSchema(root);
    this.strings = new JsonStrings(builder);
    this.numbers = new JsonNumbers(builder);
    this.deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.deadline = Date.now() + this.deadlineMs;
    this.maxItems = Math.min(options.maxItems ?? DEFAULT_MAX_ITEMS, builder.maxItems);
  }

  /** A JSON value of `schema` (default: the root), without surrounding whitespace. */
  value(schema: unknown = this.root, path = ''): Sequence {
    if (schema !== this.root) validateSchema(schema);
    try {
      const seq = this.refTo(schema as Schema, path, ALL);
      if (!seq) throw new SchemaError(`no JSON value satisfies the schema ${describe(path)}`, path);
      return seq;
    } catch (err) {
      if (err instanceof GrammarTooLargeError) throw new SchemaError(`the schema's grammar would exceed ${err.limit} items`, path);
      if (err instanceof AutomatonTooLargeError) throw new SchemaError(`a string constraint's automaton would exceed ${err.limit} states`, path);
      throw err;
    }
  }

  /** Whitespace between tokens, bounded so that a model cannot emit it forever. */
  ws(): Sequence {
    const b = this.builder;
    this.wsSeq ??= b.rule([[], b.literal(' '), [...b.literal('\n'), ...b.repeat(b.bytes([[0x20, 0x20], [0x09, 0x09]]), 0, MAX_INDENT)]]);
    return this.wsSeq;
  }

  private tick(path: string): void {
    if (Date.now() > this.deadline) throw new SchemaError(`the schema took more than ${this.deadlineMs} ms to compile ${describe(path)}`, path);
  }

  /** A rule for `schema` at `path` (memoized, so recursive $refs end), or null if nothing matches. */
  private refTo(schema: Schema, path: string, mask: number): Sequence | null {
    if (schema === false) return null;
    const target = schema === true ? ANY_SCHEMA : schema;
    const key = `${schema === true ? '' : path}|${mask}`;
    let byPath = this.rules.get(target);
    if (!byPath) this.rules.set(target, (byPath = new Map()));
    const known = byPath.get(key);
    if (known) {
      if (known.pending && this.leftEdge.has(known)) {
        throw new SchemaError(`a $ref cycle reaches ${path || '/'} again before any value begins`, path);
      }
      return this.builder.ref(known.id);
    }
    const entry: RuleEntry = { id: this.builder.declare(), pending: true };
    byPath.set(key, entry);
    this.leftEdge.add(entry);
    const seq = this.compile(target, path, mask);
    this.leftEdge.delete(entry);
    if (!seq) throw new SchemaError(`the schema at ${path || '/'} matches no value`, path);
    this.builder.define(entry.id, [seq]);
    entry.pending = false;
    return this.builder.ref(entry.id);
  }

  /** Compiles members of a container: a byte ("{", "[") comes first, so cycles there are fine. */
  private inside<T>(f: () => T): T {
    const saved = this.leftEdge;
    this.leftEdge = new Set();
    try {
      return f();
    } finally {
      this.leftEdge = saved;
    }
  }

  private compile(schema: Schema, path: string, mask: number): Sequence | null {
    this.tick(path);
    if (schema === true) return this.refTo(true, path, mask); // any value: one shared recursive rule
    if (schema === false) return null;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new SchemaError(`a schema must be an object or a boolean ${describe(path)}`, path);
    for (const keyword of REFUSED_ANYWHERE) if (keyword in schema) throw unsupported(keyword, path);
    if ('type' in schema) {
      const types = Array.isArray(schema.type) ? schema.type : [schema.type];
      mask &= types.reduce((m: number, t) => m | (TYPE_BITS[t as string] ?? 0), 0);
    }
    if (mask === 0) return null;
    if ('const' in schema || 'enum' in schema) return this.literals(schema, path, mask);

    const applicators = APPLICATORS.filter((k) => k in schema);
    if (applicators.length > 1) throw unsupported(applicators[1]!, path, `together with ${applicators[0]} is not supported`);
    if (applicators.length === 1) {
      const applicator = applicators[0]!;
      const other = Object.keys(schema).find((k) => k !== applicator && CONSTRAINING.has(k));
      if (other) throw unsupported(other, path, `beside ${applicator} is not supported (move it into the referenced or branch schemas)`);
      return this.applicator(applicator, schema, path, mask);
    }

    const b = this.builder;
    const alternatives: Sequence[] = [];
    if (mask & NULL) alternatives.push(b.literal('null'));
    if (mask & BOOLEAN) alternatives.push(b.choice(b.literal('true'), b.literal('false')));
    if (mask & (INTEGER | FRACTION)) {
      const seq = this.number(schema, path, (mask & FRACTION) !== 0);
      if (seq) alternatives.push(seq);
    }
    if (mask & STRING) {
      const seq = this.string(schema, path);
      if (seq) alternatives.push(seq);
    }
    if (mask & ARRAY) {
      const seq = this.inside(() => this.array(schema as Record<string, unknown>, path));
      if (seq) alternatives.push(seq);
    }
    if (mask & OBJECT) {
      const seq = this.inside(() => this.object(schema as Record<string, unknown>, path));
      if (seq) alternatives.push(seq);
    }
    return alternatives.length === 0 ? null : this.shared(b.choice(...alternatives));
  }

  /** A long sequence as a one-item rule, so that splicing it in several places does not copy it. */
  private shared(seq: Sequence): Sequence {
    return seq.length <= 1 ? seq : this.builder.rule([seq]);
  }

  private applicator(keyword: (typeof APPLICATORS)[number], schema: Record<string, unknown>, path: string, mask: number): Sequence | null {
    if (keyword === '$ref') {
      const target = this.resolve(schema.$ref as string, path);
      return this.refTo(target.schema, target.path, mask);
    }
    const branches = schema[keyword] as Schema[];
    if (keyword === 'allOf') {
      if (branches.length !== 1) throw unsupported('allOf', path, 'with more than one schema is not supported');
      return this.compile(branches[0]!, `${path}/allOf/0`, mask);
    }
    if (keyword === 'oneOf' && !this.disjoint(branches)) {
      throw unsupported('oneOf', path, 'with branches that may overlap is not supported (use anyOf)');
    }
    const seqs = branches.map((branch, i) => this.compile(branch, `${path}/${keyword}/${i}`, mask)).filter((s): s is Sequence => s !== null);
    return seqs.length === 0 ? null : this.builder.choice(...seqs);
  }

  private resolve(ref: string, path: string): { schema: Schema; path: string } {
    if (ref !== '#' && !ref.startsWith('#/')) {
      throw new SchemaError(`$ref "${ref}" is not supported: only local references (#, #/$defs/..., #/definitions/...) ${describe(path)}`, `${path}/$ref`);
    }
    const segments = ref
      .slice(2)
      .split('/')
      .filter((_, i, all) => !(all.length === 1 && all[0] === ''))
      .map((s) => decodeURIComponent(s).replace(/~1/g, '/').replace(/~0/g, '~'));
    let node: unknown = this.root;
    for (const segment of ref === '#' ? [] : segments) {
      if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, segment)) {
        throw new SchemaError(`$ref "${ref}" does not resolve ${describe(path)}`, `${path}/$ref`);
      }
      node = (node as Record<string, unknown>)[segment];
    }
    if (typeof node !== 'boolean' && (node === null || typeof node !== 'object' || Array.isArray(node))) {
      throw new SchemaError(`$ref "${ref}" does not point to a schema ${describe(path)}`, `${path}/$ref`);
    }
    return { schema: node as Schema, path: ref === '#' ? '' : segments.map((s) => `/${escapePointer(s)}`).join('') };
  }

  /** enum / const: the listed values (canonical JSON.stringify text) that the rest of the schema allows. */
  private literals(schema: Record<string, unknown>, path: string, mask: number): Sequence | null {
    let values: unknown[] = 'enum' in schema ? (schema.enum as unknown[]) : [schema.const];
    if ('enum' in schema && 'const' in schema) values = values.filter((v) => canonical(v) === canonical(schema.const));
    values = values.filter((v) => (typeBitOf(v) & mask) !== 0);
    const rest = Object.fromEntries(Object.entries(schema).filter(([k]) => k !== 'enum' && k !== 'const' && k !== 'type'));
    if (Object.keys(rest).some((k) => CONSTRAINING.has(k)) && values.length > 0) {
      // Keep the values that the other keywords' own grammar accepts: exact by construction.
      const side = new GrammarBuilder(this.maxItems);
      const compiler = new JsonSchemaCompiler(side, this.root, { maxItems: this.maxItems, deadlineMs: Math.max(1, this.deadline - Date.now()) });
      const seq = compiler.compile(rest, path, mask);
      const grammar = seq ? side.build(seq) : undefined;
      values = grammar ? values.filter((v) => (this.tick(path), grammarMatches(grammar, JSON.stringify(v)))) : [];
    }
    const texts = [...new Set(values.map((v) => JSON.stringify(v)))];
    return texts.length === 0 ? null : this.builder.choice(...texts.map((t) => this.builder.literal(t)));
  }

  private number(schema: Record<string, unknown>, path: string, fractions: boolean): Sequence | null {
    if ('multipleOf' in schema) throw unsupported('multipleOf', path);
    const bound = (inclusive: string, exclusive: string, sign: 1 | -1): Bound => {
      const a = typeof schema[inclusive] === 'number' ? (schema[inclusive] as number) : sign * -Infinity;
      const e = typeof schema[exclusive] === 'number' ? (schema[exclusive] as number) : sign * -Infinity;
      // The tighter of the two (for the upper bound, the smaller; exclusive wins a tie).
      return sign * e >= sign * a ? { value: e, exclusive: e !== sign * -Infinity } : { value: a, exclusive: false };
    };
    const lo = bound('minimum', 'exclusiveMinimum', 1);
    const hi = bound('maximum', 'exclusiveMaximum', -1);
    if (!fractions) {
      const intLo = lo.exclusive ? Math.floor(lo.value) + 1 : Math.ceil(lo.value);
      const intHi = hi.exclusive ? Math.ceil(hi.value) - 1 : Math.floor(hi.value);
      return this.numbers.integer(intLo, intHi);
    }
    for (const [keyword, b] of [
      [lo.exclusive ? 'exclusiveMinimum' : 'minimum', lo],
      [hi.exclusive ? 'exclusiveMaximum' : 'maximum', hi],
    ] as const) {
      if (Number.isFinite(b.value) && !Number.isInteger(b.value)) throw unsupported(keyword, path, 'with a fractional bound is not supported for type number');
    }
    return this.numbers.number(lo, hi);
  }

  private string(schema: Record<string, unknown>, path: string): Sequence | null {
    const min = (schema.minLength as number | undefined) ?? 0;
    const max = (schema.maxLength as number | undefined) ?? Infinity;
    if (min > max) return null;
    const limits: AutomatonLimits = {
      maxStates: Math.max(64, Math.floor(this.maxItems / 8)),
      check: () => this.tick(path),
    };
    const dfas: Dfa[] = [];
    if (typeof schema.pattern === 'string') {
      try {
        dfas.push(patternDfa(parseRegex(schema.pattern), limits));
      } catch (err) {
        if (err instanceof RegexError) throw new SchemaError(`pattern: ${err.message} ${describe(path)}`, `${path}/pattern`);
        throw err;
      }
    }
    if (typeof schema.format === 'string') {
      const source = FORMAT_PATTERNS[schema.format];
      if (!source) throw unsupported('format', path, `"${schema.format}" is not supported (supported: ${Object.keys(FORMAT_PATTERNS).join(', ')})`);
      dfas.push(patternDfa(parseRegex(source), limits));
    }
    if (dfas.length === 0) return this.strings.string(min, max);
    const dfa = dfas.reduce((a, b) => intersectDfa(a, b, limits));
    return this.strings.fromDfa(dfa, min, max, this.maxItems);
  }

  private array(schema: Record<string, unknown>, path: string): Sequence | null {
    for (const keyword of ['unevaluatedItems', 'maxContains']) if (keyword in schema) throw unsupported(keyword, path);
    // `contains` always holds only when at least zero matches are required.
    if ('contains' in schema && schema.minContains !== 0) throw unsupported('contains', path);
    let min = (schema.minItems as number | undefined) ?? 0;
    let max = (schema.maxItems as number | undefined) ?? Infinity;
    if (schema.uniqueItems === true && max > 1) throw unsupported('uniqueItems', path);

    let prefix: Schema[];
    let rest: Schema;
    let restPath: string;
    let prefixPath: string;
    if (Array.isArray(schema.items)) {
      // draft-07 tuples: items [...] then additionalItems.
      if ('prefixItems' in schema) throw unsupported('prefixItems', path, 'together with an items array is not supported');
      prefix = schema.items as Schema[];
      prefixPath = `${path}/items`;
      rest = (schema.additionalItems as Schema | undefined) ?? true;
      restPath = `${path}/additionalItems`;
    } else {
      prefix = (schema.prefixItems as Schema[] | undefined) ?? [];
      prefixPath = `${path}/prefixItems`;
      rest = (schema.items as Schema | undefined) ?? true;
      restPath = `${path}/items`;
    }
    const elements: Sequence[] = [];
    for (let i = 0; i < prefix.length && i < max; i++) {
      const seq = this.compile(prefix[i]!, `${prefixPath}/${i}`, ALL);
      if (!seq) {
        max = i; // an impossible position ends the array before it
        break;
      }
      elements.push(seq);
    }
    const restSeq = elements.length === prefix.length && max > elements.length ? this.compile(rest, restPath, ALL) : null;
    if (!restSeq) max = Math.min(max, elements.length);
    if (min > max) return null;
    min = Math.max(min, 0);

    const b = this.builder;
    const ws = this.ws();
    const sep = [...b.literal(','), ...ws];
    const element = (seq: Sequence) => this.shared([...seq, ...ws]);
    // After the k prefix elements: the rest, each one after a separator.
    const k = elements.length;
    let tail: Sequence = [];
    if (restSeq && max > k) {
      tail = k === 0 ? b.separated(element(restSeq), sep, min, max) : b.repeat([...sep, ...element(restSeq)], Math.max(0, min - k), max - k);
    }
    // Prefix positions from the last back: stop here (when enough) or go on with the next.
    for (let j = k - 1; j >= 0; j--) {
      const more: Sequence = [...(j > 0 ? sep : []), ...element(elements[j]!), ...tail];
      tail = j >= min ? b.rule([more, []]) : more;
    }
    return [...b.literal('['), ...ws, ...tail, ...b.literal(']')];
  }

  private object(schema: Record<string, unknown>, path: string): Sequence | null {
    for (const keyword of REFUSED_FOR_OBJECTS) if (keyword in schema) throw unsupported(keyword, path);
    const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
    const required = [...new Set((schema.required as string[] | undefined) ?? [])];
    const names = Object.keys(properties);
    const declared = schema.additionalProperties as Schema | undefined;
    // No additionalProperties: no other keys are generated (a required undeclared key takes any
    // value), except that a schema declaring no keys at all ({"type": "object"}) means any object.
    const additional: Schema = declared ?? (names.length === 0 && required.length === 0);
    const additionalPath = `${path}/additionalProperties`;

    type Member = { name: string; seq: Sequence; required: boolean };
    const members: Member[] = [];
    const memberOf = (name: string, value: Schema, at: string): boolean => {
      const seq = this.compile(value, at, ALL);
      if (!seq) return !required.includes(name); // an impossible optional key is left out
      members.push({ name, seq, required: required.includes(name) });
      return true;
    };
    for (const name of names) if (!memberOf(name, properties[name]!, `${path}/properties/${escapePointer(name)}`)) return null;
    for (const name of required) {
      if (names.includes(name)) continue;
      if (!memberOf(name, declared ?? true, additionalPath)) return null;
    }
    const extraValue = additional === false ? null : this.compile(additional, additionalPath, ALL);

    const minProps = (schema.minProperties as number | undefined) ?? 0;
    const maxProps = (schema.maxProperties as number | undefined) ?? Infinity;
    const requiredCount = members.filter((m) => m.required).length;
    // Repeated extra keys would count once in the parsed object: a minimum they must reach is inexact.
    if (extraValue && minProps > requiredCount) throw unsupported('minProperties', path, 'above the required count together with additionalProperties is not supported');
    if (requiredCount > maxProps) return null;

    const b = this.builder;
    const ws = this.ws();
    const sep = [...b.literal(','), ...ws];
    const pair = (key: Sequence, value: Sequence) => [...key, ...ws, ...b.literal(':'), ...ws, ...value, ...ws];
    const extraPair = extraValue ? pair(this.strings.keyExcept(members.map((m) => m.name)), extraValue) : null;
    const requiredAfter = members.map((_, i) => members.slice(i).filter((m) => m.required).length);
    requiredAfter.push(0);
    // Counts past the last bound that matters are all alike; 1 keeps "something came before".
    const cap = Math.max(1, Number.isFinite(maxProps) ? maxProps : minProps);
    const states = new Map<string, Sequence | null>();
    // Members i.. given `count` pairs so far (capped): declared ones in order, then extras.
    const from = (i: number, count: number): Sequence | null => {
      const key = `${i},${count}`;
      if (states.has(key)) return states.get(key)!;
      this.tick(path);
      let result: Sequence | null;
      if (i === members.length) {
        if (extraPair) {
          const room = maxProps - count;
          result = count === 0 ? b.separated(extraPair, sep, 0, room) : room > 0 ? b.repeat([...sep, ...extraPair], 0, room) : [];
        } else result = count >= minProps ? [] : null;
      } else {
        const m = members[i]!;
        const alternatives: Sequence[] = [];
        if (count + 1 <= maxProps && count + 1 + requiredAfter[i + 1]! <= maxProps) {
          const next = from(i + 1, Math.min(count + 1, cap));
          if (next) alternatives.push([...(count > 0 ? sep : []), ...pair(b.literal(JSON.stringify(m.name)), m.seq), ...next]);
        }
        if (!m.required) {
          const next = from(i + 1, count);
          if (next) alternatives.push(next);
        }
        result = alternatives.length === 0 ? null : this.shared(b.choice(...alternatives));
      }
      states.set(key, result);
      return result;
    };
    const body = from(0, 0);
    return body ? [...b.literal('{'), ...ws, ...body, ...b.literal('}')] : null;
  }

  /** Whether no value can match two of the branches (so oneOf is anyOf). */
  private disjoint(branches: Schema[]): boolean {
    const kinds = branches.map((branch) => this.kindsOf(branch, new Set()));
    for (let i = 0; i < branches.length; i++) {
      for (let j = i + 1; j < branches.length; j++) {
        const common = kinds[i]! & kinds[j]!;
        if (common === 0) continue;
        if (common !== OBJECT || !this.discriminated(branches[i]!, branches[j]!)) return false;
      }
    }
    return true;
  }

  /** Type bits a schema's values may have (an over-estimate; integer and number overlap). */
  private kindsOf(schema: Schema, seen: Set<unknown>): number {
    const widen = (bits: number) => (bits & (INTEGER | FRACTION) ? bits | INTEGER | FRACTION : bits);
    if (schema === true) return ALL;
    if (schema === false) return 0;
    if (seen.has(schema)) return ALL;
    seen.add(schema);
    let bits = ALL;
    if ('type' in schema) {
      const types = Array.isArray(schema.type) ? schema.type : [schema.type];
      bits = widen(types.reduce((m: number, t) => m | (TYPE_BITS[t as string] ?? 0), 0));
    }
    if ('const' in schema) bits &= widen(typeBitOf(schema.const));
    if (Array.isArray(schema.enum)) bits &= widen(schema.enum.reduce((m: number, v) => m | typeBitOf(v), 0));
    if (typeof schema.$ref === 'string') bits &= this.kindsOf(this.resolve(schema.$ref, '').schema, seen);
    for (const keyword of ['anyOf', 'oneOf'] as const) {
      if (Array.isArray(schema[keyword])) bits &= (schema[keyword] as Schema[]).reduce((m, s) => m | this.kindsOf(s, seen), 0);
    }
    if (Array.isArray(schema.allOf)) for (const s of schema.allOf as Schema[]) bits &= this.kindsOf(s, seen);
    return bits;
  }

  /** Two object schemas that each require one property with disjoint const/enum values. */
  private discriminated(a: Schema, b: Schema): boolean {
    const tags = (schema: Schema): Map<string, Set<string>> => {
      const out = new Map<string, Set<string>>();
      for (let depth = 0; depth < 16 && typeof schema === 'object' && typeof schema.$ref === 'string'; depth++) schema = this.resolve(schema.$ref, '').schema;
      if (typeof schema !== 'object') return out;
      const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
      for (const name of (schema.required as string[] | undefined) ?? []) {
        let property = properties[name];
        for (let depth = 0; depth < 16 && typeof property === 'object' && typeof property.$ref === 'string'; depth++) property = this.resolve(property.$ref, '').schema;
        if (typeof property !== 'object') continue;
        if ('const' in property) out.set(name, new Set([canonical(property.const)]));
        else if (Array.isArray(property.enum)) out.set(name, new Set(property.enum.map(canonical)));
      }
      return out;
    };
    const ta = tags(a);
    const tb = tags(b);
    for (const [name, values] of ta) {
      const other = tb.get(name);
      if (other && [...values].every((v) => !other.has(v))) return true;
    }
    return false;
  }
}

/** The grammar of a whole output for `schema`: optional leading whitespace, then one value. */
export function jsonSchemaGrammar(schema: unknown, options: SchemaCompileOptions = {}): Grammar {
  const builder = new GrammarBuilder(options.maxItems ?? DEFAULT_MAX_ITEMS);
  const compiler = new JsonSchemaCompiler(builder, schema, options);
  const root = [...compiler.ws(), ...compiler.value()];
  try {
    return builder.build(root);
  } catch (err) {
    if (err instanceof GrammarTooLargeError) throw new SchemaError(`the schema's grammar would exceed ${err.limit} items`, '');
    throw new SchemaError(`no JSON value satisfies the schema: ${(err as Error).message}`, '');
  }
}

/** Any JSON object (response_format {"type": "json_object"}). */
export function jsonObjectGrammar(): Grammar {
  return jsonSchemaGrammar({ type: 'object' });
}
