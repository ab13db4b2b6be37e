// The OpenAI-compatible routes of a library model (DESIGN.md section 3): chat completions and
// legacy completions, each as one JSON answer or as Server-Sent Events; /models for clients that
// probe it; tokenize and detokenize. A client that disconnects cancels its generation at once.
import crypto from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalidArgument } from '../../errors.js';
import { Completion, type CompletionResult } from '../../llm/chat/completion.js';
import { chatMessages, samplingParams, type SamplingParams } from '../../llm/chat/params.js';
import type { LibraryService } from '../../llm/library/service.js';
import type { LlmMetrics } from '../../llm/metrics.js';
import { responses } from '../schemas.js';

export interface ChatRouteOptions {
  library: LibraryService;
  metrics: LlmMetrics;
}

type Body = Record<string, unknown>;
type ModelRequest = FastifyRequest<{ Params: { model_id: string }; Body: Body }>;

const modelParams = { type: 'object', required: ['model_id'], properties: { model_id: { type: 'string', maxLength: 64 } } } as const;

const usageJson = (r: CompletionResult) => ({ prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens });

function checkModelField(request: ModelRequest): void {
  const model = request.body.model;
  if (typeof model !== 'string') throw invalidArgument('model is required: set it to the model id of the URL', 'model');
  if (model !== request.params.model_id) {
    throw invalidArgument(`the model in the body ("${model}") is not the model in the URL ("${request.params.model_id}")`, 'model');
  }
}

/** Writes an SSE stream by hand: Fastify's serializers do not apply to a hijacked reply. */
class EventStream {
  private closed = false;

  constructor(
    private readonly reply: FastifyReply,
    requestId: string,
    onDisconnect: () => void,
  ) {
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-request-id': requestId,
      // Proxies such as nginx must not buffer the stream.
      'x-accel-buffering': 'no',
    });
    reply.raw.on('close', () => {
      if (!this.closed) {
        this.closed = true;
        onDisconnect();
      }
    });
  }

  get open(): boolean {
    return !this.closed;
  }

  send(data: unknown): void {
    if (!this.closed) this.reply.raw.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  }

  end(): void {
    if (this.closed) return;
    this.send('[DONE]');
    this.closed = true;
    this.reply.raw.end();
  }
}

export const chatRoutes: FastifyPluginAsync<ChatRouteOptions> = async (app, { library, metrics }) => {
  /** Runs one completion and answers in the requested form; `shape` makes the OpenAI objects. */
  async function answer(
    request: ModelRequest,
    reply: FastifyReply,
    prompt: (instance: ReturnType<LibraryService['instance']>) => number[],
    params: SamplingParams,
    startOfText: boolean,
    shape: {
      object: string;
      chunkObject: string;
      idPrefix: string;
      whole: (text: string, finish: string) => Record<string, unknown>;
      delta: (text: string | null, finish: string | null, first: boolean) => Record<string, unknown>;
    },
  ) {
    const arrived = performance.now();
    const modelId = request.params.model_id;
    // No await between taking the instance and starting the generation: an instance switch
    // then never unloads a model under a request that has not reached the engine yet.
    const instance = library.instance(modelId);
    metrics.requestArrived(modelId);
    const completion = new Completion(instance, prompt(instance), params, arrived, startOfText);
    const id = `${shape.idPrefix}${crypto.randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const base = { id, created, model: modelId };

    if (!params.stream) {
      let text = '';
      const it = completion.text();
      let step = await it.next();
      while (!step.done) {
        text += step.value;
        step = await it.next();
      }
      metrics.requestFinished(modelId, step.value);
      return { ...base, object: shape.object, ...shape.whole(text, step.value.finishReason), usage: usageJson(step.value) };
    }

    const stream = new EventStream(reply, request.id, () => completion.cancel());
    try {
      stream.send({ ...base, object: shape.chunkObject, ...shape.delta('', null, true), ...(params.includeUsage ? { usage: null } : {}) });
      const it = completion.text();
      let step = await it.next();
      while (!step.done) {
        if (!stream.open) {
          await it.return(undefined as never);
          break;
        }
        stream.send({ ...base, object: shape.chunkObject, ...shape.delta(step.value, null, false), ...(params.includeUsage ? { usage: null } : {}) });
        step = await it.next();
      }
      if (step.done) {
        metrics.requestFinished(modelId, step.value);
        stream.send({ ...base, object: shape.chunkObject, ...shape.delta(null, step.value.finishReason, false), ...(params.includeUsage ? { usage: null } : {}) });
        if (params.includeUsage) stream.send({ ...base, object: shape.chunkObject, choices: [], usage: usageJson(step.value) });
      }
    } catch (err) {
      // The status line is gone: report the failure in the stream, in the error shape.
      const apiError = err instanceof ApiError ? err : new ApiError('internal', `generation failed; the server log has the details under request id ${request.id}`);
      if (!(err instanceof ApiError)) request.log.error({ err }, 'generation failed');
      stream.send(apiError.body());
    } finally {
      stream.end();
    }
    return reply;
  }

  app.post<{ Params: { model_id: string }; Body: Body }>(
    '/v1/:model_id/chat/completions',
    {
      schema: {
        params: modelParams,
        body: { type: 'object', required: ['messages'], properties: { model: { type: 'string', maxLength: 256 }, messages: { type: 'array' } } },
        response: responses({ 200: { type: 'object', additionalProperties: true } }),
      },
    },
    async (request, reply) => {
      checkModelField(request);
      const messages = chatMessages(request.body.messages);
      const params = samplingParams(request.body);
      return answer(request, reply, (instance) => instance.chatPrompt(instance.template.render(messages)), params, false, {
        object: 'chat.completion',
        chunkObject: 'chat.completion.chunk',
        idPrefix: 'chatcmpl-',
        whole: (text, finish) => ({ choices: [{ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }] }),
        delta: (text, finish, first) => ({
          choices: [{ index: 0, delta: first ? { role: 'assistant', content: '' } : text === null ? {} : { content: text }, logprobs: null, finish_reason: finish }],
        }),
      });
    },
  );

  app.post<{ Params: { model_id: string }; Body: Body }>(
    '/v1/:model_id/completions',
    {
      schema: {
        params: modelParams,
        body: { type: 'object', required: ['prompt'], properties: { model: { type: 'string', maxLength: 256 } } },
        response: responses({ 200: { type: 'object', additionalProperties: true } }),
      },
    },
    async (request, reply) => {
      checkModelField(request);
      const prompt = request.body.prompt;
      if (typeof prompt !== 'string') throw invalidArgument('prompt must be a string', 'prompt');
      const params = samplingParams(request.body);
      return answer(request, reply, (instance) => instance.textPrompt(prompt), params, prompt === '', {
        object: 'text_completion',
        chunkObject: 'text_completion',
        idPrefix: 'cmpl-',
        whole: (text, finish) => ({ choices: [{ index: 0, text, logprobs: null, finish_reason: finish }] }),
        delta: (text, finish) => ({ choices: [{ index: 0, text: text ?? '', logprobs: null, finish_reason: finish }] }),
      });
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/v1/:model_id/models',
    { schema: { params: modelParams, response: responses({ 200: { type: 'object', additionalProperties: true } }) } },
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
