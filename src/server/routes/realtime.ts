// The realtime routes as one plugin: models, builds and deployments; audiences; predict.
import type { FastifyPluginAsync } from 'fastify';
import { audienceRoutes } from './audiences.js';
import { modelRoutes, type ModelRouteOptions } from './models.js';
import { predictRoutes } from './predict.js';

export const realtimeRoutes: FastifyPluginAsync<ModelRouteOptions> = async (app, { realtime, maxBuildBytes, libraryWindow, cluster, replicas }) => {
  await app.register(modelRoutes, { realtime, maxBuildBytes, libraryWindow, cluster, replicas });
  await app.register(audienceRoutes, { audiences: realtime.audiences });
  await app.register(predictRoutes, { predict: realtime.predict });
};
