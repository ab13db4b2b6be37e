// The TypeScript host is layered (README.md, "Inside: the request path, the layers, the names"):
// every import points down or into its own layer,
//   base (errors, config, store, ids, validation, metrics)
//     <- formats (tabular/onnx, llm/gguf, llm/tokenizer: pure TypeScript readers; llm/structured:
//        JSON Schema to byte grammars)
//     <- typed surface (src/native: the one declaration of platform.node; surface.ts imports nothing)
//     <- engines (llm/engine, llm/embed, tabular/executor: the native engines as TypeScript objects)
//     <- services (models, realtime, vectors, auth, llm/library, llm/chat, llm/metrics, cluster)
//     <- routes and the CLI (server, cli)
// the two engines never import each other, nor do the server and the CLI, and nothing in src/
// imports the tests or the benches. This reads every source file and checks each relative
// import (static, re-export or dynamic with a literal path) against that order.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packageRoot } from '../src/native/addon.js';

const root = packageRoot();

function sourcesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourcesUnder(rel));
    else if (entry.name.endsWith('.ts')) out.push(rel);
  }
  return out.sort();
}

const LAYERS: ReadonlyArray<{ rank: number; name: string; areas: readonly string[] }> = [
  { rank: 0, name: 'base', areas: ['errors.ts', 'ids.ts', 'config.ts', 'validation.ts', 'worker-threads.ts', 'metrics', 'store'] },
  { rank: 1, name: 'formats', areas: ['tabular/onnx', 'llm/gguf', 'llm/tokenizer', 'llm/structured'] },
  { rank: 2, name: 'typed surface', areas: ['native'] },
  { rank: 3, name: 'engines', areas: ['llm/engine', 'llm/embed', 'tabular/executor'] },
  { rank: 4, name: 'services', areas: ['models', 'realtime', 'vectors', 'auth', 'llm/library', 'llm/chat', 'llm/metrics.ts', 'cluster'] },
  { rank: 5, name: 'routes and CLI', areas: ['server', 'cli'] },
];
// Areas of one layer that must not import each other.
const APART: ReadonlyArray<readonly [string, string]> = [
  ['llm/engine', 'tabular/executor'],
  ['llm/embed', 'tabular/executor'],
  ['server', 'cli'],
];

function areaOf(file: string): { area: string; rank: number } {
  const rel = path.posix.relative('src', file);
  for (const layer of LAYERS) {
    for (const area of layer.areas) {
      if (rel === area || rel.startsWith(`${area}/`)) return { area, rank: layer.rank };
    }
  }
  throw new Error(`${file} is in no layer: add its folder to LAYERS (and to the README's request path)`);
}

// Relative module paths a file imports, resolved to repository paths (.js -> .ts).
function imports(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s+['"]([^'"]+)['"]/gm),
    ...text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, '.ts'));
}

const files = sourcesUnder('src');

describe('src import layers', () => {
  it('places every source file in a layer, and every layer has files', () => {
    const ranks = new Set(files.map((f) => areaOf(f).rank));
    expect([...ranks].sort()).toEqual(LAYERS.map((l) => l.rank));
  });

  it('no import points up a layer or out of src/', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = areaOf(file);
      for (const target of imports(file)) {
        if (!target.startsWith('src/')) wrong.push(`${file} -> ${target}`);
        else if (areaOf(target).rank > from.rank) wrong.push(`${file} -> ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('keeps apart the areas of one layer that must not know each other', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = areaOf(file).area;
      for (const target of imports(file)) {
        const to = areaOf(target).area;
        if (APART.some(([a, b]) => (from === a && to === b) || (from === b && to === a))) wrong.push(`${file} -> ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('the typed surface of the addon imports nothing of the host', () => {
    expect(imports('src/native/surface.ts')).toEqual([]);
  });

  it('reads the imports it checks (a file known to import across layers)', () => {
    expect(imports('src/server/routes/predict.ts')).toContain('src/realtime/predict.ts');
    expect(imports('src/llm/engine/model.ts')).toContain('src/native/surface.ts');
  });
});
