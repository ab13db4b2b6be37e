// JSON-schema pieces shared by the route plugins. Response schemas name every field a route sends
// (fast-json-stringify writes those and drops anything else), so a field added to a record does
// not leak into an answer until its route says so. Caution for nullable fields: a plain
// { type: 'string' } turns null into "", so they are typed ['string', 'null'].
import { errorBodySchema } from '../errors.js';

/** A route's response schemas plus the shared error shape for 4xx and 5xx. */
export function responses<T extends Record<number, unknown>>(ok: T) {
  return { ...ok, '4xx': errorBodySchema, '5xx': errorBodySchema };
}

/** `{ <key>: [item, ...] }`: the envelope of every list answer. */
export function listOf(key: string, item: object) {
  return { type: 'object', required: [key], properties: { [key]: { type: 'array', items: item } } } as const;
}

/** Path params of the routes under /<model_id>/ and /models/<model_id>. */
export const modelParams = { type: 'object', required: ['model_id'], properties: { model_id: { type: 'string', maxLength: 64 } } } as const;

/** src/metrics/latency-summary.ts: null where the window holds no sample. */
export const latencySummarySchema = {
  type: 'object',
  required: ['mean', 'p50', 'p99'],
  properties: { mean: { type: ['number', 'null'] }, p50: { type: ['number', 'null'] }, p99: { type: ['number', 'null'] } },
} as const;

/** ReplicaCount (src/cluster/replicas.ts): of the live replicas, how many have applied something. */
export const replicaCountSchema = {
  type: 'object',
  description: 'Of the live replicas of the host on this database, how many have applied it',
  required: ['applied', 'total'],
  properties: { applied: { type: 'integer' }, total: { type: 'integer' } },
} as const;
