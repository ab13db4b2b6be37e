// Counts failed key exchanges per client address in a sliding window, so that guessing keys is
// slowed to a crawl while a client with a good key is never held up by someone else's failures.

export class FailureLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Seconds until `client` may try again, or 0 when it may try now. */
  retryAfterSeconds(client: string): number {
    const recent = this.recent(client);
    if (recent.length < this.limit) return 0;
    const oldest = recent[recent.length - this.limit]!;
    return Math.max(1, Math.ceil((oldest + this.windowMs - this.clock()) / 1000));
  }

  recordFailure(client: string): void {
    const recent = this.recent(client);
    recent.push(this.clock());
    this.failures.set(client, recent);
    if (this.failures.size > 10_000) this.sweep();
  }

  private recent(client: string): number[] {
    const since = this.clock() - this.windowMs;
    return (this.failures.get(client) ?? []).filter((t) => t > since);
  }

  // Bounds memory under a spray of addresses: forget clients whose failures have all expired.
  private sweep(): void {
    for (const client of [...this.failures.keys()]) {
      const recent = this.recent(client);
      if (recent.length === 0) this.failures.delete(client);
      else this.failures.set(client, recent);
    }
  }
}
