// Loads the native addon (native/, built by binding.gyp or CMakeLists.txt); its exports are
// typed in surface.ts. The search order is:
//   1. env PLATFORM_ADDON_PATH, when set: only that file;
//   2. build-cuda/Release/platform.node (`npm run build:cuda`), when present and loadable;
//   3. build/Release/platform.node (`npm install` / `npm run build:native`).
// Paths 2 and 3 are relative to the package root, found from this file's location, so the same
// code works from src/native/addon.ts (vitest, tsx) and dist/native/addon.js (compiled).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { NATIVE_EXPORTS, type NativeAddon } from './surface.js';

export interface AddonLoadAttempt {
  path: string;
  error: string;
}

/** No addon could be loaded. `message` is one line that names the fix; `attempts` has details. */
export class AddonLoadError extends Error {
  override readonly name = 'AddonLoadError';
  readonly attempts: readonly AddonLoadAttempt[];

  constructor(message: string, attempts: readonly AddonLoadAttempt[]) {
    super(message);
    this.attempts = attempts;
  }
}

export const CPU_ADDON = 'build/Release/platform.node';
export const CUDA_ADDON = 'build-cuda/Release/platform.node';
const BUILD_FIX = 'run "npm run build:native"';

/** The directory holding this package's package.json (searched upwards from this file). */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

export interface LoadAddonOptions {
  /** Environment to read PLATFORM_ADDON_PATH from (default process.env). */
  env?: Record<string, string | undefined>;
  /** Package root (default packageRoot()). */
  root?: string;
}

const loaded = new Map<string, NativeAddon>();

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split('\n')[0] ?? '').trim() || 'unknown error';
}

// Loads one file; returns the addon or the reason it could not be used.
function tryLoad(file: string): NativeAddon | string {
  const cached = loaded.get(file);
  if (cached) return cached;
  let mod: unknown;
  try {
    mod = createRequire(import.meta.url)(file);
  } catch (error) {
    return firstLine(error);
  }
  const missing = NATIVE_EXPORTS.filter((name) => (mod as Record<string, unknown> | null)?.[name] === undefined);
  if (missing.length > 0) return `${file} does not export ${missing.join(', ')}`;
  const addon = mod as NativeAddon;
  loaded.set(file, addon);
  return addon;
}

/**
 * Loads the native addon (see the search order at the top of this file).
 * @throws AddonLoadError with a one-line message naming the fix.
 */
export function loadAddon(options: LoadAddonOptions = {}): NativeAddon {
  const env = options.env ?? process.env;
  const override = env['PLATFORM_ADDON_PATH'];
  // Every wrapper call comes through here: answer repeated lookups without touching the disk.
  const key = `${override ?? ''}\0${options.root ?? ''}`;
  const resolved = resolvedBy.get(key);
  if (resolved) return resolved;
  const addon = locateAddon(override, options.root);
  resolvedBy.set(key, addon);
  return addon;
}

const resolvedBy = new Map<string, NativeAddon>();

function locateAddon(override: string | undefined, rootOption: string | undefined): NativeAddon {
  if (override !== undefined && override !== '') {
    const file = path.resolve(override);
    if (!existsSync(file)) {
      throw new AddonLoadError(
        `native addon not built (PLATFORM_ADDON_PATH=${file} is missing): ` +
          `point PLATFORM_ADDON_PATH at a built platform.node, or unset it and ${BUILD_FIX}`,
        [{ path: file, error: 'missing' }],
      );
    }
    const result = tryLoad(file);
    if (typeof result !== 'string') return result;
    throw new AddonLoadError(
      `native addon failed to load (${result}): ` +
        `point PLATFORM_ADDON_PATH at a platform.node built for this machine, or unset it and ${BUILD_FIX}`,
      [{ path: file, error: result }],
    );
  }

  const root = rootOption ?? packageRoot();
  const attempts: AddonLoadAttempt[] = [];
  const cudaFile = path.join(root, CUDA_ADDON);
  if (existsSync(cudaFile)) {
    const result = tryLoad(cudaFile);
    if (typeof result !== 'string') return result;
    attempts.push({ path: cudaFile, error: result }); // fall back to the CPU build
  }
  const cpuFile = path.join(root, CPU_ADDON);
  const cudaNote = attempts.length > 0 ? `; ${CUDA_ADDON} failed to load: ${attempts[0]?.error}` : '';
  if (!existsSync(cpuFile)) {
    attempts.push({ path: cpuFile, error: 'missing' });
    throw new AddonLoadError(`native addon not built (${CPU_ADDON} is missing${cudaNote}): ${BUILD_FIX}`, attempts);
  }
  const result = tryLoad(cpuFile);
  if (typeof result !== 'string') return result;
  attempts.push({ path: cpuFile, error: result });
  throw new AddonLoadError(`native addon failed to load (${result}${cudaNote}): ${BUILD_FIX}`, attempts);
}
