// The OpenAI root surface: base URL http://host/v1 with the model in the body's `model` field, as
// vLLM, Ollama and llama.cpp's server serve it and as Open WebUI, LangChain and the serving
// benchmarks call it. Beside the per-model surface (chat.ts), answered by the same code
// (openai-answers.ts). Fastify matches static segments before parameters, so /v1/chat/completions
// and /v1/models win over /v1/:model_id/...; the ids they would shadow are refused at model
// create (RESERVED_MODEL_IDS, src/models/names.ts). POST /v1/embeddings, the root form of the
// embeddings route, lives with its per-model form in embeddings.ts.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { projectVisible } from '../../auth/permissions.js';
import { LIBRARY_PROJECT } from '../../models/names.js';
import { grantOf } from '../access.js';
import type { LibraryForwarder } from '../forward.js';
import type { LibraryService } from '../../llm/library/service.js';
import type { LlmMetrics } from '../../llm/metrics.js';
import { responses } from '../schemas.js';
import {
  answerCompletion,
  chatAnswerSchema,
  chatBodySchema,
  chatForm,
  liveModelCard,
  modelCard,
  modelCardSchema,
  modelListSchema,
  textAnswerSchema,
  textBodySchema,
  textForm,
  type OpenAiBody,
} from './openai-answers.js';

export interface OpenAiRootRouteOptions {
  library: LibraryService;
  metrics: LlmMetrics;
  /** Sends a request to the replica that should answer it (src/server/forward.ts). */
  forwarder?: LibraryForwarder;
}

/** Inference on the model the body names (src/server/access.ts). */
const INFER_BODY_MODEL = {
  access: { action: 'infer', modelParam: 'model', model: (request: FastifyRequest) => (request.body as { model?: unknown }).model as string | undefined },
} as const;

export const openAiRootRoutes: FastifyPluginAsync<OpenAiRootRouteOptions> = async (app, services) => {
  const { library } = services;

  app.post<{ Body: OpenAiBody }>(
    '/v1/chat/completions',
    { config: INFER_BODY_MODEL, schema: { summary: 'Chat completion on the model named in the body (JSON or SSE stream)', body: chatBodySchema(true), response: responses({ 200: chatAnswerSchema }) } },
    async (request, reply) => {
      const modelId = request.body.model as string;
      await library.checkModel(modelId, 'model');
      return answerCompletion(services, request, reply, modelId, chatForm(request.body));
    },
  );

  app.post<{ Body: OpenAiBody }>(
    '/v1/completions',
    { config: INFER_BODY_MODEL, schema: { summary: 'Legacy text completion on the model named in the body (JSON or SSE stream)', body: textBodySchema(true), response: responses({ 200: textAnswerSchema }) } },
    async (request, reply) => {
      const modelId = request.body.model as string;
      await library.checkModel(modelId, 'model');
      return answerCompletion(services, request, reply, modelId, textForm(request.body));
    },
  );

  app.get(
    '/v1/models',
    {
      config: { access: { action: 'infer', inHandler: 'a key scoped to a project other than "library" lists none' } },
      schema: { summary: 'List every live library model, in the OpenAI list form', response: responses({ 200: modelListSchema }) },
    },
    async (request) => {
      if (!projectVisible(grantOf(request), LIBRARY_PROJECT)) return { object: 'list', data: [] };
      const live = new Set(library.liveInstances().map((l) => l.modelId));
      return { object: 'list', data: (await library.list()).filter((dep) => live.has(dep.modelId)).map(modelCard) };
    },
  );

  app.get<{ Params: { model: string } }>(
    '/v1/models/:model',
    {
      config: { access: { action: 'infer', modelParam: 'model', model: (request) => (request.params as { model: string }).model } },
      schema: {
        summary: 'One live library model, in the OpenAI model form (503 while it loads or after it failed)',
        params: { type: 'object', required: ['model'], properties: { model: { type: 'string', maxLength: 256 } } },
        response: responses({ 200: modelCardSchema }),
      },
    },
    async (request) => liveModelCard(library, request.params.model, 'model'),
  );
};
