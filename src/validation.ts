// Schema validation with one set of options and messages, for every route (the app's validator
// compiler) and for the vector ingest worker, which checks upsert bodies off the main thread; it
// sits below both, so that src/vectors/ need not import the HTTP layer. Bodies are validated
// strictly (a string where a number is wanted is a 400, never coerced), while path params and
// query strings, which only ever arrive as text, are coerced to the types their schemas declare.
import { Ajv, type ErrorObject } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

const options = { allErrors: false, useDefaults: true, removeAdditional: false, strict: false } as const;
const strictAjv = new Ajv({ ...options, coerceTypes: false });
const coercingAjv = new Ajv({ ...options, coerceTypes: 'array' });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return strictAjv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  return decimalOnly(schema as Schema, coercingAjv.compile(schema as object) as unknown as Validate) as unknown as ReturnType<FastifySchemaCompiler<unknown>>;
};

/**
 * A number as text (a query string, a path parameter, a string where a body takes one): a decimal
 * literal only, `7`, `-0.5`, `1e3`. Never `0x10`, `0b1`, ` 7 `, `Infinity` or the empty string,
 * which Number() (and Ajv's coercion) would read as numbers.
 */
export const DECIMAL_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** `text` as a number if it is a decimal literal (DECIMAL_NUMBER), else undefined. */
export function decimalNumber(text: string): number | undefined {
  return DECIMAL_NUMBER.test(text) ? Number(text) : undefined;
}

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; items?: Schema };
type Validate = ((data: unknown, ...rest: unknown[]) => boolean) & { errors?: ErrorObject[] | null };

const wantsNumber = (s: Schema | undefined) => {
  const types = s?.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  return types.includes('number') || types.includes('integer');
};

/**
 * Ajv's coercion turns any string that JavaScript's `==` equates with a number into it ("0x10" ->
 * 16, " 7 " -> 7): before it runs, a string given for a number field (or an item of an array of
 * them) must be a decimal literal, or the part is refused naming the field.
 */
function decimalOnly(schema: Schema, validate: Validate): Validate {
  const fields = Object.entries(schema?.properties ?? {}).filter(([, s]) => wantsNumber(s) || (s.type === 'array' && wantsNumber(s.items)));
  if (fields.length === 0) return validate;
  const checked: Validate = (data, ...rest) => {
    if (data !== null && typeof data === 'object') {
      for (const [name] of fields) {
        const value = (data as Record<string, unknown>)[name];
        const values = Array.isArray(value) ? value : [value];
        if (values.some((v) => typeof v === 'string' && !DECIMAL_NUMBER.test(v))) {
          checked.errors = [{ keyword: 'type', instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, params: {}, message: 'must be a decimal number' }];
          return false;
        }
      }
    }
    const ok = validate(data, ...rest);
    checked.errors = validate.errors;
    return ok;
  };
  // Fastify hands Ajv's functions (those with a schemaEnv) the parent, for coercion in place.
  (checked as { schemaEnv?: unknown }).schemaEnv = (validate as { schemaEnv?: unknown }).schemaEnv;
  return checked;
}

/** `/vector/3/id` -> `vector[3].id`: the field path as a user writes it. */
export function fieldPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (extra !== undefined) parts.push(extra);
  return parts
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join('');
}

/** One sentence that names the offending field, from the first schema error. */
export function describeValidationError(error: ErrorObject, part: string): { message: string; param: string | null } {
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') {
    const param = fieldPath(error.instancePath, String(params.missingProperty));
    return { message: `${part} is missing the required field "${param}"`, param };
  }
  const param = fieldPath(error.instancePath) || null;
  const subject = param === null ? part : `field "${param}"`;
  return { message: `${subject} ${error.message ?? 'is invalid'}`, param };
}

/**
 * The deepest nesting of objects and arrays a JSON body may have (DESIGN.md section 3, limits).
 * JSON.parse itself copes with deep text, but every later walk of the value (a schema check, a
 * structured clone to a worker, an error message that shows the value) could overflow its stack.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests objects and arrays more than `max` levels deep: a linear scan of the
 * brackets outside strings, before anything parses it (the text need not be valid JSON; a syntax
 * error is the parser's to report). Bytes are read as UTF-8, whose multi-byte sequences never
 * hold an ASCII byte.
 */
export function jsonTooDeep(text: string | Uint8Array, max = MAX_JSON_DEPTH): boolean {
  const at = typeof text === 'string' ? (i: number) => text.charCodeAt(i) : (i: number) => text[i]!;
  const n = text.length;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < n; i++) {
    const c = at(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** The sentence of a refusal of too deep a JSON text (`what`: "request body", "line 7"...). */
export const jsonDepthMessage = (what: string) =>
  `${what} nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep; the limit is ${MAX_JSON_DEPTH}`;

/**
 * A short, bounded description of any value for an error message: `"abc"`, `12`, `[1,2,...]`,
 * `{"a":{...}}`. Unlike JSON.stringify it never walks a whole value, so a value nested thousands
 * of levels deep or megabytes long costs a few dozen characters, not a stack overflow.
 */
export function describeValue(value: unknown, maxChars = 60): string {
  let out = '';
  const full = () => out.length >= maxChars;
  const walk = (v: unknown, depth: number): void => {
    if (full()) return;
    if (typeof v === 'string') out += JSON.stringify(v.length > maxChars ? v.slice(0, maxChars) : v);
    else if (v === null || typeof v === 'number' || typeof v === 'boolean') out += String(v);
    else if (v === undefined) out += 'undefined';
    else if (typeof v !== 'object') out += typeof v;
    else if (Array.isArray(v)) {
      if (depth >= 2) {
        out += v.length === 0 ? '[]' : '[...]';
        return;
      }
      out += '[';
      for (let i = 0; i < v.length; i++) {
        if (full()) break;
        if (i > 0) out += ',';
        walk(v[i], depth + 1);
      }
      out += ']';
    } else {
      const keys = Object.keys(v);
      if (depth >= 2) {
        out += keys.length === 0 ? '{}' : '{...}';
        return;
      }
      out += '{';
      for (let i = 0; i < keys.length; i++) {
        if (full()) break;
        if (i > 0) out += ',';
        out += JSON.stringify(keys[i]!.length > maxChars ? keys[i]!.slice(0, maxChars) : keys[i]) + ':';
        walk((v as Record<string, unknown>)[keys[i]!], depth + 1);
      }
      out += '}';
    }
  };
  walk(value, 0);
  return out.length > maxChars ? `${out.slice(0, maxChars)}...` : out;
}
