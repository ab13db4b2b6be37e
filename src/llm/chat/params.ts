// The OpenAI request fields we support, checked and normalised: numbers may arrive as strings
// ("0.7", as SPEC.md's reference request sends them); a field the engine does not implement is
// refused by name rather than silently ignored; unknown fields are ignored (DESIGN.md section 3).
import { invalidArgument } from '../../errors.js';
import type { ChatMessage, ChatToolCall } from './template.js';
import { DECIMAL_NUMBER, decimalNumber, describeValue } from '../../validation.js';

export interface SamplingParams {
  maxTokens: number | undefined;
  temperature: number;
  topP: number;
  topK: number;
  minP: number;
  seed: number | undefined;
  frequencyPenalty: number;
  presencePenalty: number;
  stop: string[];
  stream: boolean;
  includeUsage: boolean;
  /** Prefix caching: requests share cached prompt blocks only with the same salt (the route adds the caller's key). */
  cacheSalt: string;
  /** Token log-probabilities with this many alternatives per token (0-20), or null when not asked for. */
  logprobs: number | null;
  /** Choices to generate for the prompt (1-16). */
  n: number;
}

/** At most this many choices per request. */
export const MAX_CHOICES = 16;

/** At most this many alternatives per token, as OpenAI allows. */
export const MAX_TOP_LOGPROBS = 20;

/**
 * `logprobs` and `top_logprobs`: chat sends `logprobs: true` and `top_logprobs: n`, legacy
 * completions `logprobs: n`.
 */
function logprobsParams(body: Body): number | null {
  const raw = body.logprobs;
  const top = number(body, 'top_logprobs', 0, MAX_TOP_LOGPROBS, true);
  if (raw === undefined || raw === null || raw === false || raw === 'false') {
    if (top !== undefined && top > 0) throw invalidArgument('top_logprobs needs logprobs: true', 'top_logprobs');
    return null;
  }
  if (raw === true || raw === 'true') return top ?? 0;
  const n = number(body, 'logprobs', 0, MAX_TOP_LOGPROBS, true);
  if (top !== undefined) throw invalidArgument('top_logprobs goes with logprobs: true; with a number of logprobs, leave it out', 'top_logprobs');
  return n ?? null;
}

type Body = Record<string, unknown>;

/** A field's value as a number; text only as a decimal literal ("0x1" is no 1). */
const asNumber = (v: unknown) => (typeof v === 'string' ? (decimalNumber(v) ?? Number.NaN) : Number(v));

/** Fields an OpenAI client may send that this engine does not implement. */
const UNSUPPORTED: Array<[string, (v: unknown) => boolean]> = [
  ['functions', (v) => v !== undefined],
  ['function_call', (v) => v !== undefined && v !== 'none'],
  ['best_of', (v) => v !== undefined && asNumber(v) !== 1],
  ['logit_bias', (v) => v !== undefined && v !== null && Object.keys(v as object).length > 0],
  ['echo', (v) => v === true],
  ['suffix', (v) => v !== undefined && v !== null && v !== ''],
  ['audio', (v) => v !== undefined && v !== null],
  ['modalities', (v) => Array.isArray(v) && v.some((m) => m !== 'text')],
  ['prediction', (v) => v !== undefined && v !== null],
];

function number(body: Body, field: string, min: number, max: number, integer = false): number | undefined {
  const raw = body[field];
  if (raw === undefined || raw === null) return undefined;
  let value: number;
  if (typeof raw === 'number') value = raw;
  else if (typeof raw === 'string' && DECIMAL_NUMBER.test(raw)) value = Number(raw);
  else throw invalidArgument(`${field} must be a number, got ${describeValue(raw)}`, field);
  if (!Number.isFinite(value) || value < min || value > max) throw invalidArgument(`${field} must be between ${min} and ${max}, got ${value}`, field);
  if (integer && !Number.isInteger(value)) throw invalidArgument(`${field} must be an integer, got ${value}`, field);
  return value;
}

function bool(body: Body, field: string): boolean | undefined {
  const raw = body[field];
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'boolean') return raw;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw invalidArgument(`${field} must be true or false`, field);
}

export function refuseUnsupported(body: Body): void {
  for (const [field, used] of UNSUPPORTED) {
    if (used(body[field])) throw invalidArgument(`${field} is not supported by this server`, field);
  }
}

