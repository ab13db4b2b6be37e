// Embeddings in the OpenAI form, from library models of a BERT-family GGUF (bert, nomic-bert):
// `POST /v1/<model_id>/embeddings` (the body's `model` must name the URL's model, as on the chat
// routes) and the root `POST /v1/embeddings` (the model from the body).
//
// - `input`: a string, an array of strings, an array of token ids (one input) or an array of
//   token-id arrays; at most 2048 inputs. Strings are tokenized with the model's WordPiece
//   tokenizer, [CLS] ... [SEP] added; token ids are used as given.
// - `encoding_format`: `float` (default) or `base64` (little-endian float32 bytes).
// - `dimensions`: the model's width, or fewer where the model was trained for truncation
//   (Matryoshka: nomic-bert); then the vector is cut and scaled back to unit length.
// - The vectors are pooled as the GGUF's pooling_type says and L2-normalized.
// - A chat model (any decoder architecture) embeds by last-token pooling (LlmModel.embed): the last
//   position's hidden state after the output norm, normalized, as decoder embedding models
//   (e5-mistral, gte-Qwen2) are trained to be used; each input is one request to its scheduler.
// An embedding model answers 400 on the chat routes (openai-answers.ts).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { invalidArgument } from '../../errors.js';
import { engineError } from '../../llm/chat/completion.js';
import { allowsShorterDimensions, truncateEmbedding, type Embedder } from '../../llm/embed/index.js';
import type { LibraryService } from '../../llm/library/service.js';
import type { LlmMetrics } from '../../llm/metrics.js';
import type { LibraryForwarder } from '../forward.js';
import { modelParams, responses } from '../schemas.js';

export interface EmbeddingsRouteOptions {
  library: LibraryService;
  metrics: LlmMetrics;
  forwarder?: LibraryForwarder;
}

type EmbeddingsBody = Record<string, unknown>;

/** The most inputs one request may carry (OpenAI's limit). */
export const MAX_EMBEDDING_INPUTS = 2048;
/** Tokens per native call: a long request is embedded in batches of about this many tokens. */
const BATCH_TOKENS = 8192;
/** A chat model's inputs in its scheduler at once (each is a prompt-only request). */
const DECODER_CONCURRENCY = 8;
/** Characters tokenized between two yields to the event loop. */
const TOKENIZE_SLICE = 32_768;

const modelField = { type: 'string', minLength: 1, maxLength: 256 } as const;

export const embeddingsBodySchema = (modelRequired: boolean) =>
  ({
    type: 'object',
    required: modelRequired ? ['model', 'input'] : ['input'],
    properties: {
      model: modelField,
      input: { type: ['string', 'array'] },
      encoding_format: { type: 'string' },
      dimensions: { type: ['integer', 'string'] },
      user: { type: 'string' },
    },
  }) as const;

export const embeddingsAnswerSchema = {
  type: 'object',
  required: ['object', 'data', 'model', 'usage'],
  properties: {
    object: { type: 'string' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['object', 'index', 'embedding'],
        // embedding: an array of numbers, or a base64 string (encoding_format)
        properties: { object: { type: 'string' }, index: { type: 'integer' }, embedding: {} },
      },
    },
    model: { type: 'string' },
    usage: {
      type: 'object',
      required: ['prompt_tokens', 'total_tokens'],
      properties: { prompt_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
    },
  },
} as const;

