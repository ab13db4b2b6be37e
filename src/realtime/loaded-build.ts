// A build made ready to serve: its feature schema, the compiled native model and the batcher in
// front of it. One LoadedBuild serves every variation that points at the same build.
import type { FeatureSchema, NormalizedModel } from '../tabular/onnx/index.js';
import { Batcher, type BatcherOptions } from './batcher.js';
import type { HostTensor, OutputTensor } from './tensors.js';
import type { InstanceType } from './traffic.js';

/** The native executor, as the realtime layer needs it. */
export interface CompiledModel {
  run(inputs: HostTensor[]): Promise<OutputTensor[]>;
  dispose(): void;
}

export interface CompileModelOptions {
  /** cuda: float Gemm / MatMul on CUDA device 0 for large batches; throws when unavailable. */
  instanceType: InstanceType;
}

export type CompileModel = (model: NormalizedModel, options: CompileModelOptions) => CompiledModel;

export class LoadedBuild {
  readonly batcher: Batcher;

  constructor(
    readonly buildId: string,
    readonly instanceType: InstanceType,
    readonly schema: FeatureSchema,
    private readonly compiled: CompiledModel,
    options: BatcherOptions,
    onBatch?: (rows: number, requests: number) => void,
  ) {
    this.batcher = new Batcher((inputs) => compiled.run(inputs), options, onBatch);
  }

  predict(inputs: HostTensor[], rows: number): Promise<OutputTensor[]> {
    return this.batcher.submit(inputs, rows);
  }

  /** Frees the native model once no request is waiting on it. */
  async dispose(): Promise<void> {
    while (this.batcher.pending > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    this.compiled.dispose();
  }
}
