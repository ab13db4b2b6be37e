// The two build files (binding.gyp for the CPU build, CMakeLists.txt for the CUDA build) must
// compile the same sources, taken from the lists of native/sources.json: the engine once, as a
// library both addons link, and test and measurement code only where it belongs.
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
  engine: string[];
  no_cuda: string[];
  cuda: string[];
  addon: string[];
  testing: string[];
  tools_cuda: string[];
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
interface GypTarget {
  target_name: string;
  type?: string;
  sources: string[];
  dependencies?: string[];
  cflags?: string[];
}
function bindingGyp(): { target_defaults: Record<string, unknown>; targets: GypTarget[] } {
  return JSON.parse(code('binding.gyp')) as { target_defaults: Record<string, unknown>; targets: GypTarget[] };
}

// What gyp's <!@(...) expansion of a sources entry yields, run the same way gyp runs it (cwd = package root).
function expand(entry: string): string[] {
  const command = /^<!@\(node -p "(.*)"\)$/.exec(entry)?.[1];
  if (command === undefined) throw new Error(`not a <!@(node -p ...) expansion: ${entry}`);
  return execFileSync(process.execPath, ['-p', command], { cwd: root, encoding: 'utf8' }).trim().split(' ');
}

// The argument reader and the error contract, compiled into both addons.
const SHARED = ['native/addon/args.cc', 'native/addon/errors.cc'];

describe('native/sources.json', () => {
  const sorted = (list: string[]) => [...list].sort();
  // native/tools/*.cc are the mains of the standalone tools (CMakeLists.txt builds each as its own
  // executable); every other source file is in one list.
  const underAny = (file: string, dirs: string[]) => dirs.some((d) => file.startsWith(`native/${d}/`));

  it('engine: every .cc file below the addon (core, ggml, backends/cpu, llm, tabular)', () => {
    const engine = filesUnder('native', '.cc').filter((f) => underAny(f, ['core', 'ggml', 'backends/cpu', 'llm', 'tabular']));
    expect(sorted(sources.engine)).toEqual(engine);
  });

  it('cuda and no_cuda: the CUDA backends, and the one file a build without them compiles instead', () => {
    expect(sorted(sources.cuda)).toEqual(filesUnder('native/backends', '.cu'));
    expect(sources.cuda.length).toBeGreaterThan(0);
    expect(sources.no_cuda).toEqual(['native/backends/cuda/not_built.cc']);
    expect(filesUnder('native/backends', '.cc').filter((f) => !f.startsWith('native/backends/cpu/'))).toEqual(sources.no_cuda);
  });

  it('addon and testing: the two N-API modules, sharing only the argument reader and the error contract', () => {
    expect(sorted(sources.addon)).toEqual(filesUnder('native/addon', '.cc'));
    expect(sorted(sources.testing)).toEqual(sorted([...filesUnder('native/testing', '.cc'), ...SHARED]));
    expect(sources.addon.filter((f) => sources.testing.includes(f))).toEqual(SHARED);
  });

  it('tools_cuda: the CUDA code of the standalone tools, kept out of both addons', () => {
    expect(sorted(sources.tools_cuda)).toEqual(filesUnder('native/tools', '.cu'));
    expect(sources.tools_cuda.map((f) => path.posix.basename(f)).sort()).toEqual(['bandwidth.cu', 'kernel_check.cu']);
  });

  it('lists every source file under native/ once (the tools\' mains are CMake\'s)', () => {
    const all = [...sources.engine, ...sources.no_cuda, ...sources.cuda, ...sources.addon, ...sources.testing, ...sources.tools_cuda];
    const once = all.filter((f) => !SHARED.includes(f));
    expect(new Set(once).size).toBe(once.length);
    const mains = filesUnder('native/tools', '.cc').filter((f) => path.posix.dirname(f) === 'native/tools');
    expect(sorted([...new Set(all), ...mains])).toEqual(sorted([...filesUnder('native', '.cc'), ...filesUnder('native', '.cu')]));
  });
});

