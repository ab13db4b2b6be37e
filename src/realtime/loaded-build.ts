// A build made ready to serve: its feature schema, the compiled native model and the batcher in
// front of it. One LoadedBuild serves every variation that points at the same build.
import type { TabularInput, TabularModel, TabularOutput } from '../tabular/executor/index.js';
import { Batcher, type BatcherOptions } from './batcher.js';
import type { InstanceType } from '../native/surface.js';
import type { ServingSchema } from './builds.js';

export class LoadedBuild {
  readonly batcher: Batcher;

  constructor(
    readonly buildId: string,
    readonly instanceType: InstanceType,
    readonly schema: ServingSchema,
    private readonly model: TabularModel,
    options: BatcherOptions,
    onBatch?: (rows: number, requests: number) => void,
  ) {
    this.batcher = new Batcher((inputs) => model.run(inputs), options, onBatch);
  }

  predict(inputs: TabularInput[], rows: number): Promise<TabularOutput[]> {
    return this.batcher.submit(inputs, rows);
  }

  /** Frees the native model once no request is waiting on it. */
  async dispose(): Promise<void> {
    while (this.batcher.pending > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    this.model.dispose();
  }
}
