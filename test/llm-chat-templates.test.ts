// The chat templates of the models people run, as the host renders them (ChatTemplate with the
// request's messages through chatMessages, the fixed clock strftime_now reads, tools through the
// host's tool shapes), against the text each model's documented format gives. The templates are
// the publishers' own, as llama.cpp keeps them (test/data/chat-templates/README.md). The expected
// strings were checked by reading them against each template and its model card's format; the
// conversation is a system prompt, a user turn, an assistant answer, a second user turn and the
// generation prompt; the tool conversation a call and its result.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatMessages } from '../src/llm/chat/params.js';
import { strftime } from '../src/llm/chat/template-globals.js';
import { ChatTemplate } from '../src/llm/chat/template.js';
import { parseTools } from '../src/llm/chat/tool-params.js';

const dir = path.join(__dirname, 'data/chat-templates');
/** 5 March 2026, 09:30 local time. */
const clock = () => new Date(2026, 2, 5, 9, 30);
const template = (name: string) => new ChatTemplate(fs.readFileSync(path.join(dir, `${name}.jinja`), 'utf8'), { bos_token: '<BOS>', eos_token: '<EOS>' }, clock);

const conversation = chatMessages([
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello.' },
  { role: 'user', content: 'Weather in Paris?' },
]);
const toolConversation = chatMessages([
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc123XYZ', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
  { role: 'tool', content: '{"temp": 21}', tool_call_id: 'call_abc123XYZ' },
]);
const tools = parseTools([
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
]);

const CONVERSATION: Record<string, string> = {
  'meta-llama-Llama-3.1-8B-Instruct':
    "<BOS><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  'meta-llama-Llama-3.2-3B-Instruct':
    "<BOS><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 05 Mar 2026\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  'meta-llama-Llama-3.3-70B-Instruct':
    "<BOS><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  'mistralai-Mistral-Nemo-Instruct-2407':
    "<BOS>[INST]Hi[/INST]Hello.<EOS>[INST]You are terse.\n\nWeather in Paris?[/INST]",
  'Mistral-Small-3.2-24B-Instruct-2506':
    "<BOS>[SYSTEM_PROMPT]You are terse.[/SYSTEM_PROMPT][INST]Hi[/INST]Hello.<EOS>[INST]Weather in Paris?[/INST]",
  'Qwen-Qwen2.5-7B-Instruct':
    "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n",
  'Qwen-Qwen3-0.6B':
    "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n",
  'microsoft-Phi-3.5-mini-instruct':
    "<|system|>\nYou are terse.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello.<|end|>\n<|user|>\nWeather in Paris?<|end|>\n<|assistant|>\n",
  'google-gemma-2-2b-it':
    "<BOS><start_of_turn>user\nYou are terse.\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nWeather in Paris?<end_of_turn>\n<start_of_turn>model\n",
  'deepseek-ai-DeepSeek-R1-Distill-Llama-8B':
    "<BOS>You are terse.<｜User｜>Hi<｜Assistant｜>Hello.<｜end▁of▁sentence｜><｜User｜>Weather in Paris?<｜Assistant｜><think>\n",
  'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B':
    "<BOS>You are terse.<｜User｜>Hi<｜Assistant｜>Hello.<｜end▁of▁sentence｜><｜User｜>Weather in Paris?<｜Assistant｜><think>\n",
  'openai-gpt-oss-120b':
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2026-03-05\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|><|start|>developer<|message|># Instructions\n\nYou are terse.\n\n<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello.<|end|><|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant",
};

const WITH_TOOLS: Record<string, string> = {
  'meta-llama-Llama-3.3-70B-Instruct':
    "<BOS><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Weather for a city\",\n        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n                \"city\": {\n                    \"type\": \"string\"\n                }\n            },\n            \"required\": [\n                \"city\"\n            ]\n        }\n    }\n}\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  'deepseek-ai-DeepSeek-R1-Distill-Llama-8B':
    "<BOS>You are terse.\n\n# Tools\n\nYou may call functions to help answer. They are described by these JSON Schemas:\n<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather for a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}\n</tools>\n\nTo call a function, answer with one block per call, and nothing after them:\n<tool_call>\n{\"name\": \"<function-name>\", \"arguments\": <arguments-json-object>}\n</tool_call><｜User｜>Weather in Paris?<｜Assistant｜><tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call><｜end▁of▁sentence｜><｜User｜><tool_response>\n{\"temp\": 21}\n</tool_response><｜Assistant｜><think>\n",
  'meta-llama-Llama-3.2-3B-Instruct':
    "<BOS><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 05 Mar 2026\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Weather for a city\",\n        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n                \"city\": {\n                    \"type\": \"string\"\n                }\n            },\n            \"required\": [\n                \"city\"\n            ]\n        }\n    }\n}\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  'Mistral-Small-3.2-24B-Instruct-2506':
    "<BOS>[SYSTEM_PROMPT]You are terse.[/SYSTEM_PROMPT][AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather for a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}][/AVAILABLE_TOOLS][INST]Weather in Paris?[/INST][TOOL_CALLS]get_weather[CALL_ID]6d450d070[ARGS]{\"city\": \"Paris\"}<EOS>[TOOL_RESULTS]6d450d070[TOOL_CONTENT]{\"temp\": 21}[/TOOL_RESULTS]",
  'Qwen-Qwen3-0.6B':
    "<|im_start|>system\nYou are terse.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather for a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
  'microsoft-Phi-3.5-mini-instruct':
    "<|system|>\nYou are terse.\n\n# Tools\n\nYou may call functions to help answer. They are described by these JSON Schemas:\n<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather for a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}\n</tools>\n\nTo call a function, answer with one block per call, and nothing after them:\n<tool_call>\n{\"name\": \"<function-name>\", \"arguments\": <arguments-json-object>}\n</tool_call><|end|>\n<|user|>\nWeather in Paris?<|end|>\n<|assistant|>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call><|end|>\n<|user|>\n<tool_response>\n{\"temp\": 21}\n</tool_response><|end|>\n<|assistant|>\n",
  'google-gemma-2-2b-it':
    "<BOS><start_of_turn>user\nYou are terse.\n# Tools\n\nYou may call functions to help answer. They are described by these JSON Schemas:\n<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather for a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}\n</tools>\n\nTo call a function, answer with one block per call, and nothing after them:\n<tool_call>\n{\"name\": \"<function-name>\", \"arguments\": <arguments-json-object>}\n</tool_call>\n\nWeather in Paris?<end_of_turn>\n<start_of_turn>model\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call><end_of_turn>\n<start_of_turn>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><end_of_turn>\n<start_of_turn>model\n",
  'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B':
    "<BOS>You are terse.\n\n# Tools\n\nYou may call functions to help answer. They are described by these JSON Schemas:\n<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather for a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}\n</tools>\n\nTo call a function, answer with one block per call, and nothing after them:\n<tool_call>\n{\"name\": \"<function-name>\", \"arguments\": <arguments-json-object>}\n</tool_call><｜User｜>Weather in Paris?<｜Assistant｜><tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call><｜end▁of▁sentence｜><｜User｜><tool_response>\n{\"temp\": 21}\n</tool_response><｜Assistant｜><think>\n",
  'openai-gpt-oss-120b':
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2026-03-05\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|><|start|>developer<|message|># Instructions\n\nYou are terse.\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n// Weather for a city\ntype get_weather = (_: {\ncity: string,\n}) => any;\n\n} // namespace functions<|end|><|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"{\\\"temp\\\": 21}\"<|end|><|start|>assistant",
};

