// Shadow copies: run after the caller has its answer, each with its own timeout, through a
// bounded queue. When the queue is full a copy is dropped and counted, so a slow or failing
// shadow build can never pile up work or memory, nor touch the primary's latency or status.

export interface ShadowOptions {
  /** Copies running at once. */
  concurrency: number;
  /** Copies waiting; beyond this, new copies are dropped. */
  maxQueue: number;
  timeoutMs: number;
}

export class ShadowTimeoutError extends Error {
  constructor(ms: number) {
    super(`shadow request timed out after ${ms} ms`);
  }
}

type Task = () => Promise<void>;

export class ShadowDispatcher {
  private readonly queue: Task[] = [];
  private running = 0;
  dropped = 0;

  constructor(
    private readonly options: ShadowOptions,
    private readonly onDrop: () => void = () => {},
  ) {}

  /** Queues a copy; `run` races its work against `deadline`. Returns false if it was dropped. */
  submit(run: (deadline: Promise<never>) => Promise<void>): boolean {
    if (this.queue.length >= this.options.maxQueue) {
      this.dropped++;
      this.onDrop();
      return false;
    }
    this.queue.push(async () => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ShadowTimeoutError(this.options.timeoutMs)), this.options.timeoutMs);
      });
      deadline.catch(() => undefined);
      try {
        await run(deadline);
      } finally {
        clearTimeout(timer);
      }
    });
    this.pump();
    return true;
  }

  get pending(): number {
    return this.queue.length + this.running;
  }

  private pump(): void {
    while (this.running < this.options.concurrency && this.queue.length > 0) {
      const task = this.queue.shift()!;
      this.running++;
      // Start on the next turn, after the caller's response has been handed to the socket.
      setImmediate(() => {
        void task()
          .catch(() => undefined)
          .finally(() => {
            this.running--;
            this.pump();
          });
      });
    }
  }
}
