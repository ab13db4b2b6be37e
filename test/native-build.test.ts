// The two build files (binding.gyp for the CPU build, CMakeLists.txt for the CUDA build) must
// compile the same sources, taken from one list: native/sources.json.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packageRoot } from '../src/native/addon.js';

const root = packageRoot();
const read = (file: string): string => readFileSync(path.join(root, file), 'utf8');
// The file without its whole-line # comments (both build files use # for comments).
const code = (file: string): string =>
  read(file)
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n');

interface Sources {
  cpu: string[];
  cuda: string[];
}
const sources = JSON.parse(read('native/sources.json')) as Sources;

function filesUnder(dir: string, ext: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(rel, ext));
    else if (entry.name.endsWith(ext)) out.push(rel);
  }
  return out.sort();
}

// binding.gyp is a Python literal; ours is JSON apart from whole-line # comments.
function bindingGyp(): { targets: Array<Record<string, unknown>> } {
  return JSON.parse(code('binding.gyp')) as { targets: Array<Record<string, unknown>> };
}

describe('native/sources.json', () => {
  // native/tools/ holds the mains of the standalone CUDA tools (CMakeLists.txt builds each as its
  // own executable); every other .cc file belongs to the addon.
  const TOOLS = 'native/tools/';
  it('lists every .cc file under native/ but the tools exactly once, as cpu sources', () => {
    expect([...sources.cpu].sort()).toEqual(filesUnder('native', '.cc').filter((f) => !f.startsWith(TOOLS)));
    expect(new Set(sources.cpu).size).toBe(sources.cpu.length);
  });

  it('lists every .cu file under native/ exactly once, as cuda sources', () => {
    expect([...sources.cuda].sort()).toEqual(filesUnder('native', '.cu'));
    expect(sources.cuda.length).toBeGreaterThan(0);
  });
});

describe('binding.gyp', () => {
  const target = bindingGyp().targets[0] ?? {};

  it('builds build/Release/platform.node from the cpu list', () => {
    expect(target['target_name']).toBe('platform');
    expect(target['sources']).toEqual([`<!@(node -p "require('./native/sources.json').cpu.join(' ')")`]);
    // What gyp's <!@(...) expansion yields, run the same way gyp runs it (cwd = package root).
    const expanded = execFileSync(process.execPath, ['-p', "require('./native/sources.json').cpu.join(' ')"], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(expanded.trim().split(' ')).toEqual(sources.cpu);
  });

  it('uses node-addon-api with C++ exceptions, N-API 8 and C++17', () => {
    expect(target['include_dirs']).toEqual([`<!(node -p "require('node-addon-api').include_dir")`]);
    expect(target['defines']).toEqual(expect.arrayContaining(['NAPI_VERSION=8', 'NAPI_CPP_EXCEPTIONS']));
    expect(target['cflags_cc!']).toContain('-fno-exceptions');
    expect(target['cflags_cc']).toEqual(expect.arrayContaining(['-std=c++17', '-O3', '-fexceptions']));
  });

  it('has no global ISA flags (kernels pick their ISA per function at run time)', () => {
    expect(code('binding.gyp')).not.toMatch(/-m(avx|sse|fma|arch)|-march|-mcpu|-mtune/);
  });
});

describe('CMakeLists.txt', () => {
  const cmake = read('CMakeLists.txt');

  it('reads both source lists from native/sources.json', () => {
    expect(cmake).toMatch(/cmake_minimum_required\(VERSION 3\.(19|[2-9]\d)/);
    expect(cmake).toContain('file(READ "${CMAKE_CURRENT_SOURCE_DIR}/native/sources.json"');
    expect(cmake).toContain('string(JSON');
    expect(cmake).toContain('platform_sources(PLATFORM_CPU_SOURCES cpu)');
    expect(cmake).toContain('platform_sources(PLATFORM_CUDA_SOURCES cuda)');
    expect(cmake).toContain('add_library(platform SHARED ${PLATFORM_CPU_SOURCES}');
    // no hand-written source list (only the tools' mains are named)
    expect(cmake.replace(/native\/tools\/\w+\.cc/g, '')).not.toMatch(/\bnative\/\w+\/\w+\.(cc|cu)\b/);
  });

  it('builds the standalone tools from native/tools/, each a main of its own', () => {
    for (const f of filesUnder('native/tools', '.cc')) expect(cmake).toContain(`\${CMAKE_CURRENT_SOURCE_DIR}/${f}`);
  });

  it('adds the CUDA sources, define, architectures and runtime when PLATFORM_CUDA is on', () => {
    expect(cmake).toContain('check_language(CUDA)');
    expect(cmake).toContain('target_sources(platform PRIVATE ${PLATFORM_CUDA_SOURCES})');
    expect(cmake).toContain('PLATFORM_WITH_CUDA=1');
    expect(cmake).toContain('"90a-real;80-real;80-virtual"');
    expect(cmake).toContain('CUDA::cudart');
    expect(cmake).toContain('NAPI_VERSION=8 NAPI_CPP_EXCEPTIONS');
  });

  it('has no global ISA flags', () => {
    expect(code('CMakeLists.txt')).not.toMatch(/-m(avx|sse|fma|arch)|-march|-mcpu|-mtune/);
  });
});
