// GET /api/v1/engine: what the native engine is on this host (SIMD level, threads, CUDA devices),
// so that an operator can check a deployment without a shell on the machine.
import type { FastifyPluginAsync } from 'fastify';
import type { EngineInfo } from '../../native/surface.js';
import { responses } from '../schemas.js';

/** EngineInfo of src/native/surface.ts, as native/addon/engine_info.cc builds it. */
const engineInfoSchema = {
  type: 'object',
  required: ['version', 'simd', 'threads', 'cuda'],
  properties: {
    version: { type: 'string' },
    simd: {
      type: 'object',
      required: ['detected', 'active', 'available'],
      // warning: only while PLATFORM_SIMD holds an unknown level.
      properties: { detected: { type: 'string' }, active: { type: 'string' }, available: { type: 'array', items: { type: 'string' } }, warning: { type: 'string' } },
    },
    threads: { type: 'integer' },
    cuda: {
      type: 'object',
      required: ['built', 'devices', 'error'],
      properties: {
        built: { type: 'boolean' },
        devices: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'totalMemory', 'computeCapability'],
            properties: { name: { type: 'string' }, totalMemory: { type: 'integer' }, computeCapability: { type: 'string' } },
          },
        },
        error: { type: ['string', 'null'] },
      },
    },
  },
} as const;

export const engineRoutes: FastifyPluginAsync<{ engineInfo: () => EngineInfo }> = async (app, { engineInfo }) => {
  app.get('/api/v1/engine', { config: { access: { action: 'read' } }, schema: { summary: 'The native engine: SIMD level, threads, CUDA devices', response: responses({ 200: engineInfoSchema }) } }, async () => engineInfo());
};
