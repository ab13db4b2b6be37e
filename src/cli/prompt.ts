// Line-by-line prompts that work on a terminal and on piped stdin alike: lines are queued as they
// arrive, so answers typed (or piped) ahead of their question are not lost.
import readline from 'node:readline';
import { CliError } from './errors.js';

/** A checked answer: its value, or why it was refused. */
export type Answer<T> = { value: T } | { error: string };

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

  /**
   * Asks until `check` accepts the answer; a refused answer's error is shown and the same
   * question asked again. The end of input (Ctrl-D) ends the dialog.
   */
  async ask<T>(question: string, check: (answer: string) => Answer<T>): Promise<T> {
    for (;;) {
      this.output.write(question);
      const line = await this.next();
      if (line === undefined) {
        this.output.write('\n');
        throw new CliError('input ended before the dialog was complete; nothing was deployed');
      }
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
export function choice(answer: string, count: number): Answer<number> {
  if (!/^\d+$/.test(answer)) return { error: `${answer === '' ? 'no answer' : `"${answer}" is not a number`}: enter a number from 1 to ${count}` };
  const n = Number(answer);
  if (n < 1 || n > count) return { error: `there is no choice ${n}: enter a number from 1 to ${count}` };
  return { value: n - 1 };
}

/** Parses a percentage ("20", "12.5", "20 %") from 0 to `max`. */
export function percentage(answer: string, max: number): Answer<number> {
  const text = answer.replace(/\s*%$/, '');
  const n = Number(text);
  if (text === '' || !/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(n)) {
    return { error: `${answer === '' ? 'no answer' : `"${answer}" is not a number`}: enter a percentage from 0 to ${max}` };
  }
  if (n > max) return { error: `${n} is more than ${max}: enter a percentage from 0 to ${max}` };
  return { value: n };
}

/** y/yes or n/no (an empty answer is `fallback`); anything else is asked again. */
export function yesNo(answer: string, fallback: boolean): Answer<boolean> {
  if (answer === '') return { value: fallback };
  if (/^y(es)?$/i.test(answer)) return { value: true };
  if (/^no?$/i.test(answer)) return { value: false };
  return { error: `answer y or n` };
}
