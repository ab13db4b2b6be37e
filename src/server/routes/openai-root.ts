// The OpenAI root surface: base URL http://host/v1 with the model in the body's `model` field, as
// vLLM, Ollama and llama.cpp's server serve it and as Open WebUI, LangChain and the serving
// benchmarks call it. Beside the per-model surface (chat.ts), answered by the same code
// (openai-answers.ts). Fastify matches static segments before parameters, so /v1/chat/completions
// and /v1/models win over /v1/:model_id/...; the ids they would shadow are refused at model
// create (RESERVED_MODEL_IDS, src/models/names.ts). POST /v1/embeddings waits for the engine's
// embeddings.
import type { FastifyPluginAsync } from 'fastify';
import { invalidArgument, notFound } from '../../errors.js';
import type { LibraryService } from '../../llm/library/service.js';
import type { LlmMetrics } from '../../llm/metrics.js';
import type { ModelStore } from '../../models/store.js';
import { responses } from '../schemas.js';
import { answerCompletion, chatAnswerSchema, chatBodySchema, chatForm, modelCard, modelCardSchema, modelListSchema, textAnswerSchema, textBodySchema, textForm, type OpenAiBody } from './openai-answers.js';

export interface OpenAiRootRouteOptions {
  library: LibraryService;
  metrics: LlmMetrics;
  /** Model records of both kinds, to tell a caller that names a realtime model where to send it. */
  models: ModelStore;
}

export const openAiRootRoutes: FastifyPluginAsync<OpenAiRootRouteOptions> = async (app, services) => {
  const { library, models } = services;

  /** `model` when it names a library deployment; a 404 (or a 400 for a realtime model) naming the field otherwise. */
  const deployedModel = (model: string): string => {
    if (library.find(model)) return model;
    if (models.find(model)?.kind === 'realtime') throw invalidArgument(`model "${model}" is a realtime model; call /v1/${model}/predict`, 'model');
    throw notFound(`model "${model}" does not exist; GET /v1/models lists the models served here`, 'model');
  };

  app.post<{ Body: OpenAiBody }>(
    '/v1/chat/completions',
    { schema: { summary: 'Chat completion on the model named in the body (JSON or SSE stream)', body: chatBodySchema(true), response: responses({ 200: chatAnswerSchema }) } },
    async (request, reply) => {
      const modelId = deployedModel(request.body.model as string);
      return answerCompletion(services, request, reply, modelId, chatForm(request.body));
    },
  );

  app.post<{ Body: OpenAiBody }>(
    '/v1/completions',
    { schema: { summary: 'Legacy text completion on the model named in the body (JSON or SSE stream)', body: textBodySchema(true), response: responses({ 200: textAnswerSchema }) } },
    async (request, reply) => {
      const modelId = deployedModel(request.body.model as string);
      return answerCompletion(services, request, reply, modelId, textForm(request.body));
    },
  );

  app.get(
    '/v1/models',
    { schema: { summary: 'List every live library model, in the OpenAI list form', response: responses({ 200: modelListSchema }) } },
    async () => {
      const live = new Set(library.liveInstances().map((l) => l.modelId));
      return { object: 'list', data: library.list().filter((dep) => live.has(dep.modelId)).map(modelCard) };
    },
  );

  app.get<{ Params: { model: string } }>(
    '/v1/models/:model',
    {
      schema: {
        summary: 'One live library model, in the OpenAI model form',
        params: { type: 'object', required: ['model'], properties: { model: { type: 'string', maxLength: 256 } } },
        response: responses({ 200: modelCardSchema }),
      },
    },
    async (request) => {
      const modelId = deployedModel(request.params.model);
      library.instance(modelId); // 503 while it loads or after it failed, as a completion would be
      return modelCard(library.get(modelId));
    },
  );
};
