// The chat request's fields (src/llm/chat/params.ts) without a host: every supported sampling
// field, numbers sent as strings, each range just inside and just outside both ends, the two
// names of the token limit, the OpenAI fields we refuse by name, and `messages`. Messages and
// `param` are pinned: they are what a client sees in the 400.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { chatMessages, refuseUnsupported, samplingParams } from '../src/llm/chat/params.js';

/** The 400 a body earns (failing the test if it is accepted). */
function refusal(check: () => unknown): ApiError {
  try {
    check();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).code).toBe('invalid_argument');
    return e as ApiError;
  }
  throw new Error('the body was accepted');
}

const refused = (body: Record<string, unknown>) => {
  const e = refusal(() => samplingParams(body));
  return { message: e.message, param: e.param };
};

describe('sampling fields', () => {
  it('an empty body takes the defaults', () => {
    expect(samplingParams({})).toMatchObject({
      temperature: 1,
      topP: 1,
      topK: 0,
      minP: 0,
      seed: undefined,
      frequencyPenalty: 0,
      presencePenalty: 0,
      stop: [],
      stream: false,
      includeUsage: false,
    });
  });

  it('null is the same as absent', () => {
    const body = { temperature: null, top_p: null, top_k: null, min_p: null, seed: null, frequency_penalty: null, presence_penalty: null, stop: null, stream: null, stream_options: null };
    expect(samplingParams(body)).toEqual(samplingParams({}));
  });

  it('reads every supported field', () => {
    expect(
      samplingParams({
        max_tokens: 42,
        temperature: 0.7,
        top_p: 0.9,
        top_k: 40,
        min_p: 0.05,
        seed: 1234,
        frequency_penalty: 0.5,
        presence_penalty: -0.5,
        stop: ['\n\n', 'END'],
        stream: true,
        stream_options: { include_usage: true },
        cache_salt: 'team-a',
        logprobs: true,
        top_logprobs: 3,
        n: 4,
      }),
    ).toEqual({
      maxTokens: 42,
      temperature: 0.7,
      topP: 0.9,
      topK: 40,
      minP: 0.05,
      seed: 1234,
      frequencyPenalty: 0.5,
      presencePenalty: -0.5,
      stop: ['\n\n', 'END'],
      stream: true,
      includeUsage: true,
      cacheSalt: 'team-a',
      logprobs: 3,
      n: 4,
    });
  });

  it('numbers and booleans may arrive as strings', () => {
    expect(
      samplingParams({
        max_tokens: '42',
        temperature: '0.7',
        top_p: '0.9',
        top_k: '40',
        seed: '7',
        frequency_penalty: '-1.5',
        stream: 'true',
        stream_options: { include_usage: 'false' },
      }),
    ).toMatchObject({ maxTokens: 42, temperature: 0.7, topP: 0.9, topK: 40, seed: 7, frequencyPenalty: -1.5, stream: true, includeUsage: false });
    expect(samplingParams({ stream: 'false' }).stream).toBe(false);
    // Only a decimal literal (issue 22): no padding, no hexadecimal, no words.
    for (const text of [' 0.9 ', '0x1', '1_0', 'Infinity', '']) {
      expect(refused({ top_p: text }).message).toBe(`top_p must be a number, got ${JSON.stringify(text)}`);
    }
  });

  it('a value that is not a number is refused, naming the field and the value', () => {
    expect(refused({ temperature: 'hot' })).toEqual({ message: 'temperature must be a number, got "hot"', param: 'temperature' });
    expect(refused({ top_p: '' })).toEqual({ message: 'top_p must be a number, got ""', param: 'top_p' });
    expect(refused({ top_p: '   ' })).toEqual({ message: 'top_p must be a number, got "   "', param: 'top_p' });
    expect(refused({ seed: true })).toEqual({ message: 'seed must be a number, got true', param: 'seed' });
    expect(refused({ min_p: [0.1] })).toEqual({ message: 'min_p must be a number, got [0.1]', param: 'min_p' });
    expect(refused({ max_tokens: {} })).toEqual({ message: 'max_tokens must be a number, got {}', param: 'max_tokens' });
  });

  it('NaN and infinities are out of range', () => {
    expect(refused({ temperature: Number.NaN })).toEqual({ message: 'temperature must be between 0 and 2, got NaN', param: 'temperature' });
    expect(refused({ temperature: 'Infinity' })).toEqual({ message: 'temperature must be a number, got "Infinity"', param: 'temperature' });
    expect(refused({ presence_penalty: -Infinity })).toEqual({ message: 'presence_penalty must be between -2 and 2, got -Infinity', param: 'presence_penalty' });
  });

  // [body field, result field, min, max, a step just outside]
  const RANGES: Array<[string, string, number, number, number]> = [
    ['temperature', 'temperature', 0, 2, 0.001],
    ['top_p', 'topP', 0, 1, 0.001],
    ['top_k', 'topK', 0, 1_000_000, 1],
    ['min_p', 'minP', 0, 1, 0.001],
    ['seed', 'seed', 0, Number.MAX_SAFE_INTEGER, 1],
    ['frequency_penalty', 'frequencyPenalty', -2, 2, 0.001],
    ['presence_penalty', 'presencePenalty', -2, 2, 0.001],
    ['max_tokens', 'maxTokens', 1, 2 ** 30, 1],
    ['max_completion_tokens', 'maxTokens', 1, 2 ** 30, 1],
  ];

  for (const [field, key, min, max, step] of RANGES) {
    it(`${field}: ${min} and ${max} are accepted, one step beyond either is not`, () => {
      expect((samplingParams({ [field]: min }) as unknown as Record<string, unknown>)[key]).toBe(min);
      expect((samplingParams({ [field]: max }) as unknown as Record<string, unknown>)[key]).toBe(max);
      const below = min - step;
      const above = max + step;
      expect(refused({ [field]: below })).toEqual({ message: `${field} must be between ${min} and ${max}, got ${below}`, param: field });
      expect(refused({ [field]: above })).toEqual({ message: `${field} must be between ${min} and ${max}, got ${above}`, param: field });
    });
  }

  it('the integer fields refuse fractions', () => {
    for (const field of ['top_k', 'seed', 'max_tokens', 'max_completion_tokens']) {
      expect(refused({ [field]: 2.5 })).toEqual({ message: `${field} must be an integer, got 2.5`, param: field });
      expect(refused({ [field]: '2.5' })).toEqual({ message: `${field} must be an integer, got 2.5`, param: field });
    }
  });
});

