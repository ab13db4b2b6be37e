// The API keys over HTTP, for admins (role admin: src/auth/permissions.ts): list them (ids, names,
// roles and scopes, never secrets), create one with a role and scope (the key is in the answer,
// once), revoke one. `platform keys ...` does the same on the store directly, with no host.
import type { FastifyPluginAsync } from 'fastify';
import type { ApiKeyRecord, ApiKeyStore } from '../../auth/api-keys.js';
import { checkRole, checkScope, DEFAULT_ROLE, MAX_SCOPE_NAMES, ROLES, ScopeError, type KeyGrant } from '../../auth/roles.js';
import { invalidArgument, notFound } from '../../errors.js';
import { PROJECT_PATTERN } from '../../models/names.js';
import { COLLECTION_NAME_PATTERN, MAX_TENANT_LENGTH } from '../../vectors/types.js';
import { listOf, responses } from '../schemas.js';

const names = { type: ['array', 'null'], items: { type: 'string' } } as const;

const keySchema = {
  type: 'object',
  required: ['id', 'name', 'createdAt', 'revokedAt', 'lastUsedAt', 'role', 'scope'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    createdAt: { type: 'integer' },
    revokedAt: { type: ['integer', 'null'] },
    lastUsedAt: { type: ['integer', 'null'] },
    role: { type: 'string', enum: [...ROLES] },
    // Each part null: unscoped there.
    scope: {
      type: 'object',
      required: ['project', 'collections', 'tenants'],
      properties: { project: { type: ['string', 'null'] }, collections: names, tenants: names },
    },
  },
} as const;

const createBody = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 128 },
    role: { type: 'string', enum: [...ROLES], description: `The key's role (default ${DEFAULT_ROLE})` },
    project: { type: 'string', pattern: PROJECT_PATTERN, description: 'Only the models of this project (library models are in project "library")' },
    collections: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_SCOPE_NAMES,
      items: { type: 'string', pattern: COLLECTION_NAME_PATTERN },
      description: 'Only these vector collections',
    },
    tenants: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_SCOPE_NAMES,
      items: { type: 'string', minLength: 1, maxLength: MAX_TENANT_LENGTH },
      description: 'Only these tenants of multi-tenant collections',
    },
  },
  additionalProperties: false,
} as const;

type CreateBody = { name?: string; role?: string; project?: string; collections?: string[]; tenants?: string[] };

const keyJson = (k: ApiKeyRecord) => ({ id: k.id, name: k.name, createdAt: k.createdAt, revokedAt: k.revokedAt, lastUsedAt: k.lastUsedAt, role: k.role, scope: k.scope });

const manageKeys = { access: { action: 'manage-keys' } } as const;

export const keysRoutes: FastifyPluginAsync<{ keys: ApiKeyStore }> = async (app, { keys }) => {
  app.get(
    '/api/v1/keys',
    { config: manageKeys, schema: { summary: 'List the API keys with their roles and scopes (never secrets)', response: responses({ 200: listOf('keys', keySchema) }) } },
    async () => ({ keys: (await keys.list()).map(keyJson) }),
  );

  app.post<{ Body: CreateBody }>(
    '/api/v1/keys',
    {
      config: manageKeys,
      schema: {
        summary: 'Create an API key with a role and an optional scope; the answer holds the key, shown once (201)',
        body: createBody,
        response: responses({ 201: { ...keySchema, required: [...keySchema.required, 'key'], properties: { ...keySchema.properties, key: { type: 'string' } } } }),
      },
    },
    async (request, reply) => {
      const { name = 'default', role = DEFAULT_ROLE, project, collections, tenants } = request.body;
      let grant: KeyGrant;
      try {
        grant = { role: checkRole(role), scope: checkScope({ project, collections, tenants }) };
      } catch (err) {
        if (err instanceof ScopeError) throw invalidArgument(err.message, err.field);
        throw err;
      }
      const created = await keys.create(name, grant);
      request.log.info({ apiKeyId: created.id, role: created.role }, 'API key created');
      reply.code(201);
      return { ...keyJson(created), key: created.key };
    },
  );

  app.delete<{ Params: { key_id: string } }>(
    '/api/v1/keys/:key_id',
    {
      config: manageKeys,
      schema: {
        summary: "Revoke an API key: its tokens stop working at once on this replica, within a second on the others",
        params: { type: 'object', required: ['key_id'], properties: { key_id: { type: 'string', maxLength: 64 } } },
        response: responses({ 200: keySchema }),
      },
    },
    async (request) => {
      if (!(await keys.revoke(request.params.key_id))) throw notFound(`no API key with id "${request.params.key_id}"`, 'key_id');
      return keyJson((await keys.get(request.params.key_id))!);
    },
  );
};
