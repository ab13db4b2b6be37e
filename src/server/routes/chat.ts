// The OpenAI-compatible routes of a library model (DESIGN.md section 3): chat completions and
// legacy completions, each as one JSON answer or as Server-Sent Events; /models for clients that
// probe it; tokenize and detokenize. The answers are made by src/llm/chat/serve.ts; a client that
// disconnects from a stream cancels its generation at once (sse.ts).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { invalidArgument } from '../../errors.js';
import { chatMessages, samplingParams, type SamplingParams } from '../../llm/chat/params.js';
import { ChatForm, TextForm, startAnswer, type CompletionForm } from '../../llm/chat/serve.js';
import type { LibraryService } from '../../llm/library/service.js';
import type { LlmMetrics } from '../../llm/metrics.js';
import { modelParams, responses } from '../schemas.js';
import { streamEvents } from '../sse.js';

export interface ChatRouteOptions {
  library: LibraryService;
  metrics: LlmMetrics;
}

type Body = Record<string, unknown>;
type ModelRequest = FastifyRequest<{ Params: { model_id: string }; Body: Body }>;

const usageSchema = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  properties: { prompt_tokens: { type: 'integer' }, completion_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
} as const;

/** A whole (non-streamed) answer; a streamed one bypasses serialization (sse.ts), so no schema covers its chunks. */
const answerSchema = (choice: { required: readonly string[]; properties: object }) =>
  ({
    type: 'object',
    required: ['id', 'object', 'created', 'model', 'choices', 'usage'],
    properties: {
      id: { type: 'string' },
      object: { type: 'string' },
      created: { type: 'integer' },
      model: { type: 'string' },
      choices: { type: 'array', items: { type: 'object', ...choice } },
      usage: usageSchema,
    },
  }) as const;

const chatAnswerSchema = answerSchema({
  required: ['index', 'message', 'logprobs', 'finish_reason'],
  properties: {
    index: { type: 'integer' },
    message: { type: 'object', required: ['role', 'content'], properties: { role: { type: 'string' }, content: { type: 'string' } } },
    logprobs: { type: 'null' },
    finish_reason: { type: 'string' },
  },
});

const textAnswerSchema = answerSchema({
  required: ['index', 'text', 'logprobs', 'finish_reason'],
  properties: { index: { type: 'integer' }, text: { type: 'string' }, logprobs: { type: 'null' }, finish_reason: { type: 'string' } },
});

const modelListSchema = {
  type: 'object',
  required: ['object', 'data'],
  properties: {
    object: { type: 'string' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'object', 'created', 'owned_by'],
        properties: { id: { type: 'string' }, object: { type: 'string' }, created: { type: 'integer' }, owned_by: { type: 'string' } },
      },
    },
  },
} as const;

function checkModelField(request: ModelRequest): void {
  const model = request.body.model;
  if (typeof model !== 'string') throw invalidArgument('model is required: set it to the model id of the URL', 'model');
  if (model !== request.params.model_id) {
    throw invalidArgument(`the model in the body ("${model}") is not the model in the URL ("${request.params.model_id}")`, 'model');
  }
}

export const chatRoutes: FastifyPluginAsync<ChatRouteOptions> = async (app, { library, metrics }) => {
  /** Answers with one JSON object, or as Server-Sent Events when the request asks to stream. */
  const answer = (request: ModelRequest, reply: FastifyReply, form: CompletionForm, params: SamplingParams) => {
    const started = startAnswer(library, metrics, request.params.model_id, form, params);
    if (!params.stream) return started.whole();
    return streamEvents(request, reply, started.chunks(), () => started.cancel());
  };

  app.post<{ Params: { model_id: string }; Body: Body }>(
    '/v1/:model_id/chat/completions',
    {
      schema: {
        params: modelParams,
        body: { type: 'object', required: ['messages'], properties: { model: { type: 'string', maxLength: 256 }, messages: { type: 'array' } } },
        response: responses({ 200: chatAnswerSchema }),
      },
    },
    async (request, reply) => {
      checkModelField(request);
      const messages = chatMessages(request.body.messages);
      return answer(request, reply, new ChatForm(messages), samplingParams(request.body));
    },
  );

  app.post<{ Params: { model_id: string }; Body: Body }>(
    '/v1/:model_id/completions',
    {
      schema: {
        params: modelParams,
        body: { type: 'object', required: ['prompt'], properties: { model: { type: 'string', maxLength: 256 } } },
        response: responses({ 200: textAnswerSchema }),
      },
    },
    async (request, reply) => {
      checkModelField(request);
      const prompt = request.body.prompt;
      if (typeof prompt !== 'string') throw invalidArgument('prompt must be a string', 'prompt');
      return answer(request, reply, new TextForm(prompt), samplingParams(request.body));
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/v1/:model_id/models',
    { schema: { params: modelParams, response: responses({ 200: modelListSchema }) } },
    async (request) => {
      const dep = library.get(request.params.model_id);
      return { object: 'list', data: [{ id: dep.modelId, object: 'model', created: Math.floor(dep.createdAt / 1000), owned_by: 'platform' }] };
    },
  );

  app.post<{ Params: { model_id: string }; Body: { text: string; add_special?: boolean; parse_special?: boolean } }>(
    '/api/v1/models/:model_id/tokenize',
    {
      schema: {
        params: modelParams,
        body: { type: 'object', required: ['text'], properties: { text: { type: 'string', maxLength: 10_000_000 }, add_special: { type: 'boolean' }, parse_special: { type: 'boolean' } } },
        response: responses({ 200: { type: 'object', required: ['tokens'], properties: { tokens: { type: 'array', items: { type: 'integer' } } } } }),
      },
    },
    async (request) => {
      const { tokenizer } = library.instance(request.params.model_id);
      return { tokens: tokenizer.encode(request.body.text, { addSpecial: request.body.add_special ?? true, parseSpecial: request.body.parse_special ?? false }) };
    },
  );

  app.post<{ Params: { model_id: string }; Body: { tokens: number[] } }>(
    '/api/v1/models/:model_id/detokenize',
    {
      schema: {
        params: modelParams,
        body: { type: 'object', required: ['tokens'], properties: { tokens: { type: 'array', maxItems: 1_000_000, items: { type: 'integer', minimum: 0 } } } },
        response: responses({ 200: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } } }),
      },
    },
    async (request) => {
      const { tokenizer } = library.instance(request.params.model_id);
      const bad = request.body.tokens.findIndex((t) => t >= tokenizer.vocabSize);
      if (bad !== -1) throw invalidArgument(`tokens[${bad}] is ${request.body.tokens[bad]}, beyond the vocabulary of ${tokenizer.vocabSize}`, `tokens[${bad}]`);
      return { text: tokenizer.decode(request.body.tokens) };
    },
  );
};