describe('max_completion_tokens and max_tokens', () => {
  it('either name sets the limit', () => {
    expect(samplingParams({ max_tokens: 10 }).maxTokens).toBe(10);
    expect(samplingParams({ max_completion_tokens: 20 }).maxTokens).toBe(20);
  });

  it('max_tokens wins when both are given', () => {
    expect(samplingParams({ max_tokens: 10, max_completion_tokens: 20 }).maxTokens).toBe(10);
  });

  it('both are checked even when the other one decides', () => {
    expect(refused({ max_tokens: 10, max_completion_tokens: 0 })).toEqual({
      message: 'max_completion_tokens must be between 1 and 1073741824, got 0',
      param: 'max_completion_tokens',
    });
    expect(refused({ max_tokens: 0, max_completion_tokens: 10 })).toEqual({
      message: 'max_tokens must be between 1 and 1073741824, got 0',
      param: 'max_tokens',
    });
  });
});

describe('stop', () => {
  it('a string or an array of up to 16 strings; empty strings are dropped', () => {
    expect(samplingParams({ stop: 'END' }).stop).toEqual(['END']);
    expect(samplingParams({ stop: '' }).stop).toEqual([]);
    expect(samplingParams({ stop: ['a', '', 'b'] }).stop).toEqual(['a', 'b']);
    const sixteen = Array.from({ length: 16 }, (_, i) => `s${i}`);
    expect(samplingParams({ stop: sixteen }).stop).toEqual(sixteen);
  });

  it('anything else is refused', () => {
    expect(refused({ stop: Array.from({ length: 17 }, (_, i) => `s${i}`) })).toEqual({ message: 'stop takes at most 16 strings', param: 'stop' });
    expect(refused({ stop: ['a', 2] })).toEqual({ message: 'stop[1] must be a string', param: 'stop[1]' });
    expect(refused({ stop: 5 })).toEqual({ message: 'stop must be a string or an array of strings', param: 'stop' });
    expect(refused({ stop: { a: 'b' } })).toEqual({ message: 'stop must be a string or an array of strings', param: 'stop' });
  });
});