/** `input` as a list of strings or token-id lists, each checked (a 400 naming input[i][j]). */
function parseInput(input: unknown, vocabSize: number): Array<string | number[]> {
  if (typeof input === 'string') {
    if (input.length === 0) throw invalidArgument('input must not be an empty string', 'input');
    return [input];
  }
  if (!Array.isArray(input)) throw invalidArgument('input must be a string, an array of strings, or an array of token ids', 'input');
  if (input.length === 0) throw invalidArgument('input must not be an empty array', 'input');
  const tokenList = (ids: unknown[], path: string): number[] => {
    if (ids.length === 0) throw invalidArgument(`${path} must not be an empty array of token ids`, 'input');
    return ids.map((id, j) => {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabSize) {
        throw invalidArgument(`${path}[${j}] = ${JSON.stringify(id)} is not a token id of this model (integers 0 to ${vocabSize - 1})`, 'input');
      }
      return id;
    });
  };
  // An array of numbers is one input of token ids, as OpenAI reads it.
  if (input.every((x) => typeof x === 'number')) return [tokenList(input, 'input')];
  if (input.length > MAX_EMBEDDING_INPUTS) throw invalidArgument(`input has ${input.length} items; at most ${MAX_EMBEDDING_INPUTS} per request`, 'input');
  return input.map((x, i) => {
    if (typeof x === 'string') {
      if (x.length === 0) throw invalidArgument(`input[${i}] must not be an empty string`, 'input');
      return x;
    }
    if (Array.isArray(x)) return tokenList(x, `input[${i}]`);
    throw invalidArgument(`input[${i}] must be a string or an array of token ids, got ${x === null ? 'null' : typeof x}`, 'input');
  });
}

function parseEncoding(value: unknown): 'float' | 'base64' {
  if (value === undefined || value === null || value === 'float') return 'float';
  if (value === 'base64') return 'base64';
  throw invalidArgument(`encoding_format must be "float" or "base64", got ${JSON.stringify(value)}`, 'encoding_format');
}

function parseDimensions(value: unknown, modelId: string, architecture: string, width: number): number {
  if (value === undefined || value === null) return width;
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw invalidArgument(`dimensions must be a positive integer, got ${JSON.stringify(value)}`, 'dimensions');
  if (n > width) throw invalidArgument(`dimensions is ${n}, more than model "${modelId}" gives (${width})`, 'dimensions');
  if (n < width && !allowsShorterDimensions(architecture)) {
    throw invalidArgument(
      `dimensions: model "${modelId}" (${architecture}) gives only its full ${width} dimensions; fewer are served only for models trained for truncation (nomic-bert)`,
      'dimensions',
    );
  }
  return n;
}

