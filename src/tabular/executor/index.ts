// The native tabular (ONNX) executor, as the host uses it:
//
//   const model = compileTabularModel(normalize(parseOnnxModel(bytes)));
//   const [label, probabilities] = await model.run([{ name: 'input', dims: [n, 4], data }]);
//   model.dispose();
//
// Compilation validates the whole model natively (operators, attributes, static shapes and types)
// and throws an Error with code 'model_refused' naming the node and operator when it cannot run.
// run() copies the inputs and computes on a worker thread, never on the event loop; bad inputs
// reject with TypeError (a wrong data type) or RangeError (unknown or missing input, dims that do
// not match the data or the model), and failures while running reject with an Error 'run_failed'
// naming the node. The model object is the addon's own (TabularModel in src/native/surface.ts).
import { loadAddon } from '../../native/addon.js';
import type { TabularCompileOptions, TabularElementType, TabularModel } from '../../native/surface.js';
import type { ElementType, NormalizedModel } from '../onnx/types.js';

export type {
  TabularCompileOptions,
  TabularElementType,
  TabularInput,
  TabularInputData,
  TabularModel,
  TabularModelInfo,
  TabularOutput,
  TabularOutputData,
  TabularValueInfo,
} from '../../native/surface.js';

// The executor computes float16 / bfloat16 values as float: its element types are the parser's
// others. (A difference between the two lists fails to compile here.)
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const elementTypesAgree: Same<TabularElementType, Exclude<ElementType, 'float16' | 'bfloat16'>> = true;
void elementTypesAgree;

/**
 * Compiles a normalised model (`normalize(parseOnnxModel(bytes))`) with the native executor.
 * @throws Error 'model_refused' (naming the node and operator) for a model it cannot run,
 *   Error 'unavailable' for device 'cuda' where it cannot run, TypeError for an object that is
 *   not a NormalizedModel, AddonLoadError without an addon.
 */
export function compileTabularModel(model: NormalizedModel, options: TabularCompileOptions = {}): TabularModel {
  return loadAddon().tabularCompile(model, options);
}
