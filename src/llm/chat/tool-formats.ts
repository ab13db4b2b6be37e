// How each family of chat templates writes tool calls in the assistant's text, and how to read
// them back:
//   llama3   Llama 3.1 / 3.2 / 3.3: {"name": "f", "parameters": {...}}, optionally after
//            <|python_tag|>; one call per message (the template refuses to render more)
//   hermes   Qwen 2.5, Hermes, and our default for templates without tools:
//            <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, one block per call
//   mistral  Mistral 7B v0.3, Nemo: [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   mistral-args  Mistral Small 3.2, Devstral, Magistral / Ministral: [TOOL_CALLS]f[ARGS]{...}
//            (Small 3.2's history also writes [CALL_ID]id before [ARGS]), one block per call
// A "block" is the text of one or more calls that stands or falls as a whole: one <tool_call>
// element, one [TOOL_CALLS] array, one llama3 object. Readers work on text that may still grow
// (see tool-json.ts): "more" means wait, "bad" means this was no call after all.
import { type JsonRead, readJsonObject, readLiteral, skipJsonSpace } from './tool-json.js';

export type ToolFamily = 'llama3' | 'hermes' | 'mistral' | 'mistral-args';

/** One call as the model wrote it: the arguments are its JSON text, exactly as generated. */
export interface ParsedToolCall {
  readonly name: string;
  readonly arguments: string;
}

export type BlockRead = { readonly status: 'done'; readonly end: number; readonly calls: ParsedToolCall[] } | { readonly status: 'more' } | { readonly status: 'bad' };

export interface ToolSyntax {
  readonly family: ToolFamily;
  /** The first index at or after `from` where a block may begin, or -1. */
  findStart(text: string, from: number): number;
  /** The first index from which the end of `text` could still grow into a block's beginning (text.length if none). */
  partialStart(text: string): number;
  /** The block that begins at `start` (an index findStart gave). */
  readBlock(text: string, start: number): BlockRead;
}

export const HERMES_OPEN = '<tool_call>';
export const HERMES_CLOSE = '</tool_call>';
export const MISTRAL_TAG = '[TOOL_CALLS]';
export const LLAMA_PYTHON_TAG = '<|python_tag|>';
export const MISTRAL_ARGS = '[ARGS]';
export const MISTRAL_CALL_ID = '[CALL_ID]';

const isPlainObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The longest end of `text` that is a proper beginning of `marker`: its index, or text.length. */
function partialMarker(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(marker.slice(0, n))) return text.length - n;
  }
  return text.length;
}

/**
 * One call object at `pos`: {"name": "...", <one of argKeys>: {...}} with its members in any
 * order and others (Mistral's "id") ignored. Name and arguments must be a string and an object.
 */
function readCallObject(text: string, pos: number, argKeys: readonly string[]): JsonRead & { call?: ParsedToolCall } {
  const read = readJsonObject(text, pos);
  if (read.status !== 'done') return read;
  const members = read.members!;
  const nameSpan = members.get('name');
  const argKey = argKeys.find((k) => members.has(k));
  if (!nameSpan || argKey === undefined) return { status: 'bad' };
  const name: unknown = JSON.parse(text.slice(nameSpan.start, nameSpan.end));
  const argSpan = members.get(argKey)!;
  const argText = text.slice(argSpan.start, argSpan.end);
  if (typeof name !== 'string' || name === '' || !isPlainObject(JSON.parse(argText))) return { status: 'bad' };
  return { status: 'done', end: read.end, call: { name, arguments: argText } };
}

/** Literal, then JSON whitespace: the index after both. */
function afterLiteral(text: string, pos: number, literal: string): JsonRead {
  const read = readLiteral(text, pos, literal);
  return read.status === 'done' ? { status: 'done', end: skipJsonSpace(text, read.end) } : read;
}

const hermes: ToolSyntax = {
  family: 'hermes',
  findStart: (text, from) => text.indexOf(HERMES_OPEN, from),
  partialStart: (text) => partialMarker(text, HERMES_OPEN),
  readBlock(text, start) {
    const open = afterLiteral(text, start, HERMES_OPEN);
    if (open.status !== 'done') return open;
    const call = readCallObject(text, open.end, ['arguments', 'parameters']);
    if (call.status !== 'done') return call;
    const close = readLiteral(text, skipJsonSpace(text, call.end), HERMES_CLOSE);
    if (close.status !== 'done') return close;
    return { status: 'done', end: close.end, calls: [call.call!] };
  },
};

const mistral: ToolSyntax = {
  family: 'mistral',
  findStart: (text, from) => text.indexOf(MISTRAL_TAG, from),
  partialStart: (text) => partialMarker(text, MISTRAL_TAG),
  readBlock(text, start) {
    const open = afterLiteral(text, start, MISTRAL_TAG);
    if (open.status !== 'done') return open;
    const bracket = afterLiteral(text, open.end, '[');
    if (bracket.status !== 'done') return bracket;
    const calls: ParsedToolCall[] = [];
    let pos = bracket.end;
    for (;;) {
      const call = readCallObject(text, pos, ['arguments']);
      if (call.status !== 'done') return call;
      calls.push(call.call!);
      pos = skipJsonSpace(text, call.end);
      if (pos === text.length) return { status: 'more' };
      if (text[pos] === ']') return { status: 'done', end: pos + 1, calls };
      if (text[pos] !== ',') return { status: 'bad' };
      pos = skipJsonSpace(text, pos + 1);
    }
  },
};

