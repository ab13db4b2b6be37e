// The vector routes of a host whose control plane is on PostgreSQL (DATABASE_URL): each replica
// would hold its own vectors in its own DATA_DIR, and a search would answer from whichever replica
// the load balancer picked, so instead every vector route says plainly that the vector store is
// not available there yet. The vector store across replicas comes with its own change.
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors.js';
import { responses } from '../schemas.js';

export const VECTORS_ON_POSTGRES =
  'the vector store is not available when the host runs on PostgreSQL (DATABASE_URL): each replica would keep its own vectors; the vector store across replicas comes with its own release. Run the host without DATABASE_URL to use it';

export const vectorsElsewhereRoutes: FastifyPluginAsync = async (app) => {
  app.all(
    '/api/v1/vectors/*',
    { schema: { summary: 'The vector store, not available on a PostgreSQL deployment', response: responses({}) } },
    async () => {
      throw new ApiError('unavailable', VECTORS_ON_POSTGRES);
    },
  );
};
