// The export of a collection: one self-describing NDJSON file that imports back exactly.
//
//   {"format":"platform-vector-collection","version":1,"values":"float32-le-base64",
//    "collection":{"name":..,"dimension":..,"metric":..,"description":..,"multi_tenant":..,"hnsw":{..}},
//    "vector_count":N}
//   {"id":"a","tenant_id":"t","values":"AACAPwAAAEA=","properties":{..}}    one line per vector, by tenant then id
//   {"end":true,"vector_count":N,"sha256":"<hex digest of every byte before this line>"}
//
// Values travel as the stored float32 bytes (little-endian) in base64: bit-exact, where decimal
// JSON would turn -0 into 0, and about a third of the size of the decimal text. `tenant_id` is
// present only in a multi-tenant collection. The last line's count and digest turn a truncated or
// damaged file into a refusal, never a partial import.
//
// The writers run on the main thread (snapshot-export.ts); parseSnapshot runs in the ingest
// worker, and checks everything before the index worker writes anything.
import crypto from 'node:crypto';
import { invalidArgument } from '../errors.js';
import { describeValidationError, validatorCompiler } from '../validation.js';
import { checkId, collectionDefinitionSchema, isPlainObject } from './requests.js';
import type { CollectionRecord, ImportBatch, NewCollection, Properties } from './types.js';

export const SNAPSHOT_FORMAT = 'platform-vector-collection';
export const SNAPSHOT_VERSION = 1;
export const SNAPSHOT_CONTENT_TYPE = 'application/x-ndjson';
const VALUES_ENCODING = 'float32-le-base64';

// ---- writing ----

export function headerLine(c: CollectionRecord, vectorCount: number): string {
  const collection = {
    name: c.name,
    dimension: c.dimension,
    metric: c.metric,
    description: c.description,
    multi_tenant: c.multiTenant,
    hnsw: { m: c.hnsw.m, ef_construction: c.hnsw.efConstruction, ef: c.hnsw.ef },
  };
  return JSON.stringify({ format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, values: VALUES_ENCODING, collection, vector_count: vectorCount }) + '\n';
}

/** One vector as stored: its float32 blob and its properties' JSON text go out as they are. */
export function vectorLine(multiTenant: boolean, tenant: string, id: string, vec: Buffer, propertiesJson: string): string {
  const who = multiTenant ? `"id":${JSON.stringify(id)},"tenant_id":${JSON.stringify(tenant)}` : `"id":${JSON.stringify(id)}`;
  return `{${who},"values":"${vec.toString('base64')}","properties":${propertiesJson}}\n`;
}

export function trailerLine(vectorCount: number, sha256: string): string {
  return JSON.stringify({ end: true, vector_count: vectorCount, sha256 }) + '\n';
}

// ---- reading ----

// The definition as a create body takes it, with every field required.
const definition = collectionDefinitionSchema;
const headerSchema = {
  type: 'object',
  required: ['collection', 'vector_count'],
  properties: {
    collection: {
      ...definition,
      required: ['name', 'dimension', 'metric', 'description', 'multi_tenant', 'hnsw'],
      properties: { ...definition.properties, hnsw: { ...definition.properties.hnsw, required: ['m', 'ef_construction', 'ef'] } },
    },
    vector_count: { type: 'integer', minimum: 0 },
  },
} as const;
const validateHeader = validatorCompiler({ schema: headerSchema, method: 'POST', url: '/api/v1/vectors/import', httpPart: 'body' }) as ((data: unknown) => boolean) & {
  errors?: Parameters<typeof describeValidationError>[0][] | null;
};

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const NEWLINE = 0x0a;

/** A refusal of a damaged or foreign file, naming the line (1-based). */
const damaged = (line: number, what: string) => invalidArgument(`the export is damaged or not an export: line ${line}: ${what}`);

function parseLine(text: string, line: number): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw damaged(line, `not valid JSON (${(err as Error).message})`);
  }
  if (!isPlainObject(value)) throw damaged(line, 'not a JSON object');
  return value;
}

function parseHeader(text: string): NewCollection & { vectorCount: number } {
  const h = parseLine(text, 1);
  if (h.format !== SNAPSHOT_FORMAT) throw damaged(1, `"format" is not "${SNAPSHOT_FORMAT}"; this is not a vector collection export`);
  if (h.version !== SNAPSHOT_VERSION) throw damaged(1, `"version" is ${JSON.stringify(h.version)}; this host reads version ${SNAPSHOT_VERSION}`);
  if (h.values !== VALUES_ENCODING) throw damaged(1, `"values" is ${JSON.stringify(h.values)}; this host reads "${VALUES_ENCODING}"`);
  if (!validateHeader(h)) {
    const { message } = describeValidationError(validateHeader.errors![0]!, 'the header');
    throw damaged(1, message);
  }
  const c = h.collection as { name: string; dimension: number; metric: NewCollection['metric']; description: string; multi_tenant: boolean; hnsw: Record<string, number> };
  return {
    name: c.name,
    dimension: c.dimension,
    metric: c.metric,
    description: c.description,
    multiTenant: c.multi_tenant,
    hnsw: { m: c.hnsw.m!, efConstruction: c.hnsw.ef_construction!, ef: c.hnsw.ef! },
    vectorCount: h.vector_count as number,
  };
}

