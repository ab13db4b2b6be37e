// The production CompileModel: the native tabular executor from src/tabular/executor.
import { compileTabularModel } from '../tabular/executor/index.js';
import type { CompileModel } from './loaded-build.js';

export const compileWithNativeExecutor: CompileModel = (model, { instanceType }) => {
  const compiled = compileTabularModel(model, { device: instanceType });
  return {
    run: (inputs) => compiled.run(inputs),
    dispose: () => compiled.dispose(),
  };
};
