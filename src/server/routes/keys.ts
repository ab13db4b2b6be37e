// GET /api/v1/keys: the API keys (ids and names, never secrets), for the console and audits.
// Creating and revoking keys is local administration on the store (platform keys ...).
import type { FastifyPluginAsync } from 'fastify';
import type { ApiKeyStore } from '../../auth/api-keys.js';
import { listOf, responses } from '../schemas.js';

const keySchema = {
  type: 'object',
  required: ['id', 'name', 'createdAt', 'revokedAt', 'lastUsedAt'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    createdAt: { type: 'integer' },
    revokedAt: { type: ['integer', 'null'] },
    lastUsedAt: { type: ['integer', 'null'] },
  },
} as const;

export const keysRoutes: FastifyPluginAsync<{ keys: ApiKeyStore }> = async (app, { keys }) => {
  app.get(
    '/api/v1/keys',
    { schema: { summary: 'List the API keys (ids and names, never secrets)', response: responses({ 200: listOf('keys', keySchema) }) } },
    async () => ({ keys: await keys.list() }),
  );
};