/**
 * Checks a whole export and packs it for the index worker, as the collection `name` when given.
 * Every line is checked (and the digest over them) before anything is written: a file that is
 * cut short, edited or not an export at all is a 400 naming the line at fault.
 */
export function parseSnapshot(bytes: Uint8Array, name: string | undefined): ImportBatch {
  if (bytes.byteLength === 0) throw invalidArgument('the body is empty; send a file written by the export');
  // The last line is the trailer; the digest covers every byte before it.
  let end = bytes.byteLength;
  if (bytes[end - 1] === NEWLINE) end--;
  const trailerStart = bytes.lastIndexOf(NEWLINE, end - 1) + 1;
  if (trailerStart === 0) throw damaged(1, 'the file has a single line; an export has a header, its vectors and a last line');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, end));
  } catch {
    throw invalidArgument('the export is damaged or not an export: it is not valid UTF-8');
  }
  const lines = text.split('\n');
  const header = parseHeader(lines[0]!);
  const trailer = parseLine(lines[lines.length - 1]!, lines.length);
  const vectorLines = lines.length - 2;
  if (trailer.end !== true || typeof trailer.sha256 !== 'string') {
    throw damaged(lines.length, 'the file ends before its last line (no {"end": true, ...}); was it cut short?');
  }
  if (trailer.vector_count !== vectorLines || header.vectorCount !== vectorLines) {
    throw damaged(lines.length, `the file has ${vectorLines} vector lines; its first line says ${header.vectorCount} and its last ${JSON.stringify(trailer.vector_count)}`);
  }
  const digest = crypto.createHash('sha256').update(bytes.subarray(0, trailerStart)).digest('hex');
  if (digest !== trailer.sha256) throw damaged(lines.length, 'the sha256 of the lines before the last one does not match: the file was changed or damaged');

  const dim = header.dimension;
  const bytesPerVector = dim * 4;
  const base64Length = 4 * Math.ceil(bytesPerVector / 3);
  const values = new Float32Array(vectorLines * dim);
  const valueBytes = new Uint8Array(values.buffer);
  const ids = new Array<string>(vectorLines);
  const tenants = new Array<string>(vectorLines);
  const properties = new Array<Properties>(vectorLines);
  const seen = new Set<string>();
  for (let i = 0; i < vectorLines; i++) {
    const line = i + 2;
    const v = parseLine(lines[i + 1]!, line);
    if (typeof v.id !== 'string') throw damaged(line, '"id" is not a string');
    try {
      checkId(v.id, 'id');
    } catch (err) {
      throw damaged(line, (err as Error).message);
    }
    let tenant = '';
    if (header.multiTenant) {
      if (typeof v.tenant_id !== 'string' || v.tenant_id.length === 0) throw damaged(line, 'the collection is multi-tenant but "tenant_id" is not a non-empty string');
      tenant = v.tenant_id;
    } else if (v.tenant_id !== undefined) throw damaged(line, 'the collection has no tenants but the line has a "tenant_id"');
    const key = `${tenant}\u0000${v.id}`;
    if (seen.has(key)) throw damaged(line, `the id "${v.id}" appears twice${header.multiTenant ? ` for tenant "${tenant}"` : ''}`);
    seen.add(key);
    if (typeof v.values !== 'string' || v.values.length !== base64Length || !BASE64.test(v.values)) {
      throw damaged(line, `"values" is not ${dim} float32 values in base64 (${base64Length} characters)`);
    }
    const raw = Buffer.from(v.values, 'base64');
    if (raw.byteLength !== bytesPerVector) throw damaged(line, `"values" holds ${raw.byteLength} bytes; the collection has dimension ${dim} (${bytesPerVector} bytes)`);
    valueBytes.set(raw, i * bytesPerVector);
    for (let j = i * dim; j < (i + 1) * dim; j++) {
      if (!Number.isFinite(values[j]!)) throw damaged(line, `"values"[${j - i * dim}] is ${values[j]}; every value must be finite`);
    }
    if (!isPlainObject(v.properties)) throw damaged(line, '"properties" is not a JSON object');
    ids[i] = v.id;
    tenants[i] = tenant;
    properties[i] = v.properties;
  }
  const { vectorCount: _count, ...collection } = header;
  return { collection: { ...collection, name: name ?? collection.name }, ids, tenants, values, properties };
}