export function samplingParams(body: Body): SamplingParams {
  refuseUnsupported(body);
  const maxCompletion = number(body, 'max_completion_tokens', 1, 2 ** 30, true);
  const maxTokens = number(body, 'max_tokens', 1, 2 ** 30, true) ?? maxCompletion;
  let stop: string[] = [];
  const rawStop = body.stop;
  if (typeof rawStop === 'string') stop = [rawStop];
  else if (Array.isArray(rawStop)) {
    if (rawStop.length > 16) throw invalidArgument('stop takes at most 16 strings', 'stop');
    rawStop.forEach((s, i) => {
      if (typeof s !== 'string') throw invalidArgument(`stop[${i}] must be a string`, `stop[${i}]`);
    });
    stop = rawStop as string[];
  } else if (rawStop !== undefined && rawStop !== null) throw invalidArgument('stop must be a string or an array of strings', 'stop');
  stop = stop.filter((s) => s.length > 0);
  const options = body.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw invalidArgument('stream_options must be an object', 'stream_options');
  }
  const includeUsage = options ? bool(options as Body, 'include_usage') ?? false : false;
  const stream = bool(body, 'stream') ?? false;
  if (includeUsage && !stream) throw invalidArgument('stream_options is only allowed when stream is true', 'stream_options');
  const cacheSalt = body.cache_salt ?? '';
  if (typeof cacheSalt !== 'string' || cacheSalt.length > 256) throw invalidArgument('cache_salt must be a string of at most 256 characters', 'cache_salt');
  return {
    maxTokens,
    temperature: number(body, 'temperature', 0, 2) ?? 1,
    topP: number(body, 'top_p', 0, 1) ?? 1,
    topK: number(body, 'top_k', 0, 1_000_000, true) ?? 0,
    minP: number(body, 'min_p', 0, 1) ?? 0,
    seed: number(body, 'seed', 0, Number.MAX_SAFE_INTEGER, true),
    frequencyPenalty: number(body, 'frequency_penalty', -2, 2) ?? 0,
    presencePenalty: number(body, 'presence_penalty', -2, 2) ?? 0,
    stop,
    stream,
    includeUsage,
    cacheSalt,
    logprobs: logprobsParams(body),
    n: number(body, 'n', 1, MAX_CHOICES, true) ?? 1,
  };
}

/** `messages` as the template takes them; text parts of multi-part contents are joined. */
export function chatMessages(raw: unknown): ChatMessage[] {
  if (!Array.isArray(raw) || raw.length === 0) throw invalidArgument('messages must be a non-empty array', 'messages');
  return raw.map((m: unknown, i): ChatMessage => {
    const at = `messages[${i}]`;
    if (typeof m !== 'object' || m === null) throw invalidArgument(`${at} must be an object with role and content`, at);
    const message = m as { role?: unknown; content?: unknown; tool_calls?: unknown; tool_call_id?: unknown };
    const { role } = message;
    if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'developer' && role !== 'tool') {
      throw invalidArgument(`${at}.role must be "system", "developer", "user", "assistant" or "tool", got ${describeValue(role)}`, `${at}.role`);
    }
    if (role === 'tool') {
      if (typeof message.tool_call_id !== 'string' || message.tool_call_id === '') {
        throw invalidArgument(`${at}.tool_call_id must be the id of the call this message answers`, `${at}.tool_call_id`);
      }
      return { role, content: messageText(message.content, at), tool_call_id: message.tool_call_id };
    }
    if (role === 'assistant') {
      const toolCalls = assistantToolCalls(message.tool_calls, at);
      // An assistant message that makes calls may have no content (OpenAI sends null).
      if (toolCalls && (message.content === null || message.content === undefined)) return { role, content: null, tool_calls: toolCalls };
      const content = messageText(message.content, at);
      return toolCalls ? { role, content, tool_calls: toolCalls } : { role, content };
    }
    return { role: role === 'developer' ? 'system' : role, content: messageText(message.content, at) };
  });
}

/** A message's content: a string, or text parts joined. */
function messageText(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown, j) => {
        const p = part as { type?: unknown; text?: unknown };
        if (p?.type !== 'text' || typeof p.text !== 'string') throw invalidArgument(`${at}.content[${j}] must be a text part; this model reads text only`, `${at}.content[${j}]`);
        return p.text;
      })
      .join('');
  }
  throw invalidArgument(`${at}.content must be a string`, `${at}.content`);
}

/** An assistant message's `tool_calls`: absent, null and [] all mean none. */
function assistantToolCalls(raw: unknown, at: string): ChatToolCall[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw invalidArgument(`${at}.tool_calls must be an array`, `${at}.tool_calls`);
  if (raw.length === 0) return undefined;
  return raw.map((call: unknown, j): ChatToolCall => {
    const here = `${at}.tool_calls[${j}]`;
    if (typeof call !== 'object' || call === null || Array.isArray(call)) throw invalidArgument(`${here} must be an object`, here);
    const { id, type, function: fn } = call as { id?: unknown; type?: unknown; function?: unknown };
    if (typeof id !== 'string' || id === '') throw invalidArgument(`${here}.id must be a non-empty string`, `${here}.id`);
    if (type !== 'function') throw invalidArgument(`${here}.type must be "function", got ${describeValue(type)}`, `${here}.type`);
    if (typeof fn !== 'object' || fn === null || Array.isArray(fn)) throw invalidArgument(`${here}.function must be an object`, `${here}.function`);
    const { name, arguments: args } = fn as { name?: unknown; arguments?: unknown };
    if (typeof name !== 'string' || name === '') throw invalidArgument(`${here}.function.name must be a non-empty string`, `${here}.function.name`);
    if (typeof args !== 'string') throw invalidArgument(`${here}.function.arguments must be a string of JSON`, `${here}.function.arguments`);
    // Templates print the arguments as an object, so they must be one.
    let parsed: unknown;
    try {
      parsed = JSON.parse(args);
    } catch {
      throw invalidArgument(`${here}.function.arguments must be a JSON object, got ${describeValue(args)}`, `${here}.function.arguments`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw invalidArgument(`${here}.function.arguments must be a JSON object, got ${describeValue(args)}`, `${here}.function.arguments`);
    }
    return { id, type, function: { name, arguments: args } };
  });
}
