// A loaded library model: the engine's model, the tokenizer and chat template from the same
// GGUF file, and the instance type it runs on. A BERT-family file (bert, nomic-bert) loads as an
// embedding model instead: `embedder` is set, and `model` / `info` refuse with a 400 that points
// at the embeddings routes (an encoder cannot generate).
import fs from 'node:fs';
import type { InstanceType } from '../../native/surface.js';
import { invalidArgument } from '../../errors.js';
import { EMBEDDING_ARCHITECTURES, loadEmbedder, type Embedder } from '../embed/index.js';
import { loadModel, type LlmModel, type LlmModelInfo } from '../engine/index.js';
import { chatTemplate, GgufMetadata, readGguf } from '../gguf/index.js';
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
  /** Draft tokens verified per decoding step (0: no speculative decoding). */
  speculativeTokens?: number;
  /** The path of the draft model (speculative decoding by a draft model instead of prompt lookup). */
  draftModel?: string;
}

export class LlmInstance {
  private constructor(
    private readonly llm: { model: LlmModel; info: LlmModelInfo } | null,
    /** Set for an embedding model (bert, nomic-bert); then there is no generating model. */
    readonly embedder: Embedder | null,
    readonly tokenizer: Tokenizer,
    readonly template: ChatTemplate,
    readonly options: InstanceOptions,
  ) {}

  /** The generating model; a 400 naming the embeddings routes for an embedding model. */
  get model(): LlmModel {
    return this.generator().model;
  }

  get info(): LlmModelInfo {
    return this.generator().info;
  }

  /** The file's architecture: a decoder (DECODER_ARCHITECTURES) or bert, nomic-bert. */
  get architecture(): string {
    return this.embedder ? this.embedder.info.architecture : this.llm!.info.architecture;
  }

  private generator(): { model: LlmModel; info: LlmModelInfo } {
    if (this.llm) return this.llm;
    throw invalidArgument(
      `this model is an embedding model (${this.architecture}): it answers POST /v1/<model_id>/embeddings and POST /v1/embeddings, not chat or completions`,
      'model',
    );
  }

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
    const { instanceType, threads, ...engine } = options;
    const architecture = GgufMetadata.of(gguf).optString('general.architecture') ?? '';
    if (EMBEDDING_ARCHITECTURES.includes(architecture)) {
      // The encoder runs on the CPU whatever the instance type (no CUDA encoder yet).
      const embedder = await loadEmbedder(file, threads !== null ? { threads } : {});
      return new LlmInstance(null, embedder, tokenizer, new ChatTemplate(DEFAULT_CHAT_TEMPLATE, { bos_token: '', eos_token: '' }), options);
    }
    const piece = (id: number | null) => (id === null ? '' : tokenizer.tokenText(id));
    const template = new ChatTemplate(chatTemplate(gguf) ?? DEFAULT_CHAT_TEMPLATE, { bos_token: piece(tokenizer.bos), eos_token: piece(tokenizer.eos) });
    const model = await loadModel(file, { backend: instanceType, ...(threads !== null ? { threads } : {}), ...engine });
    return new LlmInstance({ model, info: model.info() }, null, tokenizer, template, options);
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
      if (this.embedder) {
        if (this.embedder.running === 0) return;
      } else {
        const s = this.model.stats();
        if (s.running === 0 && s.waiting === 0) return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  unload(): Promise<void> {
    return this.embedder ? this.embedder.unload() : this.model.unload();
  }
}
