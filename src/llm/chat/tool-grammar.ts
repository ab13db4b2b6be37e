// Grammars that make the model's tool calls well formed, in its family's syntax (tool-formats.ts):
// the name one of the tools, the arguments valid for that tool's parameters. Each tool is one
// alternative holding both its name and its arguments' schema, so the two always agree.
//
//   eagerToolGrammar  tool_choice "required" or a named tool: the whole answer is calls
//   lazyToolGrammar   tool_choice "auto": the model writes freely until its text contains
//                     `trigger`; from there on, what follows the trigger must match `grammar`
//
// Triggers: hermes `<tool_call>` and mistral / mistral-args `[TOOL_CALLS]`, the tags that open a block. llama3
// has no tag for custom tools (Llama 3.1 writes <|python_tag|> only before its built-in tools, and
// Llama 3.2 never does), so its trigger is `{"name"`: the exact opening of the call the template
// shows the model (`{"name": function name, "parameters": ...}`). A model that spaces it
// differently (`{ "name"`) goes unconstrained, and the parser still reads its call if it is valid.
//
// parallel: several calls in a row (hermes, mistral-args: blocks, mistral: array elements); llama3 takes one
// call per message whatever parallel says, since its template refuses to render two.
import { type Grammar, GrammarBuilder, GrammarTooLargeError, type Sequence } from '../structured/grammar.js';
import { JsonSchemaCompiler, SchemaError } from '../structured/json-schema.js';
import { HERMES_CLOSE, HERMES_OPEN, MISTRAL_ARGS, MISTRAL_CALL_ID, MISTRAL_TAG, type ToolFamily } from './tool-formats.js';
import { argumentsSchema, type ToolChoice, type ToolDefinition } from './tool-params.js';

/** The key a family puts the arguments under. */
const ARGUMENTS_KEY: Record<ToolFamily, string> = { llama3: 'parameters', hermes: 'arguments', mistral: 'arguments', 'mistral-args': 'arguments' };
const LLAMA_TRIGGER = '{"name"';
/** Compile time for all the tools of a request together (each schema compiler has its own clock). */
const DEADLINE_MS = 2000;

/** Builds the pieces every family's grammar is made of. */
class CallGrammar {
  readonly b = new GrammarBuilder();
  private readonly space: Sequence;
  private readonly deadline = Date.now() + DEADLINE_MS;

  constructor(
    readonly family: ToolFamily,
    private readonly tools: readonly ToolDefinition[],
  ) {
    if (tools.length === 0) throw new Error('a tool grammar needs at least one tool');
    this.space = new JsonSchemaCompiler(this.b, {}).ws();
  }

  /** The arguments of one tool; each tool's $refs resolve within its own parameters. */
  private args(tool: ToolDefinition): Sequence {
    const deadlineMs = Math.max(1, this.deadline - Date.now());
    return new JsonSchemaCompiler(this.b, argumentsSchema(tool), { deadlineMs }).value();
  }

  ws(): Sequence {
    return this.space;
  }

  /**
   * What follows `{"name"` in a call object, one alternative per tool:
   *   : "NAME", "KEY": ARGUMENTS }
   */
  afterNameKey(): Sequence {
    const key = ARGUMENTS_KEY[this.family];
    const alternatives = this.tools.map((tool) => {
      const args = this.args(tool);
      const ws = this.ws();
      return [...ws, ...this.b.literal(':'), ...ws, ...this.b.literal(JSON.stringify(tool.name)), ...ws, ...this.b.literal(','), ...ws, ...this.b.literal(JSON.stringify(key)), ...ws, ...this.b.literal(':'), ...ws, ...args, ...ws, ...this.b.literal('}')];
    });
    return this.b.choice(...alternatives);
  }

  /** One call object: {"name": "NAME", "KEY": ARGUMENTS}. */
  call(): Sequence {
    return [...this.b.literal('{'), ...this.ws(), ...this.b.literal('"name"'), ...this.afterNameKey()];
  }

  /**
   * One mistral-args call after its [TOOL_CALLS]: NAME, optionally [CALL_ID] and an id of 1 to 16
   * letters and digits (Small 3.2 writes one), then [ARGS] and the arguments.
   */
  argsCall(): Sequence {
    const id = this.b.repeat(this.b.chars([[0x30, 0x39], [0x41, 0x5a], [0x61, 0x7a]]), 1, 16);
    const callId = this.b.optional([...this.b.literal(MISTRAL_CALL_ID), ...id]);
    return this.b.choice(...this.tools.map((tool) => [...this.b.literal(tool.name), ...callId, ...this.b.literal(MISTRAL_ARGS), ...this.args(tool)]));
  }

