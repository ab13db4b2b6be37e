// The subset of ECMAScript regular expressions (as JSON Schema's `pattern` is read, with the `u`
// flag, as ajv compiles it) that becomes an automaton: literals, escapes, classes, groups,
// alternation, greedy and lazy quantifiers, and the ^ $ anchors. Laziness does not change which
// strings match, so it is parsed and dropped. What needs more than a finite automaton
// (backreferences, lookaround, \b) or other flags is refused with a RegexError.

import { ANY_CHAR, complement, normalize, type Ranges } from './code-points.js';

export type RegexNode =
  | { readonly kind: 'chars'; readonly ranges: Ranges }
  | { readonly kind: 'seq'; readonly items: readonly RegexNode[] }
  | { readonly kind: 'alt'; readonly options: readonly RegexNode[] }
  | { readonly kind: 'repeat'; readonly node: RegexNode; readonly min: number; readonly max: number }
  | { readonly kind: 'start' }
  | { readonly kind: 'end' };

/** The pattern is not valid, or uses a construct outside the supported subset. */
export class RegexError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexError';
  }
}

const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
// ECMAScript WhiteSpace and LineTerminator.
const SPACE: Ranges = normalize([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
const LINE_TERMINATORS: Ranges = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const DOT = complement(LINE_TERMINATORS);
const SYNTAX = '^$\\.*+?()[]{}|/';
const CONTROL_ESCAPES: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13 };

/** Parses `source` as a `u`-flag ECMAScript pattern into a RegexNode. */
export function parseRegex(source: string): RegexNode {
  try {
    new RegExp(source, 'u');
  } catch (err) {
    throw new RegexError(`invalid regular expression: ${(err as Error).message}`);
  }
  return new Parser(source).parse();
}

/** Groups nested deeper than this are refused (the parser and the automaton recurse). */
const MAX_GROUP_DEPTH = 100;

class Parser {
  private pos = 0;
  private depth = 0;
  private readonly chars: string[];

  constructor(source: string) {
    this.chars = [...source]; // by code point, so astral literals are one character
  }

  parse(): RegexNode {
    const node = this.disjunction();
    if (this.pos < this.chars.length) throw new RegexError(`unexpected "${this.peek()}" at ${this.pos}`);
    return node;
  }

  private peek(offset = 0): string | undefined {
    return this.chars[this.pos + offset];
  }

  private next(): string {
    const c = this.chars[this.pos++];
    if (c === undefined) throw new RegexError('unexpected end of pattern');
    return c;
  }

  private disjunction(): RegexNode {
    const options = [this.alternative()];
    while (this.peek() === '|') {
      this.pos++;
      options.push(this.alternative());
    }
    return options.length === 1 ? options[0]! : { kind: 'alt', options };
  }

  private alternative(): RegexNode {
    const items: RegexNode[] = [];
    while (this.pos < this.chars.length && this.peek() !== '|' && this.peek() !== ')') {
      const atom = this.term();
      items.push(this.quantified(atom));
    }
    return items.length === 1 ? items[0]! : { kind: 'seq', items };
  }

  private term(): RegexNode {
    const c = this.next();
    switch (c) {
      case '^':
        return { kind: 'start' };
      case '$':
        return { kind: 'end' };
      case '.':
        return { kind: 'chars', ranges: DOT };
      case '[':
        return this.characterClass();
      case '(':
        return this.group();
      case '\\':
        return this.atomEscape();
      default:
        if ('*+?{}])'.includes(c)) throw new RegexError(`unexpected "${c}"`);
        return literal(c.codePointAt(0)!);
    }
  }

  private group(): RegexNode {
    if (this.peek() === '?') {
      const kind = this.peek(1);
      if (kind === ':') this.pos += 2;
      else if (kind === '<' && this.peek(2) !== '=' && this.peek(2) !== '!') {
        // A named capturing group: the name does not change what matches.
        while (this.next() !== '>');
      } else if (kind === '=' || kind === '!' || kind === '<') throw new RegexError('lookaround assertions are not supported');
      else throw new RegexError('inline flags and modifiers are not supported');
    }
    if (++this.depth > MAX_GROUP_DEPTH) throw new RegexError(`groups nested deeper than ${MAX_GROUP_DEPTH} are not supported`);
    const inner = this.disjunction();
    this.depth--;
    if (this.next() !== ')') throw new RegexError('unbalanced parenthesis');
    return inner;
  }

  private quantified(atom: RegexNode): RegexNode {
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === '*') [min, max] = [0, Infinity];
    else if (c === '+') [min, max] = [1, Infinity];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const rest = this.chars.slice(this.pos).join('');
      const m = /^\{(\d+)(?:(,)(\d*))?\}/.exec(rest);
      if (!m) throw new RegexError('a lone "{" is not valid with the u flag');
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      this.pos += [...m[0]].length - 1;
    } else return atom;
    this.pos++;
    if (this.peek() === '?') this.pos++; // lazy: the same set of strings
    if (atom.kind === 'start' || atom.kind === 'end') throw new RegexError('a quantified anchor is not valid');
    return { kind: 'repeat', node: atom, min, max };
  }

  private atomEscape(): RegexNode {
    const c = this.peek();
    if (c === 'b' || c === 'B') throw new RegexError(`\\${c} (word boundary) is not supported`);
    if (c !== undefined && /[1-9]/.test(c)) throw new RegexError('backreferences are not supported');
    if (c === 'k') throw new RegexError('named backreferences are not supported');
    return { kind: 'chars', ranges: this.classEscape(false) };
  }

  /** After a backslash: the set it names (one code point for a character escape). */
  private classEscape(inClass: boolean): Ranges {
    const c = this.next();
    switch (c) {
      case 'd':
        return DIGIT;
      case 'D':
        return complement(DIGIT);
      case 'w':
        return WORD;
      case 'W':
        return complement(WORD);
      case 's':
        return SPACE;
      case 'S':
        return complement(SPACE);
      case 'p':
      case 'P':
        throw new RegexError('unicode property escapes are not supported');
      case 'c': {
        const letter = this.next();
        if (!/[A-Za-z]/.test(letter)) throw new RegexError('bad \\c escape');
        return one(letter.charCodeAt(0) % 32);
      }
      case '0':
        if (this.peek() !== undefined && /\d/.test(this.peek()!)) throw new RegexError('octal escapes are not valid with the u flag');
        return one(0);
      case 'x':
        return one(this.hex(2));
      case 'u':
        return one(this.unicodeEscape());
      case 'b':
        if (inClass) return one(8);
        throw new RegexError('\\b (word boundary) is not supported');
      case '-':
        if (inClass) return one(0x2d);
        throw new RegexError('"\\-" is only valid in a class');
      default:
        if (c in CONTROL_ESCAPES) return one(CONTROL_ESCAPES[c]!);
        if (SYNTAX.includes(c)) return one(c.codePointAt(0)!);
        throw new RegexError(`the escape "\\${c}" is not supported`);
    }
  }

  private hex(digits: number): number {
    let text = '';
    for (let i = 0; i < digits; i++) text += this.next();
    if (!/^[0-9a-fA-F]+$/.test(text)) throw new RegexError(`bad hex escape "${text}"`);
    return parseInt(text, 16);
  }

  private unicodeEscape(): number {
    if (this.peek() === '{') {
      this.pos++;
      let text = '';
      while (this.peek() !== '}') text += this.next();
      this.pos++;
      const cp = parseInt(text, 16);
      if (!/^[0-9a-fA-F]+$/.test(text) || cp > 0x10ffff) throw new RegexError(`bad \\u{${text}} escape`);
      return checkNotSurrogate(cp);
    }
    const high = this.hex(4);
    if (high >= 0xd800 && high <= 0xdbff && this.peek() === '\\' && this.peek(1) === 'u') {
      const save = this.pos;
      this.pos += 2;
      const low = this.hex(4);
      if (low >= 0xdc00 && low <= 0xdfff) return 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
      this.pos = save;
    }
    return checkNotSurrogate(high);
  }

  private characterClass(): RegexNode {
    let negate = false;
    if (this.peek() === '^') {
      negate = true;
      this.pos++;
    }
    const ranges: Array<[number, number]> = [];
    while (this.peek() !== ']') {
      const lo = this.classAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.pos++;
        const hi = this.classAtom();
        if (!isSingle(lo) || !isSingle(hi)) throw new RegexError('a class range needs single characters at both ends');
        if (lo[0]![0] > hi[0]![0]) throw new RegexError('a class range out of order');
        ranges.push([lo[0]![0], hi[0]![0]]);
      } else ranges.push(...lo.map(([a, b]) => [a, b] as [number, number]));
    }
    this.pos++;
    const set = normalize(ranges);
    return { kind: 'chars', ranges: negate ? complement(set) : set };
  }

  private classAtom(): Ranges {
    const c = this.next();
    if (c === '\\') return this.classEscape(true);
    return one(c.codePointAt(0)!);
  }
}

const one = (cp: number): Ranges => [[cp, cp]];
const isSingle = (r: Ranges) => r.length === 1 && r[0]![0] === r[0]![1];
const literal = (cp: number): RegexNode => ({ kind: 'chars', ranges: one(checkNotSurrogate(cp)) });

function checkNotSurrogate(cp: number): number {
  if (cp >= 0xd800 && cp <= 0xdfff) throw new RegexError('lone surrogates are not supported');
  return cp;
}

/** Matches any string: what an unanchored pattern may have around its match. */
export const ANY_STRING: RegexNode = { kind: 'repeat', node: { kind: 'chars', ranges: ANY_CHAR }, min: 0, max: Infinity };
