// loadAddon(): search order, fallback from a broken CUDA build, and the one-line error that
// names the fix when nothing loads.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AddonLoadError, CPU_ADDON, CUDA_ADDON, loadAddon, packageRoot } from '../src/native/addon.js';

const root = packageRoot();
const realAddon = path.join(root, CPU_ADDON);
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'platform-addon-'));
});
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function loadError(run: () => unknown): AddonLoadError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AddonLoadError);
    const e = error as AddonLoadError;
    expect(e.name).toBe('AddonLoadError');
    expect(e.message).not.toContain('\n');
    return e;
  }
  throw new Error('expected loadAddon to throw');
}

// A fake package root with optional build outputs: 'real' links the built addon, 'junk' is a
// file that is not a shared library.
function fakeRoot(name: string, files: Partial<Record<'cpu' | 'cuda', 'real' | 'junk'>>): string {
  const dir = path.join(scratch, name);
  for (const [kind, content] of Object.entries(files)) {
    const file = path.join(dir, kind === 'cpu' ? CPU_ADDON : CUDA_ADDON);
    mkdirSync(path.dirname(file), { recursive: true });
    if (content === 'real') symlinkSync(realAddon, file);
    else writeFileSync(file, 'this is not a shared library\n');
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('loadAddon', () => {
  it('finds the package root from its own location', () => {
    expect(existsSync(path.join(root, 'package.json'))).toBe(true);
    expect(existsSync(path.join(root, 'src', 'native', 'addon.ts'))).toBe(true);
    expect(loadAddon().engineInfo().version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('PLATFORM_ADDON_PATH pointing at a missing file', () => {
    const missing = path.join(scratch, 'nowhere', 'platform.node');
    const e = loadError(() => loadAddon({ env: { PLATFORM_ADDON_PATH: missing } }));
    expect(e.message).toBe(
      `native addon not built (PLATFORM_ADDON_PATH=${missing} is missing): ` +
        'point PLATFORM_ADDON_PATH at a built platform.node, or unset it and run "npm run build:native"',
    );
    expect(e.attempts).toEqual([{ path: missing, error: 'missing' }]);
  });

  it('PLATFORM_ADDON_PATH pointing at a file that is not an addon', () => {
    const junk = path.join(scratch, 'junk.node');
    writeFileSync(junk, 'not an ELF, Mach-O or PE file\n');
    const e = loadError(() => loadAddon({ env: { PLATFORM_ADDON_PATH: junk } }));
    expect(e.message).toMatch(/^native addon failed to load \(.+\): point PLATFORM_ADDON_PATH at a platform\.node built for this machine, or unset it and run "npm run build:native"$/);
    expect(e.message).toContain(junk);
    if (process.platform === 'linux') expect(e.message).toMatch(/invalid ELF header|file too short/);
  });

  it('PLATFORM_ADDON_PATH pointing at a module without the addon exports', () => {
    const other = path.join(scratch, 'other.cjs');
    writeFileSync(other, 'module.exports = { engineInfo() {} };\n');
    const e = loadError(() => loadAddon({ env: { PLATFORM_ADDON_PATH: other } }));
    expect(e.message).toBe(
      `native addon failed to load (${other} does not export gemmF32, gemmF32Async, gemvF32, gemvF32Async, llmLoadModel, llmGenerate, llmLogits, llmEmbed, ` +
        'llmCancel, llmStats, llmModelInfo, llmUnload, llmSetTokenBytes, llmCompileGrammar, llmGrammarStates, llmOptionLimits, embedLoadModel, embedRun, embedModelInfo, embedUnload, tabularCompile): ' +
        'point PLATFORM_ADDON_PATH at a platform.node built for this machine, or unset it and run "npm run build:native"',
    );
  });

  it('PLATFORM_ADDON_PATH pointing at the real addon loads only that', () => {
    const addon = loadAddon({ env: { PLATFORM_ADDON_PATH: realAddon }, root: fakeRoot('unused', {}) });
    expect(typeof addon.gemmF32).toBe('function');
  });

  it('nothing built', () => {
    const e = loadError(() => loadAddon({ env: {}, root: fakeRoot('empty', {}) }));
    expect(e.message).toBe('native addon not built (build/Release/platform.node is missing): run "npm run build:native"');
  });

  it('a CPU build that fails to load', () => {
    const e = loadError(() => loadAddon({ env: {}, root: fakeRoot('broken-cpu', { cpu: 'junk' }) }));
    expect(e.message).toMatch(/^native addon failed to load \(.*platform\.node.*\): run "npm run build:native"$/);
  });

  it('falls back to the CPU build when the CUDA build does not load', () => {
    const dir = fakeRoot('broken-cuda', { cuda: 'junk', cpu: 'real' });
    const addon = loadAddon({ env: {}, root: dir });
    expect(typeof addon.gemmF32).toBe('function');
  });

  it('prefers the CUDA build when it loads', () => {
    const dir = fakeRoot('cuda-ok', { cuda: 'real' });
    expect(typeof loadAddon({ env: {}, root: dir }).engineInfo).toBe('function');
  });

  it('mentions the CUDA failure when neither build loads', () => {
    const e = loadError(() => loadAddon({ env: {}, root: fakeRoot('broken-both', { cuda: 'junk' }) }));
    expect(e.message).toMatch(
      /^native addon not built \(build\/Release\/platform\.node is missing; build-cuda\/Release\/platform\.node failed to load: .+\): run "npm run build:native"$/,
    );
    expect(e.attempts.map((a) => path.relative(path.join(scratch, 'broken-both'), a.path))).toEqual([CUDA_ADDON, CPU_ADDON]);
  });

  it('reads PLATFORM_ADDON_PATH from the environment of a real process', () => {
    const missing = path.join(scratch, 'child', 'missing.node');
    const script =
      `import('${pathToImport(path.join(root, 'src/native/addon.ts'))}').then((m) => {` +
      `  try { m.loadAddon(); console.log('loaded'); } catch (e) { console.log(e.name + ': ' + e.message); }` +
      `});`;
    const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      env: { ...process.env, PLATFORM_ADDON_PATH: missing },
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe(
      `AddonLoadError: native addon not built (PLATFORM_ADDON_PATH=${missing} is missing): ` +
        'point PLATFORM_ADDON_PATH at a built platform.node, or unset it and run "npm run build:native"',
    );
  });
});

function pathToImport(file: string): string {
  return new URL(`file://${file}`).href;
}

describe('environment knobs', () => {
  // engineInfo() from a fresh process, so the process-wide defaults are read again.
  function infoWith(env: Record<string, string>): { simd: { active: string; warning?: string }; threads: number } {
    const out = execFileSync(
      process.execPath,
      ['-e', `console.log(JSON.stringify(require(${JSON.stringify(realAddon)}).engineInfo()))`],
      { env: { ...process.env, ...env }, encoding: 'utf8' },
    );
    return JSON.parse(out) as { simd: { active: string; warning?: string }; threads: number };
  }

  it('PLATFORM_SIMD lowers the default level', () => {
    expect(infoWith({ PLATFORM_SIMD: 'scalar' }).simd.active).toBe('scalar');
  });

  it('PLATFORM_SIMD asking for an unsupported level falls back to the best one below it', () => {
    const available = loadAddon().engineInfo().simd.available;
    const active = infoWith({ PLATFORM_SIMD: 'neon' }).simd.active;
    expect(active).toBe(available.includes('neon') ? 'neon' : 'scalar');
  });

  it('an unknown PLATFORM_SIMD is ignored with a warning', () => {
    const info = infoWith({ PLATFORM_SIMD: 'sse9' });
    expect(info.simd.active).toBe(loadAddon().engineInfo().simd.detected);
    expect(info.simd.warning).toBe(
      `PLATFORM_SIMD=sse9 is not one of scalar, neon, avx2, avx512; using ${loadAddon().engineInfo().simd.detected}`,
    );
  });

  it('PLATFORM_THREADS sets the default thread count', () => {
    expect(infoWith({ PLATFORM_THREADS: '3' }).threads).toBe(3);
  });
});
