// Splits text into pre-tokenizer words the way llama.cpp's unicode_regex_split does, so the words,
// and therefore the token ids, are the same:
//
// - the regexes are applied one after another, each refining the pieces the previous one made;
// - the GPT-2, Llama 3, Qwen2 and Qwen3.5 regexes run as llama.cpp's hand-written state machines (ported
//   below line for line), not as regexes: they differ from a true regex engine at the edges;
// - any other regex with \p{..} classes runs on a "collapsed" copy of the text in which every
//   non-ASCII code point is one stand-in byte for its class (0xD1 number, 0xD2 letter, 0xD3
//   punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 other, 0x0B whitespace), with each \p{X} rewritten to
//   [stand-in + its ASCII members], exactly as llama.cpp feeds std::regex;
// - a regex without \p{..} runs on the code points themselves (std::wregex), non-ASCII whitespace
//   replaced by 0x0B, \s meaning ASCII whitespace only as in the C locale; it may hold non-ASCII
//   characters and ranges beyond the BMP (deepseek-llm's letters), so it runs with the `u` flag.
//
// Positions are code point indices; the result is the list of word lengths.

import { GPT2_REGEX, LLAMA3_REGEX, QWEN2_REGEX, QWEN35_REGEX } from './pre-tokenizers.js';
import {
  CPT_ACCENT_MARK,
  CPT_CATEGORIES,
  CPT_LETTER,
  CPT_NUMBER,
  CPT_PUNCTUATION,
  CPT_SYMBOL,
  CPT_WHITESPACE,
  cptFlags,
} from './unicode.js';

type CustomKind = 'gpt2' | 'llama3' | 'qwen2' | 'qwen35';

const CUSTOM = new Map<string, CustomKind>([
  [GPT2_REGEX, 'gpt2'],
  [LLAMA3_REGEX, 'llama3'],
  ["(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", 'llama3'],
  [QWEN2_REGEX, 'qwen2'],
  [QWEN35_REGEX, 'qwen35'],
]);

const OUT = -1;
const LETTER_NUMBER_WS = CPT_LETTER | CPT_NUMBER | CPT_WHITESPACE;
const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;
const APOSTROPHE = 0x27;

/** ASCII lower case (the only case folding that can turn a code point into s/t/r/e/v/m/l/d). */
const lower = (c: number) => (c >= 0x41 && c <= 0x5a ? c + 32 : c);

/** Word lengths of `cpts` after applying `regexes` in turn. */
export function regexSplit(cpts: Uint32Array, regexes: readonly string[]): number[] {
  if (cpts.length === 0) return [];
  let offsets = [cpts.length];
  let collapsed: string | undefined;
  for (const expr of regexes) {
    const kind = CUSTOM.get(expr);
    if (kind) {
      offsets = splitCustom(cpts, offsets, kind);
    } else if (/\\p\{(N|L|P|M|S|Lu|Ll|Lt|Lm|Lo)\}/.test(expr)) {
      collapsed ??= collapse(cpts);
      offsets = splitRegex(collapsed, collapsedRegex(expr), offsets);
    } else {
      offsets = splitWide(cpts, wideRegex(expr), offsets);
    }
  }
  return offsets;
}

