// The native tree is layered (native/README.md): every #include points down or into its own layer,
//   core <- ggml (file formats) <- backends (interfaces; cpu, cuda) <- engines (llm, tabular)
//        <- addon, tools <- testing
// the CPU and CUDA backends never include each other, nor do the two engines, and the choice
// between a build with CUDA and one without lives in the build files, not in #ifdefs below the
// addon. This reads every native source and checks each quoted #include against that order.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packageRoot } from '../src/native/addon.js';

const root = packageRoot();
const NATIVE = 'native';

function sourcesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourcesUnder(rel));
    else if (/\.(h|cc|cu|cuh)$/.test(entry.name)) out.push(rel);
  }
  return out.sort();
}

// The layer a file belongs to, and the group within it whose members may not include each other.
function layerOf(file: string): { rank: number; group: string } {
  const rel = path.posix.relative(NATIVE, file);
  const [top = '', sub = ''] = rel.split('/');
  switch (top) {
    case 'core': return { rank: 0, group: 'core' };
    case 'ggml': return { rank: 1, group: 'ggml' };
    case 'backends': return { rank: 2, group: sub === 'cpu' || sub === 'cuda' ? `backends/${sub}` : 'backends' };
    case 'llm':
    case 'tabular': return { rank: 3, group: top };
    case 'addon':
    case 'tools': return { rank: 4, group: top };
    case 'testing': return { rank: 5, group: top };
    default: throw new Error(`${file} is in no layer of native/README.md`);
  }
}

// Quoted includes, resolved as the compilers do: next to the including file, then from native/
// (the tools' include directory).
function includes(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
    const name = m[1]!;
    const local = path.posix.normalize(path.posix.join(path.posix.dirname(file), name));
    const fromNative = path.posix.join(NATIVE, name);
    if (existsSync(path.join(root, local))) out.push(local);
    else if (existsSync(path.join(root, fromNative))) out.push(fromNative);
    else throw new Error(`${file}: #include "${name}" resolves to no file`);
  }
  return out;
}

const files = sourcesUnder(NATIVE);

describe('native include layers', () => {
  it('finds the sources of every layer', () => {
    const groups = new Set(files.map((f) => layerOf(f).group));
    for (const g of ['core', 'ggml', 'backends', 'backends/cpu', 'backends/cuda', 'llm', 'tabular', 'addon', 'tools', 'testing']) {
      expect(groups, g).toContain(g);
    }
  });

  it('no #include points up a layer', () => {
    const upward: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const target of includes(file)) {
        if (layerOf(target).rank > from.rank) upward.push(`${file} -> ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('no #include crosses sideways: cpu <-> cuda backends, llm <-> tabular engines, addon <-> tools', () => {
    const sideways: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const target of includes(file)) {
        const to = layerOf(target);
        // Within a layer a file may include its own group and the layer's shared interface
        // headers (backends/*.h); the groups of one layer are peers.
        if (to.rank === from.rank && to.group !== from.group && to.group !== 'backends') {
          sideways.push(`${file} -> ${target}`);
        }
      }
    }
    expect(sideways).toEqual([]);
  });

  it('core includes nothing of ours but core', () => {
    const out = files
      .filter((f) => layerOf(f).group === 'core')
      .flatMap((f) => includes(f).filter((t) => layerOf(t).group !== 'core').map((t) => `${f} -> ${t}`));
    expect(out).toEqual([]);
  });

  it('no #ifdef PLATFORM_WITH_CUDA below the addon: the build files choose the .cu files or not_built.cc', () => {
    const guarded = files.filter(
      (f) => layerOf(f).rank <= 3 && /#\s*if(def\s+PLATFORM_WITH_CUDA|.*defined\s*\(\s*PLATFORM_WITH_CUDA)/.test(readFileSync(path.join(root, f), 'utf8')),
    );
    expect(guarded).toEqual([]);
  });
});
