// The tabular executor's part of the native addon: the shape of its exports and how to get them.
// The addon itself is loaded by src/native/addon.ts; this file only describes and reads the
// tabular functions (native/addon/tabular_binding.cc) from it.
import { AddonLoadError, loadAddon, type LoadAddonOptions } from '../../native/addon.js';
import type { NormalizedModel } from '../onnx/types.js';
import type { TabularInput, TabularModelInfo, TabularOutput } from './types.js';

/** Where a compiled model runs its float Gemm / MatMul products (every other operator: the CPU). */
export type TabularDevice = 'cpu' | 'cuda';

export interface NativeCompileOptions {
  /** Threads per run; 0 or absent: the engine default (PLATFORM_THREADS or all cores). At most 256. */
  threads?: number;
  /**
   * 'cuda': products of at least `cudaMinRows` rows run on CUDA device 0. Compiling fails with an
   * Error ("instance type cuda is not available on this host: ...") when the addon has no CUDA
   * backend or no usable device. Default 'cpu'.
   */
  device?: TabularDevice;
  /**
   * CUDA only: the batch rows from which products run on the device (smaller batches are faster
   * on the CPU). 0: always on the device. Default: env PLATFORM_TABULAR_CUDA_MIN_ROWS, else the
   * engine's measured crossover.
   */
  cudaMinRows?: number;
}

/** A compiled model as the addon returns it (class TabularModel in tabular_binding.cc). */
export interface NativeTabularModel {
  /** Copies the inputs, runs on a libuv worker; rejects (never throws) on bad inputs or errors. */
  run(inputs: readonly TabularInput[]): Promise<TabularOutput[]>;
  /** Runs on the calling thread; throws TypeError / RangeError / Error. */
  runSync(inputs: readonly TabularInput[]): TabularOutput[];
  describe(): TabularModelInfo;
  /** Frees the compiled graph (runs in flight finish first); later calls fail. Idempotent. */
  dispose(): void;
}

export interface TabularNativeAddon {
  /** Throws TypeError for a malformed model object, Error for a model the executor refuses. */
  tabularCompile(model: NormalizedModel, options?: NativeCompileOptions): NativeTabularModel;
}

/**
 * The addon's tabular functions.
 * @throws AddonLoadError when no addon loads, or when the loaded one predates the executor.
 */
export function loadTabularAddon(options: LoadAddonOptions = {}): TabularNativeAddon {
  const addon = loadAddon(options) as unknown as Partial<TabularNativeAddon>;
  if (typeof addon.tabularCompile !== 'function') {
    throw new AddonLoadError(
      'the native addon has no tabular executor (tabularCompile is missing): run "npm run build:native"',
      [],
    );
  }
  return addon as TabularNativeAddon;
}
