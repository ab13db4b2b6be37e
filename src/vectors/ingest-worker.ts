// The ingest worker: parses and checks upsert bodies off the main thread. A batch of 500 x 768
// floats is about 8 MB of JSON and a bulk load can be far larger; JSON.parse, the schema check
// and packing every number into a Float32Array would otherwise hold the event loop for tens or
// hundreds of milliseconds. The main thread only reads the bytes and forwards the packed batch
// to the index worker (as a transfer, without a copy). Import bodies (a collection's export,
// snapshot-format.ts) are checked here whole for the same reason.
import { parentPort, workerData } from 'node:worker_threads';
import { invalidArgument, notFound } from '../errors.js';
import { describeValidationError, validatorCompiler } from '../validation.js';
import { checkUpsert, upsertBodySchema, type CollectionInfo, type UpsertBody } from './requests.js';
import { parseSnapshot } from './snapshot-format.js';
import { lowerThreadPriority } from './thread-priority.js';
import type { IngestOps, UpsertBatch } from './types.js';
import { serve } from './worker-protocol.js';

lowerThreadPriority((workerData as { nice: number }).nice);

// The same validator (options and messages) as every other route's body.
const validate = validatorCompiler({ schema: upsertBodySchema, method: 'POST', url: '/api/v1/vectors/upsert', httpPart: 'body' }) as ((
  data: unknown,
) => boolean) & { errors?: Parameters<typeof describeValidationError>[0][] | null };

let collections = new Map<string, CollectionInfo>();
const decoder = new TextDecoder('utf-8', { fatal: true });

function parseUpsert(bytes: Uint8Array) {
  if (bytes.byteLength === 0) throw invalidArgument('request body is empty; send a JSON object');
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(bytes));
  } catch (err) {
    throw invalidArgument(`request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!validate(body)) {
    const { message, param } = describeValidationError(validate.errors![0]!, 'body');
    throw invalidArgument(message, param);
  }
  const request = body as UpsertBody;
  const c = collections.get(request.collection_name);
  if (!c) throw notFound(`no vector collection named "${request.collection_name}"`, 'collection_name');
  return checkUpsert(request, c);
}

serve(
  parentPort!,
  (op, arg) => {
    if (op === 'setCollections') {
      collections = new Map((arg as IngestOps['setCollections'][0]).collections.map((c) => [c.name, c]));
      return null;
    }
    if (op === 'parseUpsert') return parseUpsert((arg as IngestOps['parseUpsert'][0]).bytes);
    if (op === 'parseImport') {
      const { bytes, name } = arg as IngestOps['parseImport'][0];
      return parseSnapshot(bytes, name);
    }
    throw new Error(`unknown operation ${op}`);
  },
  // A parsed batch's values (an upsert's or an import's) move to the main thread, and on to the
  // index worker, without a copy.
  (result) => (result && typeof result === 'object' && 'values' in result ? [(result as UpsertBatch).values.buffer as ArrayBuffer] : []),
);