describe('stream and stream_options', () => {
  it('stream must be a boolean', () => {
    expect(refused({ stream: 'yes' })).toEqual({ message: 'stream must be true or false', param: 'stream' });
    expect(refused({ stream: 1 })).toEqual({ message: 'stream must be true or false', param: 'stream' });
  });

  it('stream_options must be an object, and include_usage a boolean', () => {
    expect(refused({ stream: true, stream_options: 'usage' })).toEqual({ message: 'stream_options must be an object', param: 'stream_options' });
    expect(refused({ stream: true, stream_options: [] })).toEqual({ message: 'stream_options must be an object', param: 'stream_options' });
    expect(refused({ stream: true, stream_options: { include_usage: 'maybe' } })).toEqual({
      message: 'include_usage must be true or false',
      param: 'include_usage',
    });
  });

  it('include_usage only with stream', () => {
    expect(refused({ stream_options: { include_usage: true } })).toEqual({
      message: 'stream_options is only allowed when stream is true',
      param: 'stream_options',
    });
    expect(samplingParams({ stream: false, stream_options: { include_usage: false } }).includeUsage).toBe(false);
    expect(samplingParams({ stream: true, stream_options: {} }).includeUsage).toBe(false);
  });
});

describe('OpenAI fields this engine does not implement', () => {
  // [field, a value that asks for the feature, values that do not]
  const FIELDS: Array<[string, unknown, unknown[]]> = [
    ['functions', [], []],
    ['function_call', 'auto', ['none']],
    ['best_of', 3, [1]],
    ['logit_bias', { '50256': -100 }, [{}, null]],
    ['echo', true, [false]],
    ['suffix', 'tail', ['', null]],
    ['audio', { voice: 'alloy' }, [null]],
    ['modalities', ['text', 'audio'], [['text'], 'audio']],
    ['prediction', { type: 'content', content: 'x' }, [null]],
  ];

  for (const [field, used, unused] of FIELDS) {
    it(`${field} is refused by name when it asks for something`, () => {
      expect(refused({ [field]: used })).toEqual({ message: `${field} is not supported by this server`, param: field });
      for (const value of unused) expect(() => samplingParams({ [field]: value }), JSON.stringify(value)).not.toThrow();
    });
  }

  it('the refusal comes before any other check, and the first field in the list is named', () => {
    expect(refused({ temperature: 'hot', n: 2, functions: [{}] })).toEqual({ message: 'functions is not supported by this server', param: 'functions' });
    expect(refusal(() => refuseUnsupported({ echo: true })).message).toBe('echo is not supported by this server');
  });

  it('fields it does not know are ignored', () => {
    expect(samplingParams({ user: 'u1', metadata: { a: 1 }, store: true, frobnicate: 'x' })).toEqual(samplingParams({}));
  });
});

describe('messages', () => {
  it('roles and contents as the template takes them; developer is a system message', () => {
    expect(
      chatMessages([
        { role: 'developer', content: 'be brief' },
        { role: 'system', content: 'sys' },
        { role: 'user', content: [{ type: 'text', text: 'Hello, ' }, { type: 'text', text: 'world' }] },
        { role: 'assistant', content: '' },
      ]),
    ).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'Hello, world' },
      { role: 'assistant', content: '' },
    ]);
  });

  it('refusals name the message and the part', () => {
    const cases: Array<[unknown, string, string]> = [
      [[], 'messages must be a non-empty array', 'messages'],
      ['hi', 'messages must be a non-empty array', 'messages'],
      [[null], 'messages[0] must be an object with role and content', 'messages[0]'],
      [[{ role: 'user', content: 'a' }, { role: 'tool', content: 'b' }], 'messages[1].tool_call_id must be the id of the call this message answers', 'messages[1].tool_call_id'],
      [[{ content: 'a' }], 'messages[0].role must be "system", "developer", "user", "assistant" or "tool", got undefined', 'messages[0].role'],
      [[{ role: 'user', content: 5 }], 'messages[0].content must be a string', 'messages[0].content'],
      [[{ role: 'user' }], 'messages[0].content must be a string', 'messages[0].content'],
      [
        [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'x' } }] }],
        'messages[0].content[1] must be a text part; this model reads text only',
        'messages[0].content[1]',
      ],
    ];
    for (const [raw, message, param] of cases) {
      const e = refusal(() => chatMessages(raw));
      expect({ message: e.message, param: e.param }, JSON.stringify(raw)).toEqual({ message, param });
    }
  });
});
