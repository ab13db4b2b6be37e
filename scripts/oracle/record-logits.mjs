// Records llama.cpp's logits for the models of test/helpers/oracle-models.ts into
// test/data/llm-logits/<name>.json, for test/llm-logits-oracle.test.ts.
//
//   node --import tsx scripts/oracle/record-logits.mjs              # every model of the table
//   node --import tsx scripts/oracle/record-logits.mjs llama-q4_k   # only these names
//
// For each entry it writes the GGUF, runs logits-ref (logits-ref.c, built here against
// node-llama-cpp's prebuilt libllama and the headers of the same llama.cpp release) on its tokens,
// and stores the file's sha256, the token ids and the float32 logits [n_tokens][n_vocab] (base64,
// little-endian). Needs `cd scripts/oracle && npm install` first, git and gcc; no network.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ORACLE_MODELS, sha256 } from '../../test/helpers/oracle-models.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const OUT = path.join(ROOT, 'test/data/llm-logits');
const NLC = path.join(HERE, 'node_modules/node-llama-cpp');
const BINS = path.join(HERE, 'node_modules/@node-llama-cpp/linux-x64/bins/linux-x64');

function versions() {
  const pkg = (p) => JSON.parse(fs.readFileSync(path.join(p, 'package.json'), 'utf8')).version;
  return {
    'node-llama-cpp': pkg(NLC),
    '@node-llama-cpp/linux-x64': pkg(path.join(HERE, 'node_modules/@node-llama-cpp/linux-x64')),
    'llama.cpp release': JSON.parse(fs.readFileSync(path.join(NLC, 'llama/llama.cpp.info.json'), 'utf8')).tag,
  };
}

/** Builds logits-ref against the prebuilt libraries, with the headers of the bundled source. */
function buildLogitsRef(tmp) {
  const src = path.join(tmp, 'src');
  execFileSync('git', ['clone', '-q', '--depth', '1', path.join(NLC, 'llama/gitRelease.bundle'), src], { stdio: 'ignore' });
  const lib = (prefix) => {
    const file = fs.readdirSync(BINS).find((f) => f.startsWith(prefix) && f.endsWith('.so'));
    if (!file) throw new Error(`no ${prefix}*.so in ${BINS}`);
    return `-l:${file}`;
  };
  const exe = path.join(tmp, 'logits-ref');
  execFileSync('gcc', [
    '-O2', '-std=c11', '-Wall', `-I${path.join(src, 'include')}`, `-I${path.join(src, 'ggml/include')}`,
    path.join(HERE, 'logits-ref.c'), `-L${BINS}`, lib('libllama.'), lib('libggml.'), lib('libggml-base.'),
    `-Wl,-rpath,${BINS}`, '-o', exe,
  ], { stdio: 'inherit' });
  return exe;
}

function main() {
  const only = process.argv.slice(2);
  const models = only.length ? ORACLE_MODELS.filter((m) => only.includes(m.name)) : ORACLE_MODELS;
  const unknown = only.filter((n) => !ORACLE_MODELS.some((m) => m.name === n));
  if (unknown.length) throw new Error(`no oracle model named ${unknown.join(', ')}`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'oracle-logits-'));
  try {
    const exe = buildLogitsRef(tmp);
    fs.mkdirSync(OUT, { recursive: true });
    const recordedWith = versions();
    for (const m of models) {
      const bytes = m.gguf();
      const file = path.join(tmp, `${m.name}.gguf`);
      fs.writeFileSync(file, bytes);
      const out = execFileSync(exe, [BINS, file, ...m.tokens.map(String)], { maxBuffer: 1 << 28 });
      const nTokens = out.readUInt32LE(0);
      const nVocab = out.readUInt32LE(4);
      if (nTokens !== m.tokens.length || out.length !== 8 + 4 * nTokens * nVocab) throw new Error(`${m.name}: logits-ref wrote ${out.length} bytes`);
      const record = {
        recordedWith,
        how: 'logits-ref.c: one batch, logits at every position, CPU, 1 thread, flash attention off, F32 K/V cache, no weight repacking',
        name: m.name,
        arch: m.arch,
        weightType: m.weightType,
        seed: m.seed,
        ggufSha256: sha256(bytes),
        tokens: m.tokens,
        nVocab,
        logits: out.subarray(8).toString('base64'),
      };
      const target = path.join(OUT, `${m.name}.json`);
      fs.writeFileSync(target, JSON.stringify(record, null, 1).replace(/\[[\d,\s-]*\]/g, (a) => a.replace(/\s+/g, '')) + '\n');
      console.log(`wrote ${path.relative(ROOT, target)} (${nTokens} x ${nVocab})`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main();
