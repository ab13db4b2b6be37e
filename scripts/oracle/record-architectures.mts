// Records llama.cpp's greedy decoding of the small models of test/helpers/arch-oracle-cases.ts
// (qwen3, gemma2, gemma3, phi3, Llama 3) into test/data/architectures-llama-cpp.json, for
// test/llm-architectures.test.ts. It uses the node-llama-cpp installed here (install it
// first: scripts/oracle/README.md):
//
//   node --import tsx scripts/oracle/record-architectures.mts     # from the project root; a few seconds
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { getLlama, LlamaLogLevel } from './node_modules/node-llama-cpp/dist/index.js';
import { ARCH_ORACLE_CASES, ARCH_ORACLE_PROMPT, ARCH_ORACLE_TOKENS, archOracleModel } from '../../test/helpers/arch-oracle-cases.ts';
import { writeGguf } from '../../test/helpers/gguf-writer.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const NLC = path.join(ROOT, 'scripts/oracle/node_modules/node-llama-cpp');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'record-architectures-'));
const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.error, build: 'never' });
const greedy: Record<string, number[]> = {};
try {
  for (const [name, c] of Object.entries(ARCH_ORACLE_CASES)) {
    const file = path.join(dir, `${name}.gguf`);
    writeGguf(file, archOracleModel(name).spec);
    const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
    // One thread (fast on small models); no flash attention, so attention runs as the graph says.
    const context = await model.createContext({ contextSize: c.contextLength, sequences: 1, threads: 1, flashAttention: false });
    const tokens: number[] = [];
    for await (const t of context.getSequence().evaluate(ARCH_ORACLE_PROMPT, { temperature: 0 })) {
      tokens.push(t);
      if (tokens.length === ARCH_ORACLE_TOKENS) break;
    }
    await context.dispose();
    await model.dispose();
    greedy[name] = tokens;
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
const version = (p: string) => JSON.parse(fs.readFileSync(path.join(p, 'package.json'), 'utf8')).version as string;
const out = {
  recordedWith: {
    'node-llama-cpp': version(NLC),
    'llama.cpp release': JSON.parse(fs.readFileSync(path.join(NLC, 'llama/llama.cpp.info.json'), 'utf8')).tag,
  },
  prompt: ARCH_ORACLE_PROMPT,
  sampling: 'greedy (temperature 0), no penalties, flash attention off, one thread',
  greedy,
};
const text = JSON.stringify(out, null, 1).replace(/\[[\d,\s-]*\]/g, (a) => a.replace(/\s+/g, ''));
fs.writeFileSync(path.join(ROOT, 'test/data/architectures-llama-cpp.json'), text + '\n');
console.log('wrote test/data/architectures-llama-cpp.json');
