// A strict JSON reader for text that may still be growing: it tells a complete value apart from
// a valid beginning ("more": wait for the next delta) and from text that can never become JSON
// ("bad"). The tool call parsers use it to find where a call ends (a `}` inside a string ends
// nothing) and to hold a call back until it is known to be well formed. The answer for a prefix
// never contradicts the answer for the whole text: "more" only ever turns into "done" or "bad".

export type JsonRead = { readonly status: 'done'; readonly end: number } | { readonly status: 'more' } | { readonly status: 'bad' };

/** Where a member's value lies in the text: [start, end). */
export interface Span {
  readonly start: number;
  readonly end: number;
}

// Thrown inside the reader; readJson turns them into a status.
const MORE = Symbol('more');
const BAD = Symbol('bad');
// Deeper nesting than any tool call needs; it keeps the recursion far from the stack's limit.
const MAX_DEPTH = 256;
const NUMBER_CHARS = /[-+0-9.eE]*/y;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/;
const NUMBER_PREFIX = /^-?(?:(?:0|[1-9]\d*)(?:\.\d*|(?:\.\d+)?[eE][+-]?\d*)?)?$/;

class Reader {
  constructor(
    readonly text: string,
    public pos: number,
  ) {}

  ws(): void {
    while (this.pos < this.text.length && ' \t\n\r'.includes(this.text[this.pos]!)) this.pos++;
  }

  peek(): string {
    if (this.pos >= this.text.length) throw MORE;
    return this.text[this.pos]!;
  }

  expect(ch: string): void {
    if (this.peek() !== ch) throw BAD;
    this.pos++;
  }

  value(depth: number): void {
    if (depth > MAX_DEPTH) throw BAD;
    const ch = this.peek();
    if (ch === '{') this.object(depth, null);
    else if (ch === '[') this.array(depth);
    else if (ch === '"') this.string();
    else if (ch === '-' || (ch >= '0' && ch <= '9')) this.number();
    else if (ch === 't') this.word('true');
    else if (ch === 'f') this.word('false');
    else if (ch === 'n') this.word('null');
    else throw BAD;
  }

  /** An object; with `members`, records where each member's value lies. */
  object(depth: number, members: Map<string, Span> | null): void {
    this.expect('{');
    this.ws();
    if (this.peek() === '}') {
      this.pos++;
      return;
    }
    for (;;) {
      const keyStart = this.pos;
      this.string();
      const key = JSON.parse(this.text.slice(keyStart, this.pos)) as string;
      this.ws();
      this.expect(':');
      this.ws();
      const start = this.pos;
      this.value(depth + 1);
      members?.set(key, { start, end: this.pos });
      this.ws();
      if (this.peek() === '}') {
        this.pos++;
        return;
      }
      this.expect(',');
      this.ws();
    }
  }

  array(depth: number): void {
    this.expect('[');
    this.ws();
    if (this.peek() === ']') {
      this.pos++;
      return;
    }
    for (;;) {
      this.value(depth + 1);
      this.ws();
      if (this.peek() === ']') {
        this.pos++;
        return;
      }
      this.expect(',');
      this.ws();
    }
  }

  string(): void {
    this.expect('"');
    for (;;) {
      const ch = this.peek();
      this.pos++;
      if (ch === '"') return;
      if (ch < ' ') throw BAD;
      if (ch !== '\\') continue;
      const esc = this.peek();
      this.pos++;
      if (esc === 'u') {
        for (let i = 0; i < 4; i++) {
          if (!/[0-9a-fA-F]/.test(this.peek())) throw BAD;
          this.pos++;
        }
      } else if (!'"\\/bfnrt'.includes(esc)) throw BAD;
    }
  }

  number(): void {
    NUMBER_CHARS.lastIndex = this.pos;
    NUMBER_CHARS.exec(this.text);
    const chars = this.text.slice(this.pos, NUMBER_CHARS.lastIndex);
    // A number that reaches the end of the text may still grow ("1" -> "12", "1." -> "1.5").
    if (NUMBER_CHARS.lastIndex === this.text.length && NUMBER_PREFIX.test(chars)) throw MORE;
    const whole = NUMBER.exec(chars);
    if (!whole) throw BAD;
    this.pos += whole[0].length;
  }

  word(w: string): void {
    const got = this.text.slice(this.pos, this.pos + w.length);
    if (got === w) {
      this.pos += w.length;
      return;
    }
    throw w.startsWith(got) && this.pos + got.length === this.text.length ? MORE : BAD;
  }
}

function run(text: string, pos: number, read: (r: Reader) => void): JsonRead {
  const reader = new Reader(text, pos);
  try {
    read(reader);
    return { status: 'done', end: reader.pos };
  } catch (err) {
    if (err === MORE) return { status: 'more' };
    if (err === BAD) return { status: 'bad' };
    throw err;
  }
}

/** One JSON value starting exactly at `pos`. */
export function readJson(text: string, pos: number): JsonRead {
  return run(text, pos, (r) => r.value(0));
}

/** One JSON object starting exactly at `pos`, with the spans of its members' values. */
export function readJsonObject(text: string, pos: number): JsonRead & { members?: Map<string, Span> } {
  const members = new Map<string, Span>();
  const read = run(text, pos, (r) => r.object(0, members));
  return read.status === 'done' ? { ...read, members } : read;
}

/** JSON whitespace from `pos`: the index of the first other character (or the text's end). */
export function skipJsonSpace(text: string, pos: number): number {
  while (pos < text.length && ' \t\n\r'.includes(text[pos]!)) pos++;
  return pos;
}

/**
 * Whether `text` from `pos` starts with `literal`: "done" (with its end), "more" when the text
 * ends inside a prefix of it, "bad" otherwise.
 */
export function readLiteral(text: string, pos: number, literal: string): JsonRead {
  const got = text.slice(pos, pos + literal.length);
  if (got === literal) return { status: 'done', end: pos + literal.length };
  return literal.startsWith(got) && pos + got.length === text.length ? { status: 'more' } : { status: 'bad' };
}
