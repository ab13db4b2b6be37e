// Line-by-line prompts that work on a terminal and on piped stdin alike: lines are queued as they
// arrive, so answers typed (or piped) ahead of their question are not lost.
import readline from 'node:readline';
import { CliError } from './errors.js';

export class Prompter {
  private readonly lines: string[] = [];
  private waiting: ((line: string | undefined) => void) | undefined;
  private closed = false;
  private readonly rl: readline.Interface;

  constructor(
    input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stderr,
  ) {
    this.rl = readline.createInterface({ input, terminal: false });
    this.rl.on('line', (line) => {
      if (this.waiting) {
        const resolve = this.waiting;
        this.waiting = undefined;
        resolve(line);
      } else this.lines.push(line);
    });
    this.rl.on('close', () => {
      this.closed = true;
      this.waiting?.(undefined);
    });
  }

  /** Asks until `check` accepts the answer (it returns an error message otherwise). */
  async ask<T>(question: string, check: (answer: string) => { value: T } | { error: string }): Promise<T> {
    for (;;) {
      this.output.write(question);
      const line = await this.next();
      if (line === undefined) throw new CliError('input ended before the dialog was complete');
      const result = check(line.trim());
      if ('value' in result) return result.value;
      this.output.write(`  ${result.error}\n`);
    }
  }

  say(text: string): void {
    this.output.write(text);
  }

  close(): void {
    this.rl.close();
  }

  private next(): Promise<string | undefined> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

/** Parses "3" as the 3rd of `count` choices (1-based). */
export function choice(answer: string, count: number): { value: number } | { error: string } {
  const n = Number(answer);
  if (!Number.isInteger(n) || n < 1 || n > count) return { error: `enter a number from 1 to ${count}` };
  return { value: n - 1 };
}
