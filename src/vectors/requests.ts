// Checks of vector-store requests against their collection, shared by the main thread (search,
// delete, fetch, sample) and the ingest worker (upsert bodies, which can be tens of megabytes and
// are parsed off the main thread). Every refusal is a 400 naming the field, and for a vector its
// position: `vector[3].values has 127 numbers; the collection "docs" has dimension 128`.
import { invalidArgument } from '../errors.js';
import { FLOAT32_MAX } from './distance.js';
import { COLLECTION_NAME_PATTERN, MAX_DIMENSION, MAX_ID_LENGTH, MAX_TENANT_LENGTH, METRICS, type CollectionRecord, type Properties, type UpsertBatch } from './types.js';

/** What a request check needs to know about a collection. */
export type CollectionInfo = Pick<CollectionRecord, 'id' | 'name' | 'dimension' | 'multiTenant'>;

export interface UpsertBody {
  collection_name: string;
  tenant_id?: string;
  vector: Array<{ id: string; values: unknown[]; properties?: unknown; tenant_id?: string }>;
}

const tenantSchema = { type: 'string', minLength: 1, maxLength: MAX_TENANT_LENGTH } as const;

/**
 * A collection's definition: the body that creates one, and the header of an export
 * (snapshot-format.ts), which requires every field.
 */
export const collectionDefinitionSchema = {
  type: 'object',
  required: ['name', 'dimension'],
  properties: {
    name: { type: 'string', pattern: COLLECTION_NAME_PATTERN },
    dimension: { type: 'integer', minimum: 1, maximum: MAX_DIMENSION },
    metric: { type: 'string', enum: METRICS },
    description: { type: 'string', maxLength: 4096 },
    multi_tenant: { type: 'boolean' },
    hnsw: {
      type: 'object',
      properties: {
        m: { type: 'integer', minimum: 2, maximum: 100 },
        ef_construction: { type: 'integer', minimum: 1, maximum: 10_000 },
        ef: { type: 'integer', minimum: 1, maximum: 10_000 },
      },
    },
  },
} as const;

/** A collection's definition as collectionDefinitionSchema reads it (in answers and export headers). */
export function collectionDefinitionJson(c: CollectionRecord) {
  return {
    name: c.name,
    dimension: c.dimension,
    metric: c.metric,
    description: c.description,
    multi_tenant: c.multiTenant,
    hnsw: { m: c.hnsw.m, ef_construction: c.hnsw.efConstruction, ef: c.hnsw.ef },
  };
}

/**
 * The upsert body. `values` is only checked to be an array here: packNumbers checks each number
 * (and says which one is wrong) while copying it, which is much cheaper than a schema walk over
 * every element. `properties` is checked by checkUpsert, to say "must be a JSON object".
 */
export const upsertBodySchema = {
  type: 'object',
  required: ['collection_name', 'vector'],
  properties: {
    collection_name: { type: 'string' },
    tenant_id: tenantSchema,
    vector: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['id', 'values'],
        properties: { id: { type: 'string' }, values: { type: 'array' }, tenant_id: tenantSchema },
      },
    },
  },
} as const;

export const isPlainObject = (v: unknown): v is Properties => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A lone surrogate (half of a UTF-16 pair): JSON can carry it as an escape, UTF-8 cannot store it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Refuses a string that is not well-formed Unicode, which no store could keep as it came. */
export function checkText(text: string, param: string, what: string): void {
  if (LONE_SURROGATE.test(text)) throw invalidArgument(`${param}: ${what} holds a lone surrogate (\\uD800 to \\uDFFF without its pair), which is not Unicode text`, param);
}

/** Every key and string of a properties object checked with checkText. */
export function checkPropertiesText(value: unknown, param: string): void {
  if (typeof value === 'string') checkText(value, param, 'a string');
  else if (Array.isArray(value)) value.forEach((v) => checkPropertiesText(v, param));
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      checkText(k, param, 'a key');
      checkPropertiesText(v, param);
    }
  }
}

export function checkId(id: string, param: string): void {
  if (id.length === 0) throw invalidArgument(`${param} is empty; an id is 1 to ${MAX_ID_LENGTH} characters`, param);
  if (id.length > MAX_ID_LENGTH) throw invalidArgument(`${param} has ${id.length} characters; an id is at most ${MAX_ID_LENGTH}`, param);
  checkText(id, param, 'the id');
}