  /** `one`, or with parallel calls, `one` then any more, each after `separator`. */
  some(one: Sequence, separator: Sequence, parallel: boolean): Sequence {
    return parallel ? [...one, ...this.b.repeat([...separator, ...one], 0, MAX_PARALLEL_CALLS - 1)] : one;
  }
}

function only(tools: readonly ToolDefinition[], choice: Exclude<ToolChoice, 'none' | 'auto'>): ToolDefinition[] {
  if (choice === 'required') return [...tools];
  const tool = tools.find((t) => t.name === choice.name);
  if (!tool) throw new Error(`no tool is named ${choice.name}`);
  return [tool];
}

/** A grammar too large to build is reported like any schema the grammar cannot take. */
function sized<T>(build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof GrammarTooLargeError) throw new SchemaError(`the tools' grammar would exceed ${err.limit} items`, '');
    throw err;
  }
}

/** tool_choice "required" or a named tool: the whole output is one call, or several with `parallel`. */
export function eagerToolGrammar(family: ToolFamily, tools: readonly ToolDefinition[], choice: Exclude<ToolChoice, 'none' | 'auto'>, parallel: boolean): Grammar {
  return sized(() => eager(family, only(tools, choice), parallel));
}

function eager(family: ToolFamily, tools: readonly ToolDefinition[], parallel: boolean): Grammar {
  const g = new CallGrammar(family, tools);
  const { b } = g;
  const call = b.rule([g.call()]);
  switch (family) {
    case 'llama3':
      return b.build(call);
    case 'hermes': {
      const block = [...b.literal(HERMES_OPEN), ...g.ws(), ...call, ...g.ws(), ...b.literal(HERMES_CLOSE)];
      return b.build(g.some(b.rule([block]), g.ws(), parallel));
    }
    case 'mistral': {
      const separator = [...g.ws(), ...b.literal(','), ...g.ws()];
      return b.build([...b.literal(MISTRAL_TAG), ...g.ws(), ...b.literal('['), ...g.ws(), ...g.some(call, separator, parallel), ...g.ws(), ...b.literal(']')]);
    }
    case 'mistral-args':
      return b.build(g.some(b.rule([[...b.literal(MISTRAL_TAG), ...g.argsCall()]]), [], parallel));
  }
}

/** Calls in one answer at most, with parallel_tool_calls: a weak model cannot call tools forever. */
export const MAX_PARALLEL_CALLS = 8;

/** What starts a call in each family's syntax: the text a lazy grammar waits for. */
export const LAZY_TRIGGERS: Readonly<Record<ToolFamily, string>> = { llama3: LLAMA_TRIGGER, hermes: HERMES_OPEN, mistral: MISTRAL_TAG, 'mistral-args': MISTRAL_TAG };

/** tool_choice "auto": free text until `trigger`, then `grammar` on what follows the trigger. */
export function lazyToolGrammar(family: ToolFamily, tools: readonly ToolDefinition[], parallel: boolean): { trigger: string; grammar: Grammar } {
  return sized(() => lazy(family, tools, parallel));
}

function lazy(family: ToolFamily, tools: readonly ToolDefinition[], parallel: boolean): { trigger: string; grammar: Grammar } {
  const g = new CallGrammar(family, tools);
  const { b } = g;
  switch (family) {
    case 'llama3':
      return { trigger: LAZY_TRIGGERS.llama3, grammar: b.build(g.afterNameKey()) };
    case 'hermes': {
      const call = b.rule([g.call()]);
      const first = [...g.ws(), ...call, ...g.ws(), ...b.literal(HERMES_CLOSE)];
      const next = [...g.ws(), ...b.literal(HERMES_OPEN), ...first];
      return { trigger: LAZY_TRIGGERS.hermes, grammar: b.build(parallel ? [...first, ...b.repeat(next, 0, MAX_PARALLEL_CALLS - 1)] : first) };
    }
    case 'mistral': {
      const separator = [...g.ws(), ...b.literal(','), ...g.ws()];
      const array = [...g.ws(), ...b.literal('['), ...g.ws(), ...g.some(b.rule([g.call()]), separator, parallel), ...g.ws(), ...b.literal(']')];
      return { trigger: LAZY_TRIGGERS.mistral, grammar: b.build(array) };
    }
    case 'mistral-args': {
      const first = b.rule([g.argsCall()]);
      const next = [...b.literal(MISTRAL_TAG), ...first];
      return { trigger: LAZY_TRIGGERS['mistral-args'], grammar: b.build(parallel ? [...first, ...b.repeat(next, 0, MAX_PARALLEL_CALLS - 1)] : first) };
    }
  }
}