function splitCustom(cpts: Uint32Array, offsets: readonly number[], kind: CustomKind): number[] {
  const out: number[] = [];
  // Qwen3.5's letter runs also take combining marks: [\p{L}\p{M}]+, and [^\s\p{L}\p{M}\p{N}]+
  const word = kind === 'qwen35' ? CPT_LETTER | CPT_ACCENT_MARK : CPT_LETTER;
  const notSymbol = kind === 'qwen35' ? LETTER_NUMBER_WS | CPT_ACCENT_MARK : LETTER_NUMBER_WS;
  let start = 0;
  for (const length of offsets) {
    const ini = start;
    const end = start + length;
    start = end;
    const cpt = (p: number) => (p >= ini && p < end ? cpts[p]! : OUT);
    const flags = (p: number) => (p >= ini && p < end ? cptFlags(cpts[p]!) : 0);
    let prevEnd = ini;
    const add = (e: number) => {
      const n = e - prevEnd;
      if (n > 0) out.push(n);
      prevEnd = e;
      return n;
    };

    for (let pos = ini; pos < end; ) {
      const c = cpt(pos);
      const fl = flags(pos);
      const fold = kind === 'gpt2' ? (x: number) => x : lower;

      // 's|'t|'re|'ve|'m|'ll|'d (case-insensitive for llama3 and qwen2)
      if (c === APOSTROPHE && pos + 1 < end) {
        const n1 = fold(cpt(pos + 1));
        if (n1 === 0x73 || n1 === 0x74 || n1 === 0x6d || n1 === 0x64) {
          pos += add(pos + 2);
          continue;
        }
        if (pos + 2 < end) {
          const n2 = fold(cpt(pos + 2));
          if ((n1 === 0x72 && n2 === 0x65) || (n1 === 0x76 && n2 === 0x65) || (n1 === 0x6c && n2 === 0x6c)) {
            pos += add(pos + 3);
            continue;
          }
        }
      }

      if (kind === 'gpt2') {
        let f2 = c === SPACE ? flags(pos + 1) : fl;
        // <space>?\p{L}+ | <space>?\p{N}+ | <space>?[^\s\p{L}\p{N}]+
        if (f2 & CPT_LETTER) {
          pos += c === SPACE ? 1 : 0;
          while (f2 & CPT_LETTER) f2 = flags(++pos);
          add(pos);
          continue;
        }
        if (f2 & CPT_NUMBER) {
          pos += c === SPACE ? 1 : 0;
          while (f2 & CPT_NUMBER) f2 = flags(++pos);
          add(pos);
          continue;
        }
        if (!(f2 & LETTER_NUMBER_WS) && f2 !== 0) {
          pos += c === SPACE ? 1 : 0;
          while (!(f2 & LETTER_NUMBER_WS) && f2 !== 0) f2 = flags(++pos);
          add(pos);
          continue;
        }
        let nws = 0;
        while (flags(pos + nws) & CPT_WHITESPACE) nws++;
        // \s+(?!\S): a run before a non-space keeps its last space for the next word
        if (nws > 1 && cpt(pos + nws) !== OUT) {
          pos += nws - 1;
          add(pos);
          continue;
        }
        if (nws > 0) {
          pos += nws;
          add(pos);
          continue;
        }
        add(++pos);
        continue;
      }

      // [^\r\n\p{L}\p{N}]?\p{L}+ (qwen35: [\p{L}\p{M}]+)
      if (!(c === CR || c === LF || fl & CPT_NUMBER)) {
        if (fl & word || flags(pos + 1) & word) {
          pos++;
          while (flags(pos) & word) pos++;
          add(pos);
          continue;
        }
      }
      // \p{N}{1,3} (llama3) or \p{N} (qwen2, qwen35)
      if (fl & CPT_NUMBER) {
        if (kind !== 'llama3') {
          add(++pos);
          continue;
        }
        let ini3 = pos;
        while (flags(pos) & CPT_NUMBER) {
          if (++pos - ini3 >= 3) {
            add(pos);
            ini3 = pos;
          }
        }
        add(pos);
        continue;
      }
      // <space>?[^\s\p{L}\p{N}]+[\r\n]*  (llama.cpp tests the current code point's flags here)
      let f2 = c === SPACE ? flags(pos + 1) : fl;
      if (!(f2 & notSymbol) && fl !== 0) {
        pos += c === SPACE ? 1 : 0;
        while (!(f2 & notSymbol) && f2 !== 0) f2 = flags(++pos);
        let c2 = cpt(pos);
        while (c2 === CR || c2 === LF) c2 = cpt(++pos);
        add(pos);
        continue;
      }
      let nws = 0;
      let lastRN = 0;
      while (flags(pos + nws) & CPT_WHITESPACE) {
        const c2 = cpt(pos + nws);
        if (c2 === CR || c2 === LF) lastRN = pos + nws + 1;
        nws++;
      }
      // \s*[\r\n]+
      if (lastRN > 0) {
        pos = lastRN;
        add(pos);
        continue;
      }
      // \s+(?!\S)
      if (nws > 1 && cpt(pos + nws) !== OUT) {
        pos += nws - 1;
        add(pos);
        continue;
      }
      // \s+
      if (nws > 0) {
        pos += nws;
        add(pos);
        continue;
      }
      add(++pos);
    }
  }
  return out;
}

// ---------------------------------------------------------------- the std::regex fallback

const STAND_IN: Record<number, string> = {
  [CPT_NUMBER]: '\u00d1',
  [CPT_LETTER]: '\u00d2',
  [CPT_PUNCTUATION]: '\u00d3',
  [CPT_ACCENT_MARK]: '\u00d4',
  [CPT_SYMBOL]: '\u00d5',
};

/** What \p{X} becomes inside a character class: its stand-in plus its ASCII members. */
const CLASS_BODY: Record<string, string> = {
  '\\p{N}': '\u00d10-9',
  '\\p{L}': '\u00d2A-Za-z',
  '\\p{Lu}': '\u00d2A-Za-z',
  '\\p{Ll}': '\u00d2A-Za-z',
  '\\p{Lt}': '\u00d2A-Za-z',
  '\\p{Lm}': '\u00d2A-Za-z',
  '\\p{Lo}': '\u00d2A-Za-z',
  '\\p{P}': '\u00d3!-#%-*,-/:-;?-@\\[-\\]_\\{\\}',
  '\\p{M}': '\u00d4',
  '\\p{S}': '\u00d5\\$\\+<->\\^`\\|\\~',
};

