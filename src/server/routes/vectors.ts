// The vector store (SPEC.md "Vector store operations", DESIGN.md sections 3 and 6):
//
//   POST   /api/v1/vectors/collections                  create {name, dimension, metric, description?, multi_tenant?, hnsw?}
//   GET    /api/v1/vectors/collections                  list, with vector counts
//   GET    /api/v1/vectors/collections/{name}           one, with its index state
//   DELETE /api/v1/vectors/collections/{name}           removes its vectors and index files
//   POST   /api/v1/vectors/upsert | search | delete | sample
//   GET    /api/v1/vectors/collections/{collection}/{id}[?tenant_id=]   fetch
//
// and, beyond SPEC.md (delete also takes a `filter` instead of ids):
//
//   POST   /api/v1/vectors/count                        {collection_name, tenant_id?, filter?} -> {count}
//   POST   /api/v1/vectors/scroll                       a page in id order, and the cursor of the next
//   GET    /api/v1/vectors/export/{name}                the collection as an NDJSON file (snapshot-format.ts)
//   POST   /api/v1/vectors/import[?name=]               a new collection from such a file
//
// Export and import are not under /collections/{name}/: a GET there is the fetch of a vector id.
// Bodies may be up to MAX_VECTOR_BODY_BYTES (a batch of embeddings is large); beyond it, 413.
// An import has its own limit, MAX_VECTOR_IMPORT_BYTES, and is streamed rather than buffered.
// At most VECTOR_MAX_CONCURRENT_EXPORTS exports stream at once (429 beyond); one not read for
// VECTOR_EXPORT_IDLE_TIMEOUT_MS is ended.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { checkCollection, checkImportName, checkTenants, collectionVisible } from '../../auth/permissions.js';
import { grantOf, type RouteAccess } from '../access.js';
import { ApiError, invalidArgument } from '../../errors.js';
import { validatorCompiler } from '../../validation.js';
import { collectionDefinitionSchema, upsertBodySchema } from '../../vectors/requests.js';
import type { CountBody, CreateCollectionBody, DeleteBody, SampleBody, ScrollBody, SearchBody, VectorService } from '../../vectors/service.js';
import { SNAPSHOT_CONTENT_TYPE } from '../../vectors/snapshot-format.js';
import { COLLECTION_NAME_PATTERN, MAX_RESULTS, MAX_SAMPLES, MAX_SCROLL_LIMIT, MAX_TENANT_LENGTH, METRICS } from '../../vectors/types.js';
import { listOf, responses } from '../schemas.js';

export interface VectorRouteOptions {
  vectors: VectorService;
  maxBodyBytes: number;
}

const tenantSchema = { type: 'string', minLength: 1, maxLength: MAX_TENANT_LENGTH } as const;
// A vector's properties are the caller's own JSON object: free-form by design.
const propertiesSchema = { type: 'object', additionalProperties: true } as const;
const numbers = { type: 'array', items: { type: 'number' } } as const;
// Checked by parseFilter (src/vectors/filter.ts), which names the field at fault.
const filterSchema = { type: 'object' } as const;
const propertyNames = { type: 'array', maxItems: 1000, items: { type: 'string' } } as const;

/** The body of a request on one collection (and tenant): collection_name, tenant_id and the route's own fields. */
function collectionBody<P extends Record<string, unknown>>(properties: P, required: readonly string[] = []) {
  return {
    type: 'object',
    required: ['collection_name', ...required],
    properties: { collection_name: { type: 'string' }, tenant_id: tenantSchema, ...properties },
  } as const;
}

const collectionSchema = {
  type: 'object',
  required: ['name', 'dimension', 'metric', 'description', 'multi_tenant', 'hnsw', 'vector_count', 'created_at'],
  properties: {
    name: { type: 'string' },
    dimension: { type: 'integer' },
    metric: { type: 'string', enum: METRICS },
    description: { type: 'string' },
    multi_tenant: { type: 'boolean' },
    hnsw: {
      type: 'object',
      required: ['m', 'ef_construction', 'ef'],
      properties: { m: { type: 'integer' }, ef_construction: { type: 'integer' }, ef: { type: 'integer' } },
    },
    vector_count: { type: 'integer' },
    created_at: { type: 'integer' },
    index: {
      type: 'object',
      required: ['tenants', 'indexed', 'tombstones', 'pending', 'compacting'],
      properties: {
        tenants: { type: 'integer' },
        indexed: { type: 'integer' },
        tombstones: { type: 'integer' },
        pending: { type: 'integer' },
        compacting: { type: 'boolean' },
      },
    },
    replica: {
      type: 'object',
      description: "On PostgreSQL: this replica's copy of the collection, and whether it has caught up since it started",
      required: ['state', 'applied_seq', 'last_seq'],
      properties: { state: { type: 'string', enum: ['ready', 'catching_up'] }, applied_seq: { type: 'integer' }, last_seq: { type: 'integer' } },
    },
  },
} as const;

