// POST /v1/<model_id>/predict and /v1/<model_id>/<variation_name>/predict: the split-orient
// feature payload in, one object per row out, with X-Variation naming who answered. Routing,
// shadows, metrics and the request log are the predict service's (src/realtime/predict.ts).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FeaturePayload } from '../../realtime/payload.js';
import type { PredictService } from '../../realtime/predict.js';
import { responses } from '../schemas.js';
import { boundedJsonParser } from '../json-body.js';

const payloadSchema = {
  type: 'object',
  required: ['columns', 'data'],
  properties: {
    columns: { type: 'array', minItems: 1, items: { type: 'string' } },
    index: { type: 'array', items: { type: 'integer' } },
    data: { type: 'array', items: { type: 'array' } },
  },
} as const;

// Free-form by design: each row's keys are the model's own output names, so only the values are
// typed (a scalar, a [K] output's array, or a classifier's label -> probability map).
const cell = { type: ['number', 'string', 'null'] } as const;
// The array and object branches come first: fast-json-stringify's string branch also takes arrays.
const rowsSchema = { type: 'array', items: { type: 'object', additionalProperties: { type: ['array', 'object', 'number', 'string', 'null'], items: cell, additionalProperties: cell } } } as const;

// pandas' to_json(orient="split") clients send this media type; the body is the same JSON.
const PANDAS_SPLIT = 'application/json; format=pandas-split';

const schema = (withVariation: boolean) => ({
  summary: withVariation
    ? 'Predict with one variation, bypassing the traffic split'
    : 'Predict: feature rows in (pandas split orient), one object per row out; X-Variation names who answered',
  consumes: ['application/json', PANDAS_SPLIT],
  params: {
    type: 'object',
    required: withVariation ? ['model_id', 'variation_name'] : ['model_id'],
    properties: { model_id: { type: 'string', maxLength: 64 }, variation_name: { type: 'string', maxLength: 36 } },
  },
  body: payloadSchema,
  response: responses({ 200: rowsSchema }),
});

type PredictRequest = FastifyRequest<{ Params: { model_id: string; variation_name?: string }; Body: FeaturePayload }>;

export const predictRoutes: FastifyPluginAsync<{ predict: PredictService }> = async (app, { predict }) => {
  app.addContentTypeParser(PANDAS_SPLIT, { parseAs: 'string' }, boundedJsonParser(app));

  const handler = async (request: PredictRequest, reply: FastifyReply) => {
    const { model_id, variation_name } = request.params;
    const answer = await predict.predict({ modelId: model_id, variation: variation_name, headers: request.headers, body: request.body, requestId: request.id, log: request.log });
    reply.header('x-variation', answer.variation);
    return answer.rows;
  };
  // Inference on the model of the URL (src/server/access.ts).
  const config = { access: { action: 'infer', model: (request: FastifyRequest) => (request.params as { model_id: string }).model_id } } as const;
  app.post('/v1/:model_id/predict', { schema: schema(false), config }, (request, reply) => handler(request as PredictRequest, reply));
  app.post('/v1/:model_id/:variation_name/predict', { schema: schema(true), config }, (request, reply) => handler(request as PredictRequest, reply));
};