function collapse(cpts: Uint32Array): string {
  let s = '';
  for (const c of cpts) {
    if (c < 128) {
      s += String.fromCharCode(c);
      continue;
    }
    const fl = cptFlags(c);
    if (fl & CPT_WHITESPACE) s += '\u000b';
    else s += STAND_IN[fl & CPT_CATEGORIES] ?? '\u00d0';
  }
  return s;
}

const collapsedCache = new Map<string, RegExp>();

/** llama.cpp's rewrite of a regex for the collapsed text (no `u` flag: every char is one unit). */
function collapsedRegex(expr: string): RegExp {
  let re = collapsedCache.get(expr);
  if (re) return re;
  let out = '';
  let inside = false;
  for (let i = 0; i < expr.length; i++) {
    const ch = expr[i]!;
    if (ch === '[' && (i === 0 || expr[i - 1] !== '\\')) {
      out += '[';
      inside = true;
      continue;
    }
    if (inside && ch === ']' && expr[i - 1] !== '\\') {
      out += ']';
      inside = false;
      continue;
    }
    if (ch === '\\' && expr[i + 1] === 'p' && expr[i + 2] === '{') {
      const close = expr.indexOf('}', i + 3);
      const body = close >= 0 ? CLASS_BODY[expr.slice(i, close + 1)] : undefined;
      if (body !== undefined) {
        out += inside ? body : `[${body}]`;
        i = close;
        continue;
      }
    }
    out += ch;
  }
  re = new RegExp(out, 'g');
  collapsedCache.set(expr, re);
  return re;
}

const wideCache = new Map<string, RegExp>();

/**
 * A std::wregex expression as a JavaScript one over code points: \s and \S become ASCII classes
 * (the C locale's iswspace; JavaScript's \s would also take U+FEFF, which llama.cpp's White_Space
 * table does not turn into 0x0B).
 */
function wideRegex(expr: string): RegExp {
  let re = wideCache.get(expr);
  if (re) return re;
  let out = '';
  let inside = false;
  for (let i = 0; i < expr.length; i++) {
    const ch = expr[i]!;
    if (ch === '\\' && i + 1 < expr.length) {
      const next = expr[i + 1]!;
      if (next === 's') out += inside ? '\\t-\\r ' : '[\\t-\\r ]';
      else if (next === 'S' && !inside) out += '[^\\t-\\r ]';
      else out += ch + next;
      i++;
      continue;
    }
    if (ch === '[') inside = true;
    else if (ch === ']') inside = false;
    out += ch;
  }
  re = new RegExp(out, 'gu');
  wideCache.set(expr, re);
  return re;
}

/** `splitRegex` on the code points themselves, non-ASCII whitespace as 0x0B. */
function splitWide(cpts: Uint32Array, re: RegExp, offsets: readonly number[]): number[] {
  const out: number[] = [];
  let start = 0;
  for (const length of offsets) {
    // the piece as a string, and for each UTF-16 index the code point index it starts
    let piece = '';
    const cpIndex: number[] = [];
    for (let i = 0; i < length; i++) {
      const c = cpts[start + i]!;
      const ch = c > 0x7f && cptFlags(c) & CPT_WHITESPACE ? '\u000b' : String.fromCodePoint(c);
      cpIndex.push(i);
      if (ch.length === 2) cpIndex.push(i);
      piece += ch;
    }
    cpIndex.push(length);
    re.lastIndex = 0;
    let last = 0;
    for (let m = re.exec(piece); m !== null; m = re.exec(piece)) {
      const from = cpIndex[m.index]!;
      const to = cpIndex[m.index + m[0].length]!;
      if (from > last) out.push(from - last);
      if (to > from) out.push(to - from);
      else re.lastIndex += piece.codePointAt(re.lastIndex)! > 0xffff ? 2 : 1;
      last = to;
    }
    if (last < length) out.push(length - last);
    start += length;
  }
  return out;
}

/** Every match becomes a word and so does every gap between matches (regex_iterator's split). */
function splitRegex(text: string, re: RegExp, offsets: readonly number[]): number[] {
  const out: number[] = [];
  let start = 0;
  for (const length of offsets) {
    const piece = text.slice(start, start + length);
    re.lastIndex = 0;
    let last = 0;
    for (let m = re.exec(piece); m !== null; m = re.exec(piece)) {
      if (m.index > last) out.push(m.index - last);
      if (m[0].length > 0) out.push(m[0].length);
      else re.lastIndex++;
      last = m.index + m[0].length;
    }
    if (last < length) out.push(length - last);
    start += length;
  }
  return out;
}