/**
 * On PostgreSQL, the sequence number of the collection's changes that a write committed at, or that
 * a read reflects (the read waited for this replica's copy to reach the head it found).
 */
export const SEQ_HEADER = 'x-vector-seq';
const noteSeq = (reply: FastifyReply) => (seq: number) => void reply.header(SEQ_HEADER, String(seq));

// No `required`: the serializer writes required fields first, and SPEC.md's order is id, values,
// properties (values is left out when include_vector is false).
const vectorSchema = {
  type: 'object',
  properties: { id: { type: 'string' }, values: numbers, properties: propertiesSchema },
} as const;

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' } },
} as const;

type OnCollection = { collection_name: string; tenant_id?: string };

/** A request on one collection's vectors, in the body (collection_name, tenant_id): src/server/access.ts. */
const onVectors = (action: RouteAccess['action']): { access: RouteAccess } => ({
  access: {
    action,
    collection: (request: FastifyRequest) => (request.body as OnCollection).collection_name,
    tenants: (request: FastifyRequest) => [(request.body as OnCollection).tenant_id],
  },
});

/** A request on a whole collection named in the URL, which a tenant-scoped key may not make when `everyTenant` says what it does. */
const onCollection = (action: RouteAccess['action'], everyTenant?: string): { access: RouteAccess } => ({
  access: { action, collectionParam: 'name', collection: (request: FastifyRequest) => (request.params as { name: string }).name, ...(everyTenant ? { everyTenant } : {}) },
});

