// The request's `response_format`, as the OpenAI API defines it: `text` (free output),
// `json_object` (any JSON object) or `json_schema` (`{name, schema, strict}`: output that
// validates against the schema). Both JSON forms are enforced by a grammar in the engine's
// sampler (constraint.ts), whatever `strict` says: an unsupported schema is a 400, never a
// silently unenforced one.
import { invalidArgument } from '../../errors.js';
import { describeValue } from '../../validation.js';

export type ResponseFormat =
  | { readonly type: 'text' }
  | { readonly type: 'json_object' }
  | { readonly type: 'json_schema'; readonly name: string; readonly schema: unknown; readonly strict: boolean };

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function responseFormat(raw: unknown): ResponseFormat {
  if (raw === undefined || raw === null) return { type: 'text' };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalidArgument(`response_format must be an object, got ${describeValue(raw)}`, 'response_format');
  const { type } = raw as { type?: unknown };
  if (type === 'text') return { type: 'text' };
  if (type === 'json_object') return { type: 'json_object' };
  if (type !== 'json_schema') {
    throw invalidArgument(`response_format.type must be "text", "json_object" or "json_schema", got ${describeValue(type)}`, 'response_format.type');
  }
  const spec = (raw as { json_schema?: unknown }).json_schema;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw invalidArgument('response_format.json_schema must be an object with name and schema', 'response_format.json_schema');
  }
  const { name, schema, strict } = spec as { name?: unknown; schema?: unknown; strict?: unknown };
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw invalidArgument(`response_format.json_schema.name must be 1-64 letters, digits, _ or -, got ${describeValue(name)}`, 'response_format.json_schema.name');
  }
  if (strict !== undefined && strict !== null && typeof strict !== 'boolean') {
    throw invalidArgument('response_format.json_schema.strict must be true or false', 'response_format.json_schema.strict');
  }
  // A missing schema means any JSON value, as OpenAI takes it.
  const body = schema === undefined ? {} : schema;
  if (typeof body !== 'boolean' && (typeof body !== 'object' || body === null || Array.isArray(body))) {
    throw invalidArgument(`response_format.json_schema.schema must be a JSON Schema object, got ${describeValue(body)}`, 'response_format.json_schema.schema');
  }
  return { type: 'json_schema', name, schema: body, strict: strict === true };
}
