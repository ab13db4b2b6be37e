// Tiny GGUF language models for serving tests: a llama-architecture model with random weights and
// a SentencePiece vocabulary with byte fallback, so that any text tokenizes.
import fs from 'node:fs';
import path from 'node:path';
import { tinyModel, writeGguf, type TinyVocab } from './gguf-writer.js';

/** <unk>, <s>, </s>, the 256 byte tokens, a few dozen word pieces, and `added` as user-defined tokens. */
export function spmVocab(chatTemplate?: string, added: readonly string[] = []): TinyVocab {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6);
  }
  const words = ['▁', 'e', 't', 'a', 'o', 'n', 'i', 's', 'r', 'h', 'l', 'd', 'u', '▁the', '▁a', '▁and', '▁to', '▁of', '▁in', '▁is', '▁it', '▁Once', '▁upon', '▁time', '▁there', '▁was', '▁little', '▁girl', '▁Hello', '▁world', '.', ',', '!', '?'];
  for (const w of words) {
    tokens.push(w);
    types.push(1);
  }
  for (const t of added) {
    tokens.push(t);
    types.push(4);
  }
  const scores = new Float32Array(tokens.length);
  tokens.forEach((t, i) => (scores[i] = types[i] === 1 ? -i / 10 : 0));
  return {
    model: 'llama',
    tokens,
    scores,
    tokenTypes: Int32Array.from(types),
    bosId: 1,
    eosId: 2,
    unknownId: 0,
    addBos: true,
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
  };
}

/** Writes a small random llama model into `dir` and returns its file name. */
export function writeTinyChatModel(
  dir: string,
  name = 'tiny-chat',
  options: { seed?: number; chatTemplate?: string; license?: string; nEmbd?: number; nLayer?: number; nCtx?: number; addedTokens?: readonly string[] } = {},
): string {
  fs.mkdirSync(dir, { recursive: true });
  const model = tinyModel({
    arch: 'llama',
    vocab: spmVocab(options.chatTemplate, options.addedTokens),
    nEmbd: options.nEmbd ?? 64,
    nLayer: options.nLayer ?? 2,
    nHead: 4,
    nHeadKv: 2,
    nFf: (options.nEmbd ?? 64) * 2,
    nCtx: options.nCtx ?? 512,
    seed: options.seed ?? 3,
    name,
    // A larger scale makes greedy output vary with the prompt instead of repeating one token.
    weightScale: 0.3,
  });
  if (options.license) model.spec.metadata['general.license'] = options.license;
  const file = `${name}.gguf`;
  writeGguf(path.join(dir, file), model.spec);
  return file;
}
