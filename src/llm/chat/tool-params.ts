// The request's tools, as the OpenAI API defines them: `tools` (functions with a JSON Schema of
// their parameters), `tool_choice` and `parallel_tool_calls`, checked and normalised. Every
// refusal is a 400 naming the field it is about (`tools[2].function.name`), and a tool's
// parameters must compile to a grammar: a schema we cannot enforce is refused up front rather
// than failing later in the middle of a generation.
import { invalidArgument } from '../../errors.js';
import { describeValue } from '../../validation.js';

/** One function the model may call. */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** The JSON Schema of the arguments object, as the client sent it (absent: no parameters). */
  readonly parameters?: Record<string, unknown>;
}

/** `tool_choice`: a named tool is `{ name }` so that a tool called "required" stays unambiguous. */
export type ToolChoice = 'none' | 'auto' | 'required' | { readonly name: string };

// OpenAI's own rule for function names; it also keeps names safe inside JSON text and grammars.
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The schema the arguments are generated against: an object always (the call syntaxes carry an
 * object), `{}` with no properties for a tool that declares no parameters (OpenAI: "omitting
 * parameters defines a function with an empty parameter list").
 */
export function argumentsSchema(tool: ToolDefinition): Record<string, unknown> {
  if (tool.parameters === undefined) return { type: 'object', properties: {}, additionalProperties: false };
  return tool.parameters.type === undefined ? { type: 'object', ...tool.parameters } : tool.parameters;
}

/** `tools`: absent, null and [] all mean none. */
export function parseTools(raw: unknown): ToolDefinition[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw invalidArgument(`tools must be an array, got ${describeValue(raw)}`, 'tools');
  if (raw.length > MAX_TOOLS) throw invalidArgument(`tools takes at most ${MAX_TOOLS} tools, got ${raw.length}`, 'tools');
  const seen = new Set<string>();
  return raw.map((entry: unknown, i) => {
    const at = `tools[${i}]`;
    if (!isObject(entry)) throw invalidArgument(`${at} must be an object`, at);
    if (entry.type !== 'function') throw invalidArgument(`${at}.type must be "function", got ${describeValue(entry.type)}`, `${at}.type`);
    const fn = entry.function;
    if (!isObject(fn)) throw invalidArgument(`${at}.function must be an object`, `${at}.function`);
    const { name, description, parameters } = fn;
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      throw invalidArgument(`${at}.function.name must be 1 to 64 letters, digits, _ or -, got ${describeValue(name)}`, `${at}.function.name`);
    }
    if (seen.has(name)) throw invalidArgument(`${at}.function.name "${name}" is already the name of another tool`, `${at}.function.name`);
    seen.add(name);
    if (description !== undefined && description !== null && typeof description !== 'string') {
      throw invalidArgument(`${at}.function.description must be a string`, `${at}.function.description`);
    }
    const tool: { name: string; description?: string; parameters?: Record<string, unknown> } = { name };
    if (typeof description === 'string') tool.description = description;
    if (parameters !== undefined && parameters !== null) {
      if (!isObject(parameters)) throw invalidArgument(`${at}.function.parameters must be a JSON Schema object`, `${at}.function.parameters`);
      tool.parameters = parameters;
    }
    checkParameters(tool, `${at}.function.parameters`);
    return tool;
  });
}

/** Tools in one request at most, as OpenAI allows. */
export const MAX_TOOLS = 128;
/**
 * The parameters must describe an object. Whether they compile to a grammar is found when the
 * request's grammar is built, off the event loop (grammar-job.ts: a 400 naming the tool).
 */
function checkParameters(tool: ToolDefinition, at: string): void {
  const type = tool.parameters?.type;
  if (type !== undefined && type !== 'object') {
    throw invalidArgument(`${at} must describe an object (type "object"), got type ${describeValue(type)}`, at);
  }
}

/** `tool_choice`; absent means "auto" when there are tools and "none" when there are none. */
export function parseToolChoice(raw: unknown, tools: readonly ToolDefinition[]): ToolChoice {
  if (raw === undefined || raw === null) return tools.length > 0 ? 'auto' : 'none';
  let choice: ToolChoice;
  if (raw === 'none' || raw === 'auto' || raw === 'required') choice = raw;
  else if (isObject(raw)) {
    if (raw.type !== 'function') throw invalidArgument(`tool_choice.type must be "function", got ${describeValue(raw.type)}`, 'tool_choice.type');
    const fn = raw.function;
    if (!isObject(fn) || typeof fn.name !== 'string') throw invalidArgument('tool_choice.function.name must be a string', 'tool_choice.function.name');
    const name = fn.name;
    if (!tools.some((t) => t.name === name)) throw invalidArgument(`tool_choice names "${name}", which is not one of the tools`, 'tool_choice');
    choice = { name };
  } else {
    throw invalidArgument(`tool_choice must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}, got ${describeValue(raw)}`, 'tool_choice');
  }
  if (choice === 'required' && tools.length === 0) throw invalidArgument('tool_choice "required" needs at least one tool in tools', 'tool_choice');
  return choice;
}

/** `parallel_tool_calls`: true unless the client says false. */
export function parseParallelToolCalls(raw: unknown): boolean {
  if (raw === undefined || raw === null) return true;
  if (typeof raw === 'boolean') return raw;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw invalidArgument('parallel_tool_calls must be true or false', 'parallel_tool_calls');
}
