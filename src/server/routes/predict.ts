// POST /v1/<model_id>/predict and /v1/<model_id>/<variation_name>/predict: the split-orient
// feature payload in, one object per row out, with X-Variation naming who answered.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError, invalidArgument, notFound, unavailable } from '../../errors.js';
import type { DeploymentStore } from '../../realtime/deployments.js';
import type { PredictMetrics } from '../../realtime/metrics.js';
import type { ModelStore } from '../../realtime/models.js';
import { outputsToRows } from '../../realtime/outputs.js';
import { payloadToInputs, type FeaturePayload } from '../../realtime/payload.js';
import type { LiveModel, RealtimeRegistry } from '../../realtime/registry.js';
import { chooseVariation } from '../../realtime/routing.js';
import { responses } from '../schemas.js';

export interface PredictRouteOptions {
  models: ModelStore;
  deployments: DeploymentStore;
  registry: RealtimeRegistry;
  metrics: PredictMetrics;
}

const payloadSchema = {
  type: 'object',
  required: ['columns', 'data'],
  properties: {
    columns: { type: 'array', minItems: 1, items: { type: 'string' } },
    index: { type: 'array', items: { type: 'integer' } },
    data: { type: 'array', items: { type: 'array' } },
  },
} as const;

const schema = (withVariation: boolean) => ({
  params: {
    type: 'object',
    required: withVariation ? ['model_id', 'variation_name'] : ['model_id'],
    properties: { model_id: { type: 'string', maxLength: 64 }, variation_name: { type: 'string', maxLength: 36 } },
  },
  body: payloadSchema,
  response: responses({ 200: { type: 'array', items: { type: 'object', additionalProperties: true } } }),
});

type PredictRequest = FastifyRequest<{ Params: { model_id: string; variation_name?: string }; Body: FeaturePayload }>;

export const predictRoutes: FastifyPluginAsync<PredictRouteOptions> = async (app, { models, deployments, registry, metrics }) => {
  // pandas' to_json(orient="split") clients send this media type.
  app.addContentTypeParser('application/json; format=pandas-split', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));

  const liveModel = (modelId: string): LiveModel => {
    const live = registry.get(modelId);
    if (live) return live;
    const model = models.find(modelId);
    if (!model) throw notFound(`model "${modelId}" does not exist`, 'model_id');
    if (model.kind !== 'realtime') throw invalidArgument(`model "${modelId}" is a library model; call /v1/${modelId}/chat/completions`, 'model_id');
    const pending = deployments.inProgress(modelId);
    if (pending) throw unavailable(`model "${modelId}" is not live yet: deployment ${pending.id} is ${pending.status}`);
    throw unavailable(`model "${modelId}" is not live: it has no live deployment`);
  };

  const predict = async (request: PredictRequest, reply: { header: (k: string, v: string) => unknown }) => {
    const modelId = request.params.model_id;
    const live = liveModel(modelId);
    const variation = request.params.variation_name ?? chooseVariation(live, request.headers);
    const build = live.variations.get(variation);
    if (!build) throw notFound(`model "${modelId}" has no variation "${variation}"`, 'variation_name');
    const started = process.hrtime.bigint();
    let status = 200;
    try {
      const { inputs, rows } = payloadToInputs(build.schema, request.body);
      const outputs = await build.predict(inputs, rows);
      reply.header('x-variation', variation);
      return outputsToRows(build.schema, outputs, rows);
    } catch (err) {
      status = err instanceof ApiError ? err.status : 500;
      throw err;
    } finally {
      metrics.requests.inc({ model: modelId, variation, status: String(status) });
      metrics.latency.observe({ model: modelId, variation }, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };

  app.post('/v1/:model_id/predict', { schema: schema(false) }, (request, reply) => predict(request as PredictRequest, reply));
  app.post('/v1/:model_id/:variation_name/predict', { schema: schema(true) }, (request, reply) => predict(request as PredictRequest, reply));
};
