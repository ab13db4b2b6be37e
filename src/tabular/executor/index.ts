// The native tabular (ONNX) executor, as the host uses it:
//
//   const model = compileTabularModel(normalize(parseOnnxModel(bytes)));
//   const [label, probabilities] = await model.run([{ name: 'input', dims: [n, 4], data }]);
//   model.dispose();
//
// Compilation validates the whole model natively (operators, attributes, static shapes and types)
// and throws an Error naming the node and operator when it cannot run. run() copies the inputs
// and computes on a worker thread, never on the event loop; bad inputs reject with TypeError (a
// wrong data type) or RangeError (unknown or missing input, dims that do not match the data or the
// model), and failures while running reject with an Error naming the node.
import type { NormalizedModel } from '../onnx/types.js';
import { loadTabularAddon, type NativeCompileOptions, type NativeTabularModel } from './native.js';
import type { TabularInput, TabularModelInfo, TabularOutput } from './types.js';

export type {
  TabularElementType,
  TabularInput,
  TabularInputData,
  TabularModelInfo,
  TabularOutput,
  TabularOutputData,
  TabularValueInfo,
} from './types.js';
export { loadTabularAddon, type NativeCompileOptions, type NativeTabularModel, type TabularDevice, type TabularNativeAddon } from './native.js';

export type CompileTabularOptions = NativeCompileOptions;

export interface TabularModel {
  /** Runs the model off the JavaScript thread; outputs in graph-output order. */
  run(inputs: readonly TabularInput[]): Promise<TabularOutput[]>;
  /** The same on the calling thread (tests, benchmarks, tools). */
  runSync(inputs: readonly TabularInput[]): TabularOutput[];
  describe(): TabularModelInfo;
  /** Releases the native model; runs already started still complete. Idempotent. */
  dispose(): void;
  readonly disposed: boolean;
}

class CompiledTabularModel implements TabularModel {
  #native: NativeTabularModel;
  #disposed = false;

  constructor(native: NativeTabularModel) {
    this.#native = native;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  run(inputs: readonly TabularInput[]): Promise<TabularOutput[]> {
    return this.#native.run(inputs);
  }

  runSync(inputs: readonly TabularInput[]): TabularOutput[] {
    return this.#native.runSync(inputs);
  }

  describe(): TabularModelInfo {
    return this.#native.describe();
  }

  dispose(): void {
    this.#disposed = true;
    this.#native.dispose();
  }
}

/**
 * Compiles a normalised model (`normalize(parseOnnxModel(bytes))`) with the native executor.
 * @throws Error with the native message (naming the node and operator) for a model it cannot run;
 *   TypeError for an object that is not a NormalizedModel; AddonLoadError without an addon.
 */
export function compileTabularModel(model: NormalizedModel, options: CompileTabularOptions = {}): TabularModel {
  return new CompiledTabularModel(loadTabularAddon().tabularCompile(model, options));
}
