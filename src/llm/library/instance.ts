// A loaded library model: the engine's model, the tokenizer and chat template from the same
// GGUF file, and the instance type it runs on.
import fs from 'node:fs';
import type { InstanceType } from '../../native/surface.js';
import { loadModel, type LlmModel, type LlmModelInfo } from '../engine/index.js';
import { chatTemplate, readGguf } from '../gguf/index.js';
import { Tokenizer } from '../tokenizer/index.js';
import { ChatTemplate, DEFAULT_CHAT_TEMPLATE } from '../chat/template.js';

/** The GGUF file to load is not there (moved, deleted, or on a volume not mounted yet). */
export class ModelFileMissingError extends Error {
  constructor(readonly file: string) {
    super(`the model file ${file} does not exist`);
    this.name = 'ModelFileMissingError';
  }
}

export interface InstanceOptions {
  instanceType: InstanceType;
  threads: number | null;
  contextLength?: number;
  maxRunningSequences?: number;
  maxQueued?: number;
  kvCacheBytes?: number;
  /** Prompt-lookup draft tokens verified per decoding step (0: no speculative decoding). */
  speculativeTokens?: number;
}

export class LlmInstance {
  private constructor(
    readonly model: LlmModel,
    readonly tokenizer: Tokenizer,
    readonly template: ChatTemplate,
    readonly info: LlmModelInfo,
    readonly options: InstanceOptions,
  ) {}

  static async load(file: string, options: InstanceOptions): Promise<LlmInstance> {
    // Told apart from a broken file, because a missing one may come back (see LibraryService.restore).
    try {
      await fs.promises.stat(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new ModelFileMissingError(file);
      throw err;
    }
    const gguf = await readGguf(file);
    const tokenizer = Tokenizer.fromGguf(gguf);
    const piece = (id: number | null) => (id === null ? '' : tokenizer.tokenText(id));
    const template = new ChatTemplate(chatTemplate(gguf) ?? DEFAULT_CHAT_TEMPLATE, { bos_token: piece(tokenizer.bos), eos_token: piece(tokenizer.eos) });
    const { instanceType, threads, ...engine } = options;
    const model = await loadModel(file, { backend: instanceType, ...(threads !== null ? { threads } : {}), ...engine });
    return new LlmInstance(model, tokenizer, template, model.info(), options);
  }

  /** Tokens of a rendered chat prompt: special-token text is parsed, and BOS is added unless the template wrote it. */
  chatPrompt(rendered: string): number[] {
    const bos = this.tokenizer.bos;
    const hasBos = bos !== null && rendered.startsWith(this.tokenizer.tokenText(bos));
    return this.tokenizer.encode(rendered, { addSpecial: !hasBos, parseSpecial: true });
  }

  /** Tokens of a legacy completion prompt: plain text, BOS as the model's metadata says. */
  textPrompt(prompt: string): number[] {
    return this.tokenizer.encode(prompt, { addSpecial: true, parseSpecial: false });
  }

  /** Resolves once nothing runs or waits on this instance. */
  async drain(): Promise<void> {
    for (;;) {
      const s = this.model.stats();
      if (s.running === 0 && s.waiting === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  unload(): Promise<void> {
    return this.model.unload();
  }
}
