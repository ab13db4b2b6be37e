// The ingest worker: parses and checks upsert bodies off the main thread. A batch of 500 x 768
// floats is about 8 MB of JSON and a bulk load can be far larger; JSON.parse, the schema check
// and packing every number into a Float32Array would otherwise hold the event loop for tens or
// hundreds of milliseconds. The main thread only reads the bytes and forwards the packed batch
// to the index worker (as a transfer, without a copy). Import bodies (a collection's export,
// snapshot-format.ts) are read here for the same reason, chunk by chunk as they arrive.
import { parentPort, workerData } from 'node:worker_threads';
import { invalidArgument, notFound } from '../errors.js';
import { describeValidationError, jsonDepthMessage, jsonTooDeep, validatorCompiler } from '../validation.js';
import { checkUpsert, upsertBodySchema, type CollectionInfo, type UpsertBody } from './requests.js';
import { SnapshotReader } from './snapshot-format.js';
import { lowerThreadPriority } from './thread-priority.js';
import { VectorStoreError, type IngestOps, type UpsertBatch } from './types.js';
import { serve } from './worker-protocol.js';

lowerThreadPriority((workerData as { nice: number }).nice);

// The same validator (options and messages) as every other route's body.
const validate = validatorCompiler({ schema: upsertBodySchema, method: 'POST', url: '/api/v1/vectors/upsert', httpPart: 'body' }) as ((
  data: unknown,
) => boolean) & { errors?: Parameters<typeof describeValidationError>[0][] | null };

let collections = new Map<string, CollectionInfo>();
/** Imports being read, by session. */
const imports = new Map<number, SnapshotReader>();
let nextSession = 1;

function reader(session: number): SnapshotReader {
  const r = imports.get(session);
  // A worker restarted since the import began has lost its reader.
  if (!r) throw new VectorStoreError('internal', `import session ${session} is unknown to the ingest worker`);
  return r;
}
const decoder = new TextDecoder('utf-8', { fatal: true });

function parseUpsert(bytes: Uint8Array) {
  if (bytes.byteLength === 0) throw invalidArgument('request body is empty; send a JSON object');
  // Before parsing: a body nested too deep is refused (its reply could not even be posted back).
  if (jsonTooDeep(bytes)) throw invalidArgument(jsonDepthMessage('request body'));
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
    if (op === 'importBegin') {
      const session = nextSession++;
      imports.set(session, new SnapshotReader((arg as IngestOps['importBegin'][0]).name));
      return { session };
    }
    if (op === 'importChunk') {
      const { session, bytes } = arg as IngestOps['importChunk'][0];
      try {
        reader(session).push(bytes);
      } catch (err) {
        imports.delete(session);
        throw err;
      }
      return null;
    }
    if (op === 'importEnd') {
      const { session } = arg as IngestOps['importEnd'][0];
      const r = reader(session);
      imports.delete(session);
      return r.end();
    }
    if (op === 'importAbort') {
      imports.delete((arg as IngestOps['importAbort'][0]).session);
      return null;
    }
    throw new Error(`unknown operation ${op}`);
  },
  // A parsed batch's values (an upsert's or an import's) move to the main thread, and on to the
  // index worker, without a copy.
  (result) => (result && typeof result === 'object' && 'values' in result ? [(result as UpsertBatch).values.buffer as ArrayBuffer] : []),
);
