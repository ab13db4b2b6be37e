// Stop strings on streamed text: text is released only once it can no longer be the start of a
// stop string, so a client never sees part of one (DESIGN.md: no partial stop text leaks).

export class StopMatcher {
  private held = '';

  constructor(private readonly stops: readonly string[]) {}

  /** Adds text; returns what may be sent now and whether a stop string has been reached. */
  push(text: string): { emit: string; stopped: boolean } {
    this.held += text;
    if (this.stops.length === 0) return this.release(this.held.length, false);
    let first = -1;
    for (const stop of this.stops) {
      const at = this.held.indexOf(stop);
      if (at !== -1 && (first === -1 || at < first)) first = at;
    }
    if (first !== -1) return this.release(first, true);
    // Hold back the longest tail that is a prefix of some stop string.
    let keep = 0;
    for (const stop of this.stops) {
      for (let n = Math.min(stop.length - 1, this.held.length); n > keep; n--) {
        if (this.held.endsWith(stop.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    return this.release(this.held.length - keep, false);
  }

  /** What is left when generation ends without a stop string. */
  flush(): string {
    const rest = this.held;
    this.held = '';
    return rest;
  }

  private release(upTo: number, stopped: boolean): { emit: string; stopped: boolean } {
    const emit = this.held.slice(0, upTo);
    this.held = stopped ? '' : this.held.slice(upTo);
    return { emit, stopped };
  }
}
