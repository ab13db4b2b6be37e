// Code point classes as llama.cpp's unicode.cpp sees them (its tables come from Python's `regex`
// module: \p{N}, \p{L}, \p{Z}, \p{M}, \p{P}, \p{S}, \p{C}, and \s = the White_Space property),
// computed here from JavaScript's own Unicode property escapes and memoised per code point. Also
// GPT-2's byte <-> printable-character mapping that byte-level BPE vocabularies are written in.

export const CPT_NUMBER = 0x02;
export const CPT_LETTER = 0x04;
export const CPT_SEPARATOR = 0x08;
export const CPT_ACCENT_MARK = 0x10;
export const CPT_PUNCTUATION = 0x20;
export const CPT_SYMBOL = 0x40;
export const CPT_CONTROL = 0x80;
export const CPT_CATEGORIES = 0xff;
export const CPT_WHITESPACE = 0x100;

const CATEGORY_TESTS: [RegExp, number][] = [
  [/\p{N}/u, CPT_NUMBER],
  [/\p{L}/u, CPT_LETTER],
  [/\p{Z}/u, CPT_SEPARATOR],
  [/\p{M}/u, CPT_ACCENT_MARK],
  [/\p{P}/u, CPT_PUNCTUATION],
  [/\p{S}/u, CPT_SYMBOL],
];
const WHITE_SPACE = /\p{White_Space}/u;

// 0 = not computed yet; every computed entry has at least one category bit (C is the fallback,
// as unassigned code points are \p{Cn}).
const flagCache = new Uint16Array(0x110000);

export function cptFlags(cpt: number): number {
  const cached = flagCache[cpt];
  if (cached !== undefined && cached !== 0) return cached;
  if (cpt > 0x10ffff) return CPT_CONTROL;
  const ch = String.fromCodePoint(cpt);
  let flags = CPT_CONTROL;
  for (const [re, bit] of CATEGORY_TESTS) {
    if (re.test(ch)) {
      flags = bit;
      break;
    }
  }
  if (WHITE_SPACE.test(ch)) flags |= CPT_WHITESPACE;
  flagCache[cpt] = flags;
  return flags;
}

/** The code points of a string (JS strings from callers are made well-formed first). */
export function codePoints(text: string): Uint32Array {
  const out = new Uint32Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out[n++] = ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000;
        i++;
        continue;
      }
    }
    out[n++] = c;
  }
  return out.subarray(0, n);
}

/** Lone surrogates become U+FFFD, as they do on their way into llama.cpp as UTF-8. */
export function wellFormed(text: string): string {
  const native = (String.prototype as { toWellFormed?: () => string }).toWellFormed;
  if (native) return native.call(text);
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in order, so every byte sequence becomes a printable string ("Ġ" is the space byte).
const BYTE_TO_CHAR: string[] = [];
const CHAR_TO_BYTE = new Map<string, number>();
{
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const ch = String.fromCodePoint(keep(b) ? b : 256 + n++);
    BYTE_TO_CHAR[b] = ch;
    CHAR_TO_BYTE.set(ch, b);
  }
}

export function byteToChar(b: number): string {
  return BYTE_TO_CHAR[b]!;
}

/** The byte a byte-level BPE character stands for, or undefined for a character outside the map. */
export function charToByte(ch: string): number | undefined {
  return CHAR_TO_BYTE.get(ch);
}

const utf8Encoder = new TextEncoder();

export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

export function utf8Bytes(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}