describe('chat templates render the documented format', () => {
  it('every template here is tested', () => {
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.jinja')).map((f) => f.slice(0, -'.jinja'.length));
    expect(Object.keys(CONVERSATION).sort()).toEqual(files.sort());
  });

  for (const [name, expected] of Object.entries(CONVERSATION)) {
    it(`${name}: system, user, assistant, user and the generation prompt`, () => {
      expect(template(name).render(conversation)).toBe(expected);
    });
  }

  for (const [name, expected] of Object.entries(WITH_TOOLS)) {
    it(`${name}: tools, a call and its result`, () => {
      expect(template(name).render(toolConversation, tools)).toBe(expected);
    });
  }
});

describe('what the templates need from the renderer', () => {
  it('strftime_now writes C-locale English dates from the clock (Llama 3.2, Mistral Small 3, gpt-oss)', () => {
    expect(strftime(new Date(2026, 0, 7, 15, 4, 9), '%a %A %b %B %d|%e|%H %I %j %m %M %p %S %y %Y %% %Q')).toBe(
      'Wed Wednesday Jan January 07| 7|15 03 007 01 04 PM 09 26 2026 % %Q',
    );
    expect(strftime(new Date(2024, 11, 31, 0, 0, 0), '%j %I %p %d %b %Y')).toBe('366 12 AM 31 Dec 2024');
    expect(template('meta-llama-Llama-3.2-3B-Instruct').render(conversation)).toContain('Today Date: 05 Mar 2026\n');
    expect(template('openai-gpt-oss-120b').render(conversation)).toContain('Current date: 2026-03-05\n');
  });

  it('a template without a system role gets the system text at the head of the first user turn, as llama.cpp does', () => {
    const gemma = template('google-gemma-2-2b-it');
    expect(gemma.systemRole).toBe(false);
    expect(gemma.render(conversation)).toContain('<start_of_turn>user\nYou are terse.\nHi<end_of_turn>');
    // a system message alone is dropped
    expect(gemma.render(chatMessages([{ role: 'system', content: 'Only this.' }]))).toBe('<BOS><start_of_turn>model\n');
    for (const name of Object.keys(CONVERSATION).filter((n) => n !== 'google-gemma-2-2b-it')) expect(template(name).systemRole, name).toBe(true);
  });

  it('enable_thinking is true, as in llama.cpp: the DeepSeek-R1 distills open <think> and leave it open', () => {
    for (const name of ['deepseek-ai-DeepSeek-R1-Distill-Llama-8B', 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B']) {
      expect(template(name).render(conversation).endsWith('<｜Assistant｜><think>\n')).toBe(true);
    }
  });

  it('the tool-call family each template is read with', () => {
    const families = Object.fromEntries(Object.keys(CONVERSATION).map((n) => [n, `${template(n).toolFamily}${template(n).nativeTools ? '' : ' (default preamble)'}`]));
    expect(families).toEqual({
      'meta-llama-Llama-3.1-8B-Instruct': 'llama3',
      'meta-llama-Llama-3.2-3B-Instruct': 'llama3',
      'meta-llama-Llama-3.3-70B-Instruct': 'llama3',
      'mistralai-Mistral-Nemo-Instruct-2407': 'mistral',
      'Mistral-Small-3.2-24B-Instruct-2506': 'mistral-args',
      'Qwen-Qwen2.5-7B-Instruct': 'hermes',
      'Qwen-Qwen3-0.6B': 'hermes',
      'microsoft-Phi-3.5-mini-instruct': 'hermes (default preamble)',
      'google-gemma-2-2b-it': 'hermes (default preamble)',
      'deepseek-ai-DeepSeek-R1-Distill-Llama-8B': 'hermes (default preamble)',
      'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B': 'hermes (default preamble)',
      // renders its own harmony tool section; its calls (to=functions.x ... <|call|>) are not parsed yet
      'openai-gpt-oss-120b': 'hermes',
    });
  });
});