describe('binding.gyp', () => {
  const gyp = bindingGyp();
  const target = (name: string): GypTarget => {
    const t = gyp.targets.find((x) => x.target_name === name);
    if (t === undefined) throw new Error(`binding.gyp has no target ${name}`);
    return t;
  };

  it('compiles the engine once, as a position-independent static library, with the no-CUDA stand-in', () => {
    const engine = target('platform_engine');
    expect(engine.type).toBe('static_library');
    expect(engine.cflags).toContain('-fPIC');
    expect(engine.sources.flatMap(expand)).toEqual([...sources.engine, ...sources.no_cuda]);
  });

  it('builds build/Release/platform.node from the addon list and the engine library', () => {
    const addon = target('platform');
    expect(addon.type).toBeUndefined(); // node-gyp's default: a loadable module, platform.node
    expect(addon.dependencies).toEqual(['platform_engine']);
    expect(addon.sources.flatMap(expand)).toEqual(sources.addon);
  });

  it('builds build/Release/platform_testing.node from the testing list and the same library', () => {
    const testing = target('platform_testing');
    expect(testing.type).toBeUndefined();
    expect(testing.dependencies).toEqual(['platform_engine']);
    expect(testing.sources.flatMap(expand)).toEqual(sources.testing);
  });

  it('uses node-addon-api with C++ exceptions, N-API 8 and C++17 for every target', () => {
    const d = gyp.target_defaults;
    expect(d['include_dirs']).toEqual([`<!(node -p "require('node-addon-api').include_dir")`]);
    expect(d['defines']).toEqual(expect.arrayContaining(['NAPI_VERSION=8', 'NAPI_CPP_EXCEPTIONS']));
    expect(d['cflags_cc!']).toContain('-fno-exceptions');
    expect(d['cflags_cc']).toEqual(expect.arrayContaining(['-std=c++17', '-O3', '-fexceptions']));
  });

  it('has no global ISA flags (kernels pick their ISA per function at run time)', () => {
    expect(code('binding.gyp')).not.toMatch(/-m(avx|sse|fma|arch)|-march|-mcpu|-mtune/);
  });
});

describe('CMakeLists.txt', () => {
  const cmake = read('CMakeLists.txt');

  it('reads every source list from native/sources.json', () => {
    expect(cmake).toMatch(/cmake_minimum_required\(VERSION 3\.(19|[2-9]\d)/);
    expect(cmake).toContain('file(READ "${CMAKE_CURRENT_SOURCE_DIR}/native/sources.json"');
    expect(cmake).toContain('string(JSON');
    for (const key of Object.keys(sources)) expect(cmake).toMatch(new RegExp(`platform_sources\\(PLATFORM_\\w+_SOURCES ${key}\\)`));
    // no hand-written source list (only the tools' mains are named)
    expect(cmake.replace(/native\/tools\/\w+\.cc/g, '')).not.toMatch(/\bnative\/[\w/]+\.(cc|cu)\b/);
  });

  it('links both addons against one engine library: CUDA sources or their stand-in', () => {
    expect(cmake).toContain('add_library(${name} STATIC ${PLATFORM_ENGINE_SOURCES} ${PLATFORM_CUDA_SOURCES})');
    expect(cmake).toContain('add_library(${name} STATIC ${PLATFORM_ENGINE_SOURCES} ${PLATFORM_NO_CUDA_SOURCES})');
    expect(cmake).toContain('POSITION_INDEPENDENT_CODE ON');
    expect(cmake).toContain('add_library(platform SHARED ${PLATFORM_ADDON_SOURCES}');
    expect(cmake).toContain('add_library(platform_testing SHARED ${PLATFORM_TESTING_SOURCES}');
    expect(cmake).toContain('target_link_libraries(${addon} PRIVATE platform_engine');
  });

  it('builds the standalone tools from native/tools/, each a main of its own, the CUDA checks apart', () => {
    for (const f of filesUnder('native/tools', '.cc')) expect(cmake).toContain(`\${CMAKE_CURRENT_SOURCE_DIR}/${f}`);
    expect(cmake).toContain('add_library(platform_tools_cuda STATIC ${PLATFORM_TOOLS_CUDA_SOURCES})');
  });

  it('adds the CUDA define, architectures and runtime when PLATFORM_CUDA is on', () => {
    expect(cmake).toContain('check_language(CUDA)');
    expect(cmake).toContain('PLATFORM_WITH_CUDA=1');
    expect(cmake).toContain('"90a-real;80-real;80-virtual"');
    expect(cmake).toContain('CUDA::cudart');
    expect(cmake).toContain('NAPI_VERSION=8 NAPI_CPP_EXCEPTIONS');
  });

  it('has no global ISA flags', () => {
    expect(code('CMakeLists.txt')).not.toMatch(/-m(avx|sse|fma|arch)|-march|-mcpu|-mtune/);
  });
});
