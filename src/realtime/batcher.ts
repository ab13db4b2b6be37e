// Dynamic batching: concurrent predict requests for one build are joined into one native call.
// A request waits at most `maxWaitMicros` for company, and a batch never exceeds `maxBatchRows`
// (a single larger request runs alone). While `maxInFlight` calls are running, new requests
// queue up, so batches grow with load instead of calls piling up on the engine's threads.
import type { TabularInput, TabularOutput } from '../tabular/executor/index.js';
import { concatRows, sliceRows } from './batch-rows.js';

export interface BatcherOptions {
  maxBatchRows: number;
  maxWaitMicros: number;
  maxInFlight: number;
}

export type RunBatch = (inputs: TabularInput[]) => Promise<TabularOutput[]>;

interface Pending {
  inputs: TabularInput[];
  rows: number;
  resolve: (outputs: TabularOutput[]) => void;
  reject: (err: unknown) => void;
}

export class Batcher {
  private queue: Pending[] = [];
  private queuedRows = 0;
  private inFlight = 0;
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;

  private readonly options: BatcherOptions;

  constructor(
    private readonly run: RunBatch,
    options: BatcherOptions,
    /** Called with the rows of every native call, for metrics. */
    private readonly onBatch: (rows: number, requests: number) => void = () => {},
  ) {
    this.options = { ...options };
  }

  submit(inputs: TabularInput[], rows: number): Promise<TabularOutput[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ inputs, rows, resolve, reject });
      this.queuedRows += rows;
      this.schedule();
    });
  }

  /** Changes the batch size and wait from the next batch on. */
  configure(options: Partial<Pick<BatcherOptions, 'maxBatchRows' | 'maxWaitMicros'>>): void {
    Object.assign(this.options, options);
  }

  /** Requests waiting or running. */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  private schedule(): void {
    if (this.queuedRows >= this.options.maxBatchRows) {
      this.flush();
      return;
    }
    if (this.timer !== undefined) return;
    const wait = this.options.maxWaitMicros;
    // Timers have millisecond resolution: below that, wait one turn of the event loop, which
    // collects every request whose body was parsed in the same I/O phase.
    this.timer = wait < 1000 ? setImmediate(() => this.flush()) : setTimeout(() => this.flush(), wait / 1000);
  }

  private flush(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = undefined;
    }
    while (this.queue.length > 0 && this.inFlight < this.options.maxInFlight) {
      const batch: Pending[] = [this.queue.shift()!];
      let rows = batch[0]!.rows;
      while (this.queue.length > 0 && rows + this.queue[0]!.rows <= this.options.maxBatchRows) {
        const next = this.queue.shift()!;
        rows += next.rows;
        batch.push(next);
      }
      this.queuedRows -= rows;
      this.inFlight++;
      void this.execute(batch, rows).finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.flush();
      });
    }
  }

  private async execute(batch: Pending[], rows: number): Promise<void> {
    this.onBatch(rows, batch.length);
    if (batch.length === 1) {
      const only = batch[0]!;
      await this.run(only.inputs).then(only.resolve, only.reject);
      return;
    }
    let outputs: TabularOutput[];
    try {
      const joined = batch[0]!.inputs.map((_, i) => concatRows(batch.map((p) => p.inputs[i]!)));
      outputs = await this.run(joined);
    } catch {
      // One bad request must not fail its neighbours: run each alone to find out whose it was.
      await Promise.all(batch.map((p) => this.run(p.inputs).then(p.resolve, p.reject)));
      return;
    }
    if (!outputs.every((o) => o.dims[0] === rows)) {
      // An output that is not batch-major cannot be split: answer each request on its own.
      await Promise.all(batch.map((p) => this.run(p.inputs).then(p.resolve, p.reject)));
      return;
    }
    let start = 0;
    for (const p of batch) {
      p.resolve(outputs.map((o) => sliceRows(o, start, p.rows)));
      start += p.rows;
    }
  }
}
