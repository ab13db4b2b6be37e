// The vector store (SPEC.md "Vector store operations", DESIGN.md sections 3 and 6):
//
//   POST   /api/v1/vectors/collections                  create {name, dimension, metric, description?, multi_tenant?, hnsw?}
//   GET    /api/v1/vectors/collections                  list, with vector counts
//   GET    /api/v1/vectors/collections/{name}           one, with its index state
//   DELETE /api/v1/vectors/collections/{name}           removes its vectors and index files
//   POST   /api/v1/vectors/upsert | search | delete | sample
//   GET    /api/v1/vectors/collections/{collection}/{id}[?tenant_id=]   fetch
//
// Bodies may be up to MAX_VECTOR_BODY_BYTES (a batch of embeddings is large); beyond it, 413.
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors.js';
import { upsertBodySchema } from '../../vectors/requests.js';
import type { CreateCollectionBody, DeleteBody, SampleBody, SearchBody, VectorService } from '../../vectors/service.js';
import { COLLECTION_NAME_PATTERN, MAX_DIMENSION, MAX_RESULTS, MAX_SAMPLES, MAX_TENANT_LENGTH, METRICS } from '../../vectors/types.js';
import { listOf, responses } from '../schemas.js';

export interface VectorRouteOptions {
  vectors: VectorService;
  maxBodyBytes: number;
}

const tenantSchema = { type: 'string', minLength: 1, maxLength: MAX_TENANT_LENGTH } as const;
// A vector's properties are the caller's own JSON object: free-form by design.
const propertiesSchema = { type: 'object', additionalProperties: true } as const;
const numbers = { type: 'array', items: { type: 'number' } } as const;

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
  },
} as const;

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
      schema: {
        body: {
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
        },
        response: responses({ 201: collectionSchema }),
      },
    },
    async (request, reply) => reply.code(201).send(await vectors.createCollection(request.body)),
  );

  app.get(
    '/api/v1/vectors/collections',
    { schema: { response: responses({ 200: listOf('collections', collectionSchema) }) } },
    async () => ({ collections: vectors.listCollections() }),
  );

  app.get<{ Params: { name: string } }>(
    '/api/v1/vectors/collections/:name',
    { schema: { params: nameParams, response: responses({ 200: collectionSchema }) } },
    async (request) => vectors.getCollection(request.params.name),
  );

  app.delete<{ Params: { name: string } }>(
    '/api/v1/vectors/collections/:name',
    {
      schema: {
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
        bodyLimit,
        schema: {
          body: upsertBodySchema,
          response: responses({ 200: { type: 'object', required: ['num_affected'], properties: { num_affected: { type: 'integer' } } } }),
        },
        // Checked in the ingest worker, against the same schema.
        validatorCompiler: () => () => true,
      },
      async (request) => vectors.upsert(request.body),
    );
  });

  app.post<{ Body: SearchBody }>(
    '/api/v1/vectors/search',
    {
      bodyLimit,
      schema: {
        body: {
          type: 'object',
          required: ['collection_name', 'reference_vector'],
          properties: {
            collection_name: { type: 'string' },
            reference_vector: { type: 'object', required: ['element'], properties: { element: numbers } },
            properties: { type: 'array', maxItems: 1000, items: { type: 'string' } },
            max_results: { type: 'integer', minimum: 1, maximum: MAX_RESULTS, default: 10 },
            include_vector: { type: 'boolean', default: false },
            include_distance: { type: 'boolean', default: true },
            include_id: { type: 'boolean', default: true },
            tenant_id: tenantSchema,
            filter: { type: 'object' },
          },
        },
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
    async (request) => vectors.search(request.body),
  );

  app.post<{ Body: DeleteBody }>(
    '/api/v1/vectors/delete',
    {
      bodyLimit,
      schema: {
        body: {
          type: 'object',
          required: ['collection_name', 'vector_identifiers'],
          properties: {
            collection_name: { type: 'string' },
            tenant_id: tenantSchema,
            vector_identifiers: {
              type: 'array',
              minItems: 1,
              items: {
                type: 'object',
                required: ['vector_id'],
                properties: { vector_id: { type: 'string' }, tenant_id: tenantSchema },
              },
            },
          },
        },
        response: responses({ 200: { type: 'object', required: ['num_vectors_deleted'], properties: { num_vectors_deleted: { type: 'integer' } } } }),
      },
    },
    async (request) => vectors.delete(request.body),
  );

  app.get<{ Params: { collection: string; id: string }; Querystring: { tenant_id?: string } }>(
    '/api/v1/vectors/collections/:collection/:id',
    {
      schema: {
        params: {
          type: 'object',
          required: ['collection', 'id'],
          properties: { collection: { type: 'string' }, id: { type: 'string' } },
        },
        querystring: { type: 'object', properties: { tenant_id: tenantSchema } },
        response: responses({ 200: { type: 'object', required: ['vector'], properties: { vector: vectorSchema } } }),
      },
    },
    async (request) => vectors.fetch(request.params.collection, request.params.id, request.query.tenant_id),
  );

  app.post<{ Body: SampleBody }>(
    '/api/v1/vectors/sample',
    {
      bodyLimit,
      schema: {
        body: {
          type: 'object',
          required: ['collection_name'],
          properties: {
            collection_name: { type: 'string' },
            num_samples: { type: 'integer', minimum: 1, maximum: MAX_SAMPLES, default: 10 },
            include_vector: { type: 'boolean', default: true },
            tenant_id: tenantSchema,
          },
        },
        response: responses({ 200: listOf('vectors', vectorSchema) }),
      },
    },
    async (request) => vectors.sample(request.body),
  );
};