/** A tenant id as the request schemas take it (tenantSchema), for one read from a file (an import). */
export function checkTenant(tenant: string, param: string): void {
  if (tenant.length === 0) throw invalidArgument(`${param} is empty; a tenant id is 1 to ${MAX_TENANT_LENGTH} characters`, param);
  if (tenant.length > MAX_TENANT_LENGTH) throw invalidArgument(`${param} has ${tenant.length} characters; a tenant id is at most ${MAX_TENANT_LENGTH}`, param);
  checkText(tenant, param, 'the tenant id');
}

export function checkDimension(c: CollectionInfo, values: unknown[], param: string): void {
  if (values.length !== c.dimension) {
    throw invalidArgument(`${param} has ${values.length} numbers; the collection "${c.name}" has dimension ${c.dimension}`, param);
  }
}

/** Copies numbers into `out` at `offset`, refusing anything a float32 cannot hold. */
export function packNumbers(values: unknown[], out: Float32Array, offset: number, param: string): void {
  for (let j = 0; j < values.length; j++) {
    const x = values[j];
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      const what = typeof x === 'number' ? String(x) : x === null ? 'null' : Array.isArray(x) ? 'an array' : `a ${typeof x}`;
      throw invalidArgument(`${param}[${j}] is ${what}; every value must be a finite number`, `${param}[${j}]`);
    }
    if (x > FLOAT32_MAX || x < -FLOAT32_MAX) throw invalidArgument(`${param}[${j}] is ${x}, beyond the float32 range (±3.4e38)`, `${param}[${j}]`);
    out[offset + j] = x;
  }
}

/** The tenant of an operation: required on a multi-tenant collection, refused on a plain one. */
export function tenantOf(c: CollectionInfo, given: string | undefined, param: string): string {
  if (c.multiTenant) {
    if (given === undefined) throw invalidArgument(`the collection "${c.name}" is multi-tenant: ${param} is required`, param);
    checkText(given, param, 'the tenant id');
    return given;
  }
  if (given !== undefined) throw invalidArgument(`the collection "${c.name}" has no tenants: remove ${param}`, param);
  return '';
}

/**
 * The tenant of one item of a batch (a vector of an upsert, an identifier of a delete): its own
 * tenant_id or the request's, which must agree when both are given.
 */
export function itemTenant(c: CollectionInfo, own: string | undefined, request: string | undefined, at: string): string {
  if (own !== undefined && request !== undefined && own !== request) {
    throw invalidArgument(`${at}.tenant_id "${own}" differs from the request's tenant_id "${request}"`, `${at}.tenant_id`);
  }
  if (own !== undefined) return tenantOf(c, own, `${at}.tenant_id`);
  if (request === undefined && c.multiTenant) {
    throw invalidArgument(`${at} has no tenant_id and the request none either; the collection "${c.name}" is multi-tenant`, 'tenant_id');
  }
  return tenantOf(c, request, 'tenant_id');
}

/**
 * Checks a schema-valid upsert body against its collection and packs it for the index worker.
 * All or nothing: the first fault refuses the whole request.
 */
export function checkUpsert(body: UpsertBody, c: CollectionInfo): UpsertBatch {
  const n = body.vector.length;
  const dim = c.dimension;
  const values = new Float32Array(n * dim);
  const ids = new Array<string>(n);
  const tenants = new Array<string>(n);
  const properties = new Array<Properties>(n);
  const seen = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const v = body.vector[i]!;
    const at = `vector[${i}]`;
    checkId(v.id, `${at}.id`);
    const tenant = itemTenant(c, v.tenant_id, body.tenant_id, at);
    const key = `${tenant}\u0000${v.id}`;
    const first = seen.get(key);
    if (first !== undefined) throw invalidArgument(`${at}.id "${v.id}" repeats vector[${first}].id; an id may appear once per request`, `${at}.id`);
    seen.set(key, i);
    checkDimension(c, v.values, `${at}.values`);
    packNumbers(v.values, values, i * dim, `${at}.values`);
    const props = v.properties === undefined ? {} : v.properties;
    if (!isPlainObject(props)) throw invalidArgument(`${at}.properties must be a JSON object`, `${at}.properties`);
    checkPropertiesText(props, `${at}.properties`);
    ids[i] = v.id;
    tenants[i] = tenant;
    properties[i] = props;
  }
  return { collectionId: c.id, ids, tenants, values, properties };
}
