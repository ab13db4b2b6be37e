// Whether this host can run work on CUDA device 0, from what the native addon reports about
// itself (engineInfo().cuda). One answer for every part of the host that offers `--instance-type
// cuda`, so that a refusal always gives the same reason.
import { loadAddon } from './addon.js';
import type { EngineInfo } from './surface.js';

/**
 * Why `cuda` is not available here, or null when it is:
 * - the addon was built without the CUDA backend: "this addon was built without CUDA (run `npm run build:cuda`)";
 * - built with it, but no device: the runtime's error (no driver, ...) or "no CUDA device found".
 * `info` is the addon's engineInfo().cuda; read from the loaded addon when absent. Never throws.
 */
export function cudaUnavailableReason(info?: EngineInfo['cuda']): string | null {
  let cuda = info;
  if (cuda === undefined) {
    try {
      cuda = loadAddon().engineInfo().cuda;
    } catch (err) {
      return `the native addon could not be loaded: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  if (!cuda.built) return 'this addon was built without CUDA (run `npm run build:cuda`)';
  if (cuda.devices.length === 0) return cuda.error ?? 'no CUDA device found';
  return null;
}