/** The end of a run of `allowed` characters from `pos` (a name, a call id). */
function runEnd(text: string, pos: number, allowed: RegExp): number {
  let end = pos;
  while (end < text.length && allowed.test(text[end]!)) end++;
  return end;
}

const NAME_CHAR = /[A-Za-z0-9_.-]/;
const ID_CHAR = /[A-Za-z0-9]/;

const mistralArgs: ToolSyntax = {
  family: 'mistral-args',
  findStart: (text, from) => text.indexOf(MISTRAL_TAG, from),
  partialStart: (text) => partialMarker(text, MISTRAL_TAG),
  readBlock(text, start) {
    const open = readLiteral(text, start, MISTRAL_TAG);
    if (open.status !== 'done') return open;
    const nameEnd = runEnd(text, open.end, NAME_CHAR);
    if (nameEnd === text.length) return { status: 'more' };
    if (nameEnd === open.end) return { status: 'bad' };
    const name = text.slice(open.end, nameEnd);
    let pos = nameEnd;
    const callId = readLiteral(text, pos, MISTRAL_CALL_ID);
    if (callId.status === 'more') return callId; // "[" alone may still become either tag
    if (callId.status === 'done') {
      pos = runEnd(text, callId.end, ID_CHAR);
      if (pos === text.length) return { status: 'more' };
    }
    const args = readLiteral(text, pos, MISTRAL_ARGS);
    if (args.status !== 'done') return args;
    const read = readJsonObject(text, args.end);
    if (read.status !== 'done') return read;
    return { status: 'done', end: read.end, calls: [{ name, arguments: text.slice(args.end, read.end) }] };
  },
};

// A llama3 call is a bare JSON object, so its beginning is a pattern rather than a tag: "{",
// JSON whitespace, then the "name" key.
const LLAMA_OBJECT = /\{[ \t\n\r]*"name"/g;
const LLAMA_OBJECT_PARTIAL = /\{[ \t\n\r]*(?:"(?:n(?:a(?:m(?:e)?)?)?)?)?$/;

const llama3: ToolSyntax = {
  family: 'llama3',
  findStart(text, from) {
    LLAMA_OBJECT.lastIndex = from;
    const object = LLAMA_OBJECT.exec(text)?.index ?? -1;
    const tag = text.indexOf(LLAMA_PYTHON_TAG, from);
    return object === -1 ? tag : tag === -1 ? object : Math.min(object, tag);
  },
  partialStart(text) {
    const brace = text.lastIndexOf('{');
    const object = brace !== -1 && LLAMA_OBJECT_PARTIAL.test(text.slice(brace)) ? brace : text.length;
    return Math.min(object, partialMarker(text, LLAMA_PYTHON_TAG));
  },
  readBlock(text, start) {
    let pos = start;
    if (text.startsWith(LLAMA_PYTHON_TAG, start)) {
      const tag = afterLiteral(text, start, LLAMA_PYTHON_TAG);
      if (tag.status !== 'done') return tag;
      pos = tag.end;
    }
    const call = readCallObject(text, pos, ['parameters', 'arguments']);
    if (call.status !== 'done') return call;
    return { status: 'done', end: call.end, calls: [call.call!] };
  },
};

export const TOOL_SYNTAXES: Readonly<Record<ToolFamily, ToolSyntax>> = { llama3, hermes, mistral, 'mistral-args': mistralArgs };

/** The text a hermes-style model writes for one call (our default template's history). */
export function hermesCallText(name: string, args: string): string {
  return `${HERMES_OPEN}\n{"name": ${JSON.stringify(name)}, "arguments": ${args}}\n${HERMES_CLOSE}`;
}

/**
 * The family a chat template writes tool calls in, and whether it renders tools itself
 * (`native`). A template that never mentions `tools`, or whose call syntax is none of ours, gets
 * the default: a system message listing the tools, and hermes syntax (tool-prompt.ts).
 */
export function detectToolFamily(source: string): { family: ToolFamily; native: boolean } {
  if (!/\btools\b/.test(source)) return { family: 'hermes', native: false };
  if (source.includes(MISTRAL_TAG)) return { family: source.includes(MISTRAL_ARGS) ? 'mistral-args' : 'mistral', native: true };
  if (source.includes(HERMES_OPEN)) return { family: 'hermes', native: true };
  // Llama 3.1 writes <|python_tag|>; 3.2 does not, but both declare the ipython environment.
  if (source.includes(LLAMA_PYTHON_TAG) || source.includes('Environment: ipython')) return { family: 'llama3', native: true };
  // A template of another family that reads `tools` still renders them itself (and may refuse
  // them: a 400 naming tools); its calls are read in the Hermes syntax, the most common one.
  return { family: 'hermes', native: true };
}
