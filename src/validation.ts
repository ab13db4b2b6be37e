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
  const ajv = httpPart === 'body' ? strictAjv : coercingAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

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
