// What the two OpenAI surfaces of library models share: the per-model routes (chat.ts,
// /v1/<model_id>/...) and the root routes (openai-root.ts, /v1/..., the model in the body). The
// body and answer schemas, reading a request body into a completion form, and answering it whole
// or as Server-Sent Events through src/llm/chat/serve.ts, so both surfaces serve, meter and cancel
// a request the same way.
// @fastify/swagger declares the OpenAPI fields of a route schema (`summary`) that these routes set.
import type {} from '@fastify/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidArgument } from '../../errors.js';
import { chatMessages, samplingParams } from '../../llm/chat/params.js';
import { ChatForm, TextForm, startAnswer, type CompletionForm } from '../../llm/chat/serve.js';
import { responseFormat } from '../../llm/chat/response-format.js';
import { parseParallelToolCalls, parseToolChoice, parseTools } from '../../llm/chat/tool-params.js';
import type { LibraryDeployment, LibraryService } from '../../llm/library/service.js';
import type { LibraryForwarder } from '../forward.js';
import type { LlmMetrics } from '../../llm/metrics.js';
import { streamEvents } from '../sse.js';

export type OpenAiBody = Record<string, unknown>;

const modelField = { type: 'string', minLength: 1, maxLength: 256 } as const;

/** Request bodies: on the root routes `model` is required, since it picks the model. */
export const chatBodySchema = (modelRequired: boolean) =>
  ({ type: 'object', required: modelRequired ? ['model', 'messages'] : ['messages'], properties: { model: modelField, messages: { type: 'array' } } }) as const;
export const textBodySchema = (modelRequired: boolean) =>
  ({ type: 'object', required: modelRequired ? ['model', 'prompt'] : ['prompt'], properties: { model: modelField } }) as const;

const usageSchema = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  properties: {
    prompt_tokens: { type: 'integer' },
    completion_tokens: { type: 'integer' },
    total_tokens: { type: 'integer' },
    prompt_tokens_details: { type: 'object', properties: { cached_tokens: { type: 'integer' } } },
  },
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

export const chatAnswerSchema = answerSchema({
  required: ['index', 'message', 'logprobs', 'finish_reason'],
  properties: {
    index: { type: 'integer' },
    message: {
      type: 'object',
      required: ['role', 'content'],
      properties: {
        role: { type: 'string' },
        content: { type: ['string', 'null'] },
        tool_calls: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'type', 'function'],
            properties: {
              id: { type: 'string' },
              type: { type: 'string' },
              function: { type: 'object', required: ['name', 'arguments'], properties: { name: { type: 'string' }, arguments: { type: 'string' } } },
            },
          },
        },
      },
    },
    logprobs: {
      type: ['object', 'null'],
      properties: {
        content: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              token: { type: 'string' },
              logprob: { type: 'number' },
              bytes: { type: 'array', items: { type: 'integer' } },
              top_logprobs: {
                type: 'array',
                items: { type: 'object', properties: { token: { type: 'string' }, logprob: { type: 'number' }, bytes: { type: 'array', items: { type: 'integer' } } } },
              },
            },
          },
        },
      },
    },
    finish_reason: { type: 'string' },
  },
});

export const textAnswerSchema = answerSchema({
  required: ['index', 'text', 'logprobs', 'finish_reason'],
  properties: {
    index: { type: 'integer' },
    text: { type: 'string' },
    logprobs: {
      type: ['object', 'null'],
      properties: {
        tokens: { type: 'array', items: { type: 'string' } },
        token_logprobs: { type: 'array', items: { type: 'number' } },
        top_logprobs: { type: 'array', items: { type: 'object', additionalProperties: { type: 'number' } } },
        text_offset: { type: 'array', items: { type: 'integer' } },
      },
    },
    finish_reason: { type: 'string' },
  },
});

export const modelCardSchema = {
  type: 'object',
  required: ['id', 'object', 'created', 'owned_by'],
  properties: { id: { type: 'string' }, object: { type: 'string' }, created: { type: 'integer' }, owned_by: { type: 'string' } },
} as const;

export const modelListSchema = {
  type: 'object',
  required: ['object', 'data'],
  properties: { object: { type: 'string' }, data: { type: 'array', items: modelCardSchema } },
} as const;

/** A library model in the OpenAI model-object form. */
export const modelCard = (dep: LibraryDeployment) => ({ id: dep.modelId, object: 'model', created: Math.floor(dep.createdAt / 1000), owned_by: 'platform' });

/**
 * A library model's card, for the routes that show one model: only a live model has one; any other
 * gets the answer a completion on it would get (404 unknown, 400 realtime, 503 loading or FAILED).
 */
export async function liveModelCard(library: LibraryService, modelId: string, param: string) {
  await library.serving(modelId, param);
  return modelCard(await library.get(modelId));
}

/** The chat form of a body: its `messages`, checked. */
export function chatForm(body: OpenAiBody): CompletionForm {
  const messages = chatMessages(body.messages);
  const format = responseFormat(body.response_format);
  const tools = parseTools(body.tools);
  const choice = parseToolChoice(body.tool_choice, tools);
  const parallel = parseParallelToolCalls(body.parallel_tool_calls);
  if (choice === 'none') return new ChatForm(messages, format);
  // One grammar per generation: a tool call's or the response format's, not both.
  if (format.type !== 'text') throw invalidArgument('response_format cannot be combined with tools unless tool_choice is "none"', 'response_format');
  return new ChatForm(messages, format, { tools, choice, parallel });
}

/** The legacy completion form of a body: its `prompt`, a string. */
export function textForm(body: OpenAiBody): CompletionForm {
  if (typeof body.prompt !== 'string') throw invalidArgument('prompt must be a string', 'prompt');
  return new TextForm(body.prompt, responseFormat(body.response_format));
}

/**
 * Starts the completion of `form` on `modelId` and answers with one JSON object, or as Server-Sent
 * Events when the body asks to stream; a client that disconnects cancels the generation.
 */
export async function answerCompletion(
  services: { library: LibraryService; metrics: LlmMetrics; forwarder?: LibraryForwarder | undefined },
  request: FastifyRequest<{ Body: OpenAiBody }>,
  reply: FastifyReply,
  modelId: string,
  form: CompletionForm,
) {
  // Prefix caching: two API keys never share cached prompt blocks; cache_salt separates further.
  const body = samplingParams(request.body);
  const params = { ...body, cacheSalt: `${request.apiKeyId ?? ''}\u0000${body.cacheSalt}` };
  // Another replica answers when the model runs there only, or the caller's session hashes there.
  if (await services.forwarder?.forwardIfElsewhere(request, reply, modelId)) return reply;
  // Why a model is not live here (404, 400, 503) comes from the database; a live one only from
  // memory. startAnswer then takes the live instance with no await before the generation starts.
  await services.library.serving(modelId);
  if (services.library.instance(modelId).embedder) {
    throw invalidArgument(`model "${modelId}" is an embedding model: use POST /v1/${modelId}/embeddings (or POST /v1/embeddings), not chat or completions`, 'model');
  }
  const started = await startAnswer(services.library, services.metrics, modelId, form, params);
  if (!params.stream) return started.whole();
  return streamEvents(request, reply, started.chunks(), () => started.cancel());
}
