// Liveness and readiness probes, without auth, for load balancers and orchestrators.
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors.js';
import { responses } from '../schemas.js';

export interface HealthOptions {
  /** False once shutdown has begun, so that balancers stop sending new work. */
  isReady: () => boolean;
  /** What this replica cannot serve yet (vector collections it is still catching up with); none when ready. */
  notReadyFor?: () => string[];
}

const statusBody = { type: 'object', required: ['status'], properties: { status: { type: 'string' } } } as const;

export const healthRoutes: FastifyPluginAsync<HealthOptions> = async (app, opts) => {
  app.get('/healthz', { schema: { summary: 'Liveness: the process answers', response: responses({ 200: statusBody }) } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { summary: 'Readiness: 503 while catching up and once shutdown has begun', response: responses({ 200: statusBody }) } }, async () => {
    if (!opts.isReady()) throw new ApiError('unavailable', 'the server is shutting down');
    const pending = opts.notReadyFor?.() ?? [];
    if (pending.length > 0) throw new ApiError('unavailable', `this replica is catching up with ${pending.join(', ')}`);
    return { status: 'ready' };
  });
};