export const vectorRoutes: FastifyPluginAsync<VectorRouteOptions> = async (app, { vectors, maxBodyBytes }) => {
  // The app-wide handler would quote the app-wide body limit; these routes have their own.
  app.setErrorHandler((err: FastifyError, _request, reply) => {
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const e = new ApiError('payload_too_large', `request body is larger than the vector store's limit of ${maxBodyBytes} bytes (MAX_VECTOR_BODY_BYTES)`);
      return reply.code(413).send(e.body());
    }
    throw err;
  });
  const bodyLimit = maxBodyBytes;

  app.post<{ Body: CreateCollectionBody }>(
    '/api/v1/vectors/collections',
    {
      config: {
        access: {
          action: 'manage-collections',
          collectionParam: 'name',
          collection: (request) => (request.body as CreateCollectionBody).name,
          everyTenant: 'creating a collection',
        },
      },
      schema: {
        summary: 'Create a vector collection',
        body: collectionDefinitionSchema,
        response: responses({ 201: collectionSchema }),
      },
    },
    async (request, reply) => reply.code(201).send(await vectors.createCollection(request.body)),
  );

  app.get(
    '/api/v1/vectors/collections',
    {
      config: { access: { action: 'read', inHandler: 'a collection-scoped key lists only its collections' } },
      schema: { summary: 'List the vector collections, with their vector counts', response: responses({ 200: listOf('collections', collectionSchema) }) },
    },
    async (request) => {
      const grant = grantOf(request);
      return { collections: (await vectors.listCollections()).filter((c) => collectionVisible(grant, c.name)) };
    },
  );

  app.get<{ Params: { name: string } }>(
    '/api/v1/vectors/collections/:name',
    { config: onCollection('read'), schema: { summary: 'Get a vector collection, with its index state', params: nameParams, response: responses({ 200: collectionSchema }) } },
    async (request) => vectors.getCollection(request.params.name),
  );

  app.delete<{ Params: { name: string } }>(
    '/api/v1/vectors/collections/:name',
    {
      config: onCollection('manage-collections', 'deleting a collection'),
      schema: {
        summary: 'Delete a vector collection with its vectors and index files',
        params: nameParams,
        response: responses({ 200: { type: 'object', required: ['name', 'deleted'], properties: { name: { type: 'string' }, deleted: { type: 'boolean' } } } }),
      },
    },
    async (request) => vectors.deleteCollection(request.params.name),
  );

  // Upsert bodies reach the handler as bytes: the ingest worker parses and checks them (with
  // upsertBodySchema, through the same validator as every other body), so that a batch of
  // embeddings never holds the event loop. The schema is declared here as the route's contract.
  await app.register(async (raw) => {
    raw.removeContentTypeParser('application/json');
    raw.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
    raw.post<{ Body: Buffer }>(
      '/api/v1/vectors/upsert',
      {
        // The body is parsed in the ingest worker: its collection and tenants are checked once parsed.
        config: { access: { action: 'write-vectors', inHandler: 'the collection and each vector\'s tenant, once the ingest worker has parsed the body' } },
        bodyLimit,
        schema: {
          summary: 'Upsert vectors (insert new ids, replace existing ones)',
          body: upsertBodySchema,
          response: responses({ 200: { type: 'object', required: ['num_affected'], properties: { num_affected: { type: 'integer' } } } }),
        },
        // Checked in the ingest worker, against the same schema.
        validatorCompiler: () => () => true,
      },
      async (request, reply) => {
        // No Content-Type and no body: Fastify parses nothing, and the body is undefined.
        if (!Buffer.isBuffer(request.body) || request.body.byteLength === 0) throw invalidArgument('request body is empty; send a JSON object');
        const grant = grantOf(request);
        return vectors.upsert(request.body, noteSeq(reply), (collection, tenants) => {
          checkCollection(grant, collection.name);
          checkTenants(grant, collection, tenants);
        });
      },
    );
  });

  app.post<{ Body: SearchBody }>(
    '/api/v1/vectors/search',
    {
      config: onVectors('read-vectors'),
      bodyLimit,
      schema: {
        summary: 'Search the vectors nearest a reference vector, optionally filtered',
        body: collectionBody(
          {
            reference_vector: { type: 'object', required: ['element'], properties: { element: numbers } },
            properties: propertyNames,
            max_results: { type: 'integer', minimum: 1, maximum: MAX_RESULTS, default: 10 },
            include_vector: { type: 'boolean', default: false },
            include_distance: { type: 'boolean', default: true },
            include_id: { type: 'boolean', default: true },
            filter: filterSchema,
          },
          ['reference_vector'],
        ),
        response: responses({
          200: {
            type: 'object',
            required: ['search_results'],
            properties: {
              search_results: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    vector: { type: 'object', required: ['values'], properties: { values: numbers } },
                    distance: { type: 'number' },
                    id: { type: 'string' },
                    properties: propertiesSchema,
                  },
                },
              },
            },
          },
        }),
      },
    },
    async (request, reply) => vectors.search(request.body, noteSeq(reply)),
  );

  app.post<{ Body: DeleteBody }>(
    '/api/v1/vectors/delete',
    {
      // Each identifier's own tenant, or the request's.
      config: {
        access: {
          ...onVectors('write-vectors').access,
          tenants: (request) => {
            const body = request.body as DeleteBody;
            return body.vector_identifiers ? body.vector_identifiers.map((v) => v.tenant_id ?? body.tenant_id) : [body.tenant_id];
          },
        },
      },
      bodyLimit,
      schema: {
        summary: 'Delete vectors by id, or those matching a filter',
        // One of vector_identifiers and filter: the service says which is missing or extra.
        body: collectionBody({
          vector_identifiers: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['vector_id'],
              properties: { vector_id: { type: 'string' }, tenant_id: tenantSchema },
            },
          },
          filter: filterSchema,
        }),
        response: responses({ 200: { type: 'object', required: ['num_vectors_deleted'], properties: { num_vectors_deleted: { type: 'integer' } } } }),
      },
    },
    async (request, reply) => vectors.delete(request.body, noteSeq(reply)),
  );

  app.get<{ Params: { collection: string; id: string }; Querystring: { tenant_id?: string } }>(
    '/api/v1/vectors/collections/:collection/:id',
    {
      config: {
        access: {
          action: 'read-vectors',
          collectionParam: 'collection',
          collection: (request) => (request.params as { collection: string }).collection,
          tenants: (request) => [(request.query as { tenant_id?: string }).tenant_id],
        },
      },
      schema: {
        summary: 'Fetch one vector by id',
        params: {
          type: 'object',
          required: ['collection', 'id'],
          properties: { collection: { type: 'string' }, id: { type: 'string' } },
        },
        querystring: { type: 'object', properties: { tenant_id: tenantSchema } },
        response: responses({ 200: { type: 'object', required: ['vector'], properties: { vector: vectorSchema } } }),
      },
    },
    async (request, reply) => vectors.fetch(request.params.collection, request.params.id, request.query.tenant_id, noteSeq(reply)),
  );

  app.post<{ Body: SampleBody }>(
    '/api/v1/vectors/sample',
    {
      config: onVectors('read-vectors'),
      bodyLimit,
      schema: {
        summary: 'Sample distinct vectors at random',
        body: collectionBody({
          num_samples: { type: 'integer', minimum: 1, maximum: MAX_SAMPLES, default: 10 },
          include_vector: { type: 'boolean', default: true },
        }),
        response: responses({ 200: listOf('vectors', vectorSchema) }),
      },
    },
    async (request, reply) => vectors.sample(request.body, noteSeq(reply)),
  );

  app.post<{ Body: CountBody }>(
    '/api/v1/vectors/count',
    {
      config: onVectors('read-vectors'),
      bodyLimit,
      schema: {
        summary: 'Count the vectors of a collection (and tenant), optionally filtered',
        body: collectionBody({ filter: filterSchema }),
        response: responses({ 200: { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } } }),
      },
    },
    async (request, reply) => vectors.count(request.body, noteSeq(reply)),
  );

  app.post<{ Body: ScrollBody }>(
    '/api/v1/vectors/scroll',
    {
      config: onVectors('read-vectors'),
      bodyLimit,
      schema: {
        summary: 'Page through the vectors in id order, with a cursor',
        body: collectionBody({
          filter: filterSchema,
          limit: { type: 'integer', minimum: 1, maximum: MAX_SCROLL_LIMIT, default: 100 },
          cursor: { type: 'string', minLength: 1, maxLength: 4096 },
          include_vector: { type: 'boolean', default: false },
          properties: propertyNames,
        }),
        response: responses({
          200: {
            type: 'object',
            required: ['vectors', 'next_cursor'],
            properties: { vectors: { type: 'array', items: vectorSchema }, next_cursor: { type: ['string', 'null'] } },
          },
        }),
      },
    },
    async (request, reply) => vectors.scroll(request.body, noteSeq(reply)),
  );

  app.get<{ Params: { name: string } }>(
    '/api/v1/vectors/export/:name',
    {
      config: onCollection('manage-collections', 'exporting a collection'),
      schema: {
        summary: 'Export a collection: its definition and every vector, as an NDJSON file',
        params: nameParams,
        response: responses({
          200: {
            description: 'The export: a header line, one line per vector, a last line with the count and sha256',
            content: { [SNAPSHOT_CONTENT_TYPE]: { schema: { type: 'string' } } },
          },
        }),
      },
    },
    async (request, reply) => {
      const exported = await vectors.exportCollection(request.params.name);
      return reply
        .type(SNAPSHOT_CONTENT_TYPE)
        .header('content-disposition', `attachment; filename="${exported.filename}"`)
        .header('x-vector-count', String(exported.vectorCount))
        .send(exported.stream);
    },
  );

  // An export file reaches the handler as a stream: the service hands it to the ingest worker
  // chunk by chunk, which checks every line before the collection is created with all its vectors
  // in one transaction. Its own limit, MAX_VECTOR_IMPORT_BYTES (an export is far larger than a
  // batch of upserts), is counted by the service as the bytes arrive.
  const importLimit = vectors.maxImportBytes;
  await app.register(async (raw) => {
    raw.removeContentTypeParser('application/json');
    raw.addContentTypeParser([SNAPSHOT_CONTENT_TYPE, 'application/json', 'application/octet-stream'], (_request, payload, done) => done(null, payload));
    raw.post<{ Querystring: { name?: string }; Body: AsyncIterable<Uint8Array> | undefined }>(
      '/api/v1/vectors/import',
      {
        config: { access: { action: 'manage-collections', everyTenant: 'importing a collection', inHandler: 'a collection-scoped key must name an import in its scope with ?name=' } },
        bodyLimit: importLimit,
        schema: {
          summary: 'Create a collection from an export file, under its own name or ?name=',
          consumes: [SNAPSHOT_CONTENT_TYPE, 'application/octet-stream', 'application/json'],
          body: { type: 'string', format: 'binary', description: 'A file written by GET /api/v1/vectors/export/{name}' },
          querystring: { type: 'object', properties: { name: { type: 'string', pattern: COLLECTION_NAME_PATTERN } } },
          response: responses({ 201: collectionSchema }),
        },
        // The body is a stream, checked line by line in the ingest worker (snapshot-format.ts).
        validatorCompiler: (route) => (route.httpPart === 'body' ? () => true : validatorCompiler(route)),
      },
      async (request, reply) => {
        const length = request.headers['content-length'];
        const declared = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
        try {
          checkImportName(grantOf(request), request.query.name);
          return reply.code(201).send(await vectors.importCollection(request.body, request.query.name, declared));
        } catch (err) {
          // Refused before the body was read to its end: the rest is not read, the connection closes.
          if (!request.raw.complete) reply.header('connection', 'close');
          throw err;
        }
      },
    );
  });
};
