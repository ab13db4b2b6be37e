// GET /api/v1/engine: what the native engine is on this host (SIMD level, threads, CUDA devices),
// so that an operator can check a deployment without a shell on the machine.
import type { FastifyPluginAsync } from 'fastify';
import { responses } from '../schemas.js';

export const engineRoutes: FastifyPluginAsync<{ engineInfo: () => object }> = async (app, { engineInfo }) => {
  app.get(
    '/api/v1/engine',
    { schema: { response: responses({ 200: { type: 'object', additionalProperties: true } }) } },
    async () => engineInfo(),
  );
};