function base64Of(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

/** Answers one embeddings request on `modelId`. */
export async function answerEmbeddings(services: EmbeddingsRouteOptions, request: FastifyRequest<{ Body: EmbeddingsBody }>, reply: FastifyReply, modelId: string) {
  if (await services.forwarder?.forwardIfElsewhere(request, reply, modelId)) return reply;
  await services.library.serving(modelId);
  const instance = services.library.instance(modelId);
  const embedder = instance.embedder;
  services.metrics.requestArrived(modelId);
  const body = request.body;
  const { embeddingLength: width, contextLength, vocabSize, architecture } = embedder ? embedder.info : instance.info;
  const inputs = parseInput(body.input, vocabSize);
  const encoding = parseEncoding(body.encoding_format);
  const dimensions = parseDimensions(body.dimensions, modelId, architecture, width);
  // A list names its item (input[i]); a single string or token-id array is `input` itself.
  const listed = Array.isArray(body.input) && !body.input.every((x) => typeof x === 'number');
  // Tokenizing runs on the event loop (about 1 us a token): it yields every TOKENIZE_SLICE
  // characters so that 2048 long texts do not hold other requests up.
  const tokens: number[][] = [];
  let sinceYield = 0;
  for (const [i, x] of inputs.entries()) {
    const ids = typeof x === 'string' ? instance.tokenizer.encode(x, { addSpecial: true, parseSpecial: false }) : x;
    if (ids.length > contextLength) {
      throw invalidArgument(`input${listed ? `[${i}]` : ''} is ${ids.length} tokens, more than model "${modelId}" takes (${contextLength})`, 'input');
    }
    tokens.push(ids);
    sinceYield += typeof x === 'string' ? x.length : 0;
    if (sinceYield >= TOKENIZE_SLICE) {
      sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  const vectors = embedder ? await encode(services, modelId, embedder, tokens) : await lastTokens(services, modelId, tokens, reply);
  const promptTokens = tokens.reduce((s, t) => s + t.length, 0);
  return {
    object: 'list',
    data: vectors.map((v, index) => {
      const cut = truncateEmbedding(v, dimensions);
      return { object: 'embedding', index, embedding: encoding === 'base64' ? base64Of(cut) : Array.from(cut) };
    }),
    model: modelId,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}

/** An embedding model's vectors: batches of about BATCH_TOKENS tokens, one native call each, all tokens through the matmuls together. */
async function encode(services: EmbeddingsRouteOptions, modelId: string, embedder: Embedder, tokens: number[][]): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  for (let i = 0; i < tokens.length; ) {
    let j = i, n = 0;
    while (j < tokens.length && (j === i || n + tokens[j]!.length <= BATCH_TOKENS)) n += tokens[j++]!.length;
    // The live instance of each batch: a switch of instance type meanwhile retires the old one
    // once nothing runs on it, so every batch starts on the current one (same file, same tokens).
    const live = services.library.instance(modelId).embedder ?? embedder;
    vectors.push(...(await live.embed(tokens.slice(i, j))));
    i = j;
  }
  return vectors;
}

/**
 * A chat model's vectors by last-token pooling: DECODER_CONCURRENCY inputs in its scheduler at a
 * time, on the live instance. The first failure, or the client going away, cancels the inputs in
 * the scheduler and submits no more; engine errors become HTTP ones (a full queue 429, naming
 * `input` for one too long).
 */
async function lastTokens(services: EmbeddingsRouteOptions, modelId: string, tokens: number[][], reply: FastifyReply): Promise<Float32Array[]> {
  const vectors: Float32Array[] = new Array(tokens.length);
  const abort = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) abort.abort();
  };
  reply.raw.once('close', onClose);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < tokens.length && !abort.signal.aborted; i = next++) {
      vectors[i] = await services.library.instance(modelId).model.embed(tokens[i]!, { signal: abort.signal });
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(DECODER_CONCURRENCY, tokens.length) }, worker));
  } catch (err) {
    abort.abort();
    throw engineError(err, 'input');
  } finally {
    reply.raw.off('close', onClose);
  }
  return vectors;
}

export const embeddingsRoutes: FastifyPluginAsync<EmbeddingsRouteOptions> = async (app, services) => {
  app.post<{ Params: { model_id: string }; Body: EmbeddingsBody }>(
    '/v1/:model_id/embeddings',
    {
      config: { access: { action: 'infer', model: (request: FastifyRequest) => (request.params as { model_id: string }).model_id } },
      schema: {
        summary: 'Embeddings of the model of the URL (OpenAI form)',
        params: modelParams,
        body: embeddingsBodySchema(false),
        response: responses({ 200: embeddingsAnswerSchema }),
      },
    },
    async (request, reply) => {
      const modelId = request.params.model_id;
      const model = request.body.model;
      if (typeof model !== 'string') throw invalidArgument('model is required: set it to the model id of the URL', 'model');
      if (model !== modelId) throw invalidArgument(`the model in the body ("${model}") is not the model in the URL ("${modelId}")`, 'model');
      return answerEmbeddings(services, request, reply, modelId);
    },
  );

  app.post<{ Body: EmbeddingsBody }>(
    '/v1/embeddings',
    {
      config: { access: { action: 'infer', modelParam: 'model', model: (request: FastifyRequest) => (request.body as { model?: unknown }).model as string | undefined } },
      schema: { summary: 'Embeddings of the model named in the body (OpenAI form)', body: embeddingsBodySchema(true), response: responses({ 200: embeddingsAnswerSchema }) },
    },
    async (request, reply) => {
      const modelId = request.body.model as string;
      await services.library.checkModel(modelId, 'model');
      return answerEmbeddings(services, request, reply, modelId);
    },
  );
};
