// Loads the llama.cpp answers recorded by scripts/oracle/record.mjs (test/data/tokenizer/*.json)
// and the tokenizer each was recorded for: generated vocabularies are rebuilt from
// test/helpers/tiny-vocab.ts (and must still have the recorded fingerprint), fixture ones are read
// from ../shared/fixtures when present.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseGguf } from '../../src/llm/gguf/index.js';
import { Tokenizer } from '../../src/llm/tokenizer/index.js';
import { encodeGguf, vocabMetadata } from './gguf-writer.js';
import { GENERATED_MODEL_NAMES, GENERATED_VOCABS, vocabFingerprint } from './tiny-vocab.js';

export { AWKWARD_TEXTS } from './tiny-vocab.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DATA_DIR = path.join(ROOT, 'test/data');
export const FIXTURES = path.resolve(ROOT, '../shared/fixtures');

export interface OracleCase {
  text: string;
  parseSpecial: boolean;
  ids: number[];
  idsAddSpecial: number[];
  detokenized: string;
  detokenizedSpecial: string;
  detokenizedAddSpecial: string;
}

export interface OracleFile {
  model: string;
  source: 'generated' | 'fixture';
  file?: string;
  arch?: string;
  vocabFingerprint?: string;
  bos: number | null;
  eos: number | null;
  eot: number | null;
  /** Every id llama.cpp's llama_vocab_is_eog accepts (recorded since the awkward texts). */
  eog?: number[];
  addBos: boolean;
  addEos: boolean;
  cases: OracleCase[];
}

export function oracleFiles(): OracleFile[] {
  const dir = path.join(DATA_DIR, 'tokenizer');
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as OracleFile);
}

/** Whether the oracle file's model can be built here (fixtures may be absent). */
export function available(o: OracleFile): boolean {
  return o.source === 'generated' || fs.existsSync(path.join(FIXTURES, o.file!));
}

export async function oracleTokenizer(o: OracleFile): Promise<Tokenizer> {
  if (o.source === 'fixture') return Tokenizer.fromFile(path.join(FIXTURES, o.file!));
  const make = GENERATED_VOCABS[o.model];
  if (!make) throw new Error(`no generator for ${o.model}`);
  const vocab = make();
  if (vocabFingerprint(vocab) !== o.vocabFingerprint) {
    throw new Error(`${o.model}: the vocabulary no longer matches the recorded one; re-run scripts/oracle/record.mjs`);
  }
  const name = GENERATED_MODEL_NAMES[o.model];
  return Tokenizer.fromGguf(await parseGguf(encodeGguf({ metadata: { ...vocabMetadata(vocab), ...(name ? { 'general.name': name } : {}) } })));
}
