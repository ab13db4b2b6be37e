// POST /v1/<model_id>/predict and /v1/<model_id>/<variation_name>/predict: the split-orient
// feature payload in, one object per row out, with X-Variation naming who answered. Routing
// picks the variation by audience and weight; a drawn shadow gets a copy after the answer.
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalidArgument, notFound, unavailable } from '../../errors.js';
import type { AudienceStore } from '../../realtime/audiences.js';
import type { DeploymentStore } from '../../realtime/deployments.js';
import type { LoadedBuild } from '../../realtime/loaded-build.js';
import type { PredictMetrics } from '../../realtime/metrics.js';
import type { ModelStore } from '../../realtime/models.js';
import { outputsToRows } from '../../realtime/outputs.js';
import { payloadToInputs, type FeaturePayload } from '../../realtime/payload.js';
import type { LiveModel, RealtimeRegistry } from '../../realtime/registry.js';
import { logBody, type RequestLog } from '../../realtime/request-log.js';
import { chooseRoute } from '../../realtime/routing.js';
import type { ShadowDispatcher } from '../../realtime/shadow.js';
import { responses } from '../schemas.js';

export interface PredictRouteOptions {
  models: ModelStore;
  deployments: DeploymentStore;
  audiences: AudienceStore;
  registry: RealtimeRegistry;
  metrics: PredictMetrics;
  requestLog: RequestLog;
  shadows: ShadowDispatcher;
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

const elapsedMs = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e6;

/** Runs a payload through one build: the same path for the primary and for shadow copies. */
async function run(build: LoadedBuild, body: FeaturePayload) {
  const { inputs, rows } = payloadToInputs(build.schema, body);
  const outputs = await build.predict(inputs, rows);
  return outputsToRows(build.schema, outputs, rows);
}

export const predictRoutes: FastifyPluginAsync<PredictRouteOptions> = async (app, opts) => {
  const { models, deployments, audiences, registry, metrics, requestLog, shadows } = opts;

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
    throw unavailable(`model "${modelId}" is not live: no variation is deployed`);
  };

  const sendShadow = (log: FastifyBaseLogger, request: PredictRequest, live: LiveModel, variation: string, audienceId: string | null) => {
    const build = live.variations.get(variation);
    if (!build) return;
    const modelId = request.params.model_id;
    const body = request.body;
    shadows.submit(async (deadline) => {
      const started = process.hrtime.bigint();
      let status = 200;
      let response: unknown = null;
      let error: string | null = null;
      try {
        response = await Promise.race([run(build, body), deadline]);
      } catch (err) {
        status = err instanceof ApiError ? err.status : 500;
        error = err instanceof Error ? err.message : String(err);
      }
      const latencyMs = elapsedMs(started);
      metrics.requests.inc({ model: modelId, variation, status: String(status) });
      requestLog.add({
        ts: Date.now(),
        requestId: request.id,
        modelId,
        variation,
        audienceId,
        shadow: true,
        status,
        latencyMs,
        error,
        request: logBody(body),
        response: response === null ? null : logBody(response),
      });
      if (error) log.debug({ modelId, variation, error }, 'shadow request failed');
    });
  };

  const predict = async (request: PredictRequest, reply: FastifyReply) => {
    const started = process.hrtime.bigint();
    const modelId = request.params.model_id;
    const live = liveModel(modelId);
    let variation: string;
    let audienceId: string | null = null;
    let shadow: string | null = null;
    if (request.params.variation_name !== undefined) {
      variation = request.params.variation_name;
    } else {
      const choice = chooseRoute(live.traffic, request.headers, (id) => audiences.predicate(id));
      if (!choice) throw unavailable(`model "${modelId}" has no variation to route to`);
      ({ variation, audienceId, shadow } = choice);
    }
    const build = live.variations.get(variation);
    if (!build) throw notFound(`model "${modelId}" has no variation "${variation}"`, 'variation_name');

    let status = 200;
    let result: unknown = null;
    let error: string | null = null;
    try {
      result = await run(build, request.body);
      reply.header('x-variation', variation);
      return result;
    } catch (err) {
      status = err instanceof ApiError ? err.status : 500;
      error = err instanceof Error ? err.message : String(err);
      throw err;
    } finally {
      const latencyMs = elapsedMs(started);
      metrics.requests.inc({ model: modelId, variation, status: String(status) });
      metrics.latency.observe({ model: modelId, variation }, latencyMs / 1000);
      requestLog.add({
        ts: Date.now(),
        requestId: request.id,
        modelId,
        variation,
        audienceId,
        shadow: false,
        status,
        latencyMs,
        error,
        // Bodies are kept for shadow pairs, so that the two answers can be compared.
        request: shadow ? logBody(request.body) : null,
        response: shadow && result !== null ? logBody(result) : null,
      });
      if (shadow && status === 200) sendShadow(request.log, request, live, shadow, audienceId);
    }
  };

  app.post('/v1/:model_id/predict', { schema: schema(false) }, (request, reply) => predict(request as PredictRequest, reply));
  app.post('/v1/:model_id/:variation_name/predict', { schema: schema(true) }, (request, reply) => predict(request as PredictRequest, reply));
};
