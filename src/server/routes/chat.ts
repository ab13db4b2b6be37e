// The OpenAI-compatible routes of one library model (DESIGN.md section 3), at its base URL
// /v1/<model_id>: chat completions and legacy completions, each as one JSON answer or as Server-Sent
// Events; /models for clients that probe it; and tokenize and detokenize. The root surface (/v1/...,
// the model in the body) is openai-root.ts; both answer through openai-answers.ts.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { invalidArgument } from '../../errors.js';
import type { LibraryForwarder } from '../forward.js';
import type { LibraryService } from '../../llm/library/service.js';
import type { LlmMetrics } from '../../llm/metrics.js';
import { modelParams, responses } from '../schemas.js';
import { answerCompletion, chatAnswerSchema, chatBodySchema, chatForm, liveModelCard, modelListSchema, textAnswerSchema, textBodySchema, textForm, type OpenAiBody } from './openai-answers.js';

export interface ChatRouteOptions {
  library: LibraryService;
  metrics: LlmMetrics;
  /** Sends a request to the replica that should answer it (src/server/forward.ts). */
  forwarder?: LibraryForwarder;
}

/** The body's `model` must name the model of the URL, as a client sends both. */
function checkModelField(body: OpenAiBody, modelId: string): void {
  const model = body.model;
  if (typeof model !== 'string') throw invalidArgument('model is required: set it to the model id of the URL', 'model');
  if (model !== modelId) throw invalidArgument(`the model in the body ("${model}") is not the model in the URL ("${modelId}")`, 'model');
}

/** Inference on the model of the URL (src/server/access.ts). */
const INFER = { access: { action: 'infer', model: (request: FastifyRequest) => (request.params as { model_id: string }).model_id } } as const;

export const chatRoutes: FastifyPluginAsync<ChatRouteOptions> = async (app, services) => {
  const { library } = services;

  app.post<{ Params: { model_id: string }; Body: OpenAiBody }>(
    '/v1/:model_id/chat/completions',
    {
      config: INFER,
      schema: {
        summary: 'Chat completion on the model of the URL (JSON or SSE stream)',
        params: modelParams,
        body: chatBodySchema(false),
        response: responses({ 200: chatAnswerSchema }),
      },
    },
    async (request, reply) => {
      checkModelField(request.body, request.params.model_id);
      return answerCompletion(services, request, reply, request.params.model_id, chatForm(request.body));
    },
  );

  app.post<{ Params: { model_id: string }; Body: OpenAiBody }>(
    '/v1/:model_id/completions',
    {
      config: INFER,
      schema: {
        summary: 'Legacy text completion on the model of the URL (JSON or SSE stream)',
        params: modelParams,
        body: textBodySchema(false),
        response: responses({ 200: textAnswerSchema }),
      },
    },
    async (request, reply) => {
      checkModelField(request.body, request.params.model_id);
      return answerCompletion(services, request, reply, request.params.model_id, textForm(request.body));
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/v1/:model_id/models',
    {
      config: INFER,
      schema: {
        summary: 'List the model of the URL, in the OpenAI list form, once it is live (503 while it loads or after it failed)',
        params: modelParams,
        response: responses({ 200: modelListSchema }),
      },
    },
    // The same rule as GET /v1/models/<model>: only a live model is listed.
    async (request) => ({ object: 'list', data: [await liveModelCard(library, request.params.model_id, 'model_id')] }),
  );

  app.post<{ Params: { model_id: string }; Body: { text: string; add_special?: boolean; parse_special?: boolean } }>(
    '/api/v1/models/:model_id/tokenize',
    {
      config: INFER,
      schema: {
        summary: 'Text to the token ids of a library model',
        params: modelParams,
        body: { type: 'object', required: ['text'], properties: { text: { type: 'string', maxLength: 10_000_000 }, add_special: { type: 'boolean' }, parse_special: { type: 'boolean' } } },
        response: responses({ 200: { type: 'object', required: ['tokens'], properties: { tokens: { type: 'array', items: { type: 'integer' } } } } }),
      },
    },
    async (request) => {
      const { tokenizer } = await library.serving(request.params.model_id);
      return { tokens: tokenizer.encode(request.body.text, { addSpecial: request.body.add_special ?? true, parseSpecial: request.body.parse_special ?? false }) };
    },
  );

  app.post<{ Params: { model_id: string }; Body: { tokens: number[] } }>(
    '/api/v1/models/:model_id/detokenize',
    {
      config: INFER,
      schema: {
        summary: 'Token ids of a library model to text',
        params: modelParams,
        body: { type: 'object', required: ['tokens'], properties: { tokens: { type: 'array', maxItems: 1_000_000, items: { type: 'integer', minimum: 0 } } } },
        response: responses({ 200: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } } }),
      },
    },
    async (request) => {
      const { tokenizer } = await library.serving(request.params.model_id);
      const bad = request.body.tokens.findIndex((t) => t >= tokenizer.vocabSize);
      if (bad !== -1) throw invalidArgument(`tokens[${bad}] is ${request.body.tokens[bad]}, beyond the vocabulary of ${tokenizer.vocabSize}`, `tokens[${bad}]`);
      return { text: tokenizer.decode(request.body.tokens) };
    },
  );
};
