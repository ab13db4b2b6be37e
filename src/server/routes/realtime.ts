// The realtime routes as one plugin: models, builds and deployments; audiences; predict.
import type { FastifyPluginAsync } from 'fastify';
import type { Realtime } from '../../realtime/service.js';
import { audienceRoutes } from './audiences.js';
import { modelRoutes } from './models.js';
import { predictRoutes } from './predict.js';

export const realtimeRoutes: FastifyPluginAsync<{ realtime: Realtime; maxBuildBytes: number; libraryMetrics: (modelId: string) => object }> = async (
  app,
  { realtime, maxBuildBytes, libraryMetrics },
) => {
  await app.register(modelRoutes, { realtime, maxBuildBytes, libraryMetrics });
  await app.register(audienceRoutes, { audiences: realtime.audiences });
  await app.register(predictRoutes, realtime);
};
