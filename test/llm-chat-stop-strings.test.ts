// Stop strings on streamed text (src/llm/chat/stop-strings.ts) without a model: a stop split
// across tokens, several stops, held-back text released once it cannot start a stop, a stop at
// the very start, text outside the BMP, and a seeded run over random texts and token splits in
// which nothing past the cut is ever sent and nothing is held back longer than it must be.
import { describe, expect, it } from 'vitest';
import { StopMatcher } from '../src/llm/chat/stop-strings.js';
import { rng } from './helpers/random.js';

/** Pushes each token; returns what was sent after each, and whether (and after which token) it stopped. */
function stream(stops: string[], tokens: string[]): { emits: string[]; stoppedAt: number; rest: string } {
  const m = new StopMatcher(stops);
  const emits: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const { emit, stopped } = m.push(tokens[i]!);
    emits.push(emit);
    if (stopped) return { emits, stoppedAt: i, rest: '' };
  }
  return { emits, stoppedAt: -1, rest: m.flush() };
}

describe('StopMatcher', () => {
  it('without stop strings, text goes out as it comes', () => {
    expect(stream([], ['Hel', 'lo', ' wor', 'ld'])).toEqual({ emits: ['Hel', 'lo', ' wor', 'ld'], stoppedAt: -1, rest: '' });
  });

  it('a stop split across tokens: nothing of it is sent', () => {
    expect(stream(['###'], ['Hello #', '#', '# world'])).toEqual({ emits: ['Hello ', '', ''], stoppedAt: 2, rest: '' });
    expect(stream(['END'], ['The ', 'E', 'N', 'D', ' more'])).toEqual({ emits: ['The ', '', '', ''], stoppedAt: 3, rest: '' });
  });

  it('the text before a stop inside one token is sent, the rest of the token is not', () => {
    expect(stream(['\n\n'], ['one\n\ntwo'])).toEqual({ emits: ['one'], stoppedAt: 0, rest: '' });
  });

  it('held-back text is released as soon as it turns out not to be a stop', () => {
    expect(stream(['STOP'], ['ST', 'AR', 'T'])).toEqual({ emits: ['', 'STAR', 'T'], stoppedAt: -1, rest: '' });
    expect(stream(['STOP'], ['go ST', 'O', 'N'])).toEqual({ emits: ['go ', '', 'STON'], stoppedAt: -1, rest: '' });
    // A shorter prefix of the stop may follow a longer one that failed.
    expect(stream(['aab'], ['aa', 'a', 'b'])).toEqual({ emits: ['', 'a', ''], stoppedAt: 2, rest: '' });
  });

  it('a prefix still held when generation ends is sent by flush', () => {
    expect(stream(['\n\n'], ['done', '\n'])).toEqual({ emits: ['done', ''], stoppedAt: -1, rest: '\n' });
  });

  it('a stop at the very start sends nothing', () => {
    expect(stream(['END'], ['END of it'])).toEqual({ emits: [''], stoppedAt: 0, rest: '' });
    expect(stream(['END'], ['E', 'ND'])).toEqual({ emits: ['', ''], stoppedAt: 1, rest: '' });
  });

  it('several stop strings: the first one reached ends the text', () => {
    const stops = ['\nUser:', '</s>', '###'];
    expect(stream(stops, ['Sure.', '</', 's>', '\nUser:'])).toEqual({ emits: ['Sure.', '', ''], stoppedAt: 2, rest: '' });
    expect(stream(stops, ['Sure.\nUs', 'er:'])).toEqual({ emits: ['Sure.', ''], stoppedAt: 1, rest: '' });
    // Two stops in one token: the text is cut at the earlier one.
    expect(stream(stops, ['a###b</s>'])).toEqual({ emits: ['a'], stoppedAt: 0, rest: '' });
    expect(stream(stops, ['a</s>b###'])).toEqual({ emits: ['a'], stoppedAt: 0, rest: '' });
  });

  it('the held-back tail is the longest one that could start any of the stops', () => {
    const m = new StopMatcher(['<|im_end|>', '<eos>']);
    expect(m.push('x <|im')).toEqual({ emit: 'x ', stopped: false });
    expect(m.push('_e')).toEqual({ emit: '', stopped: false });
    expect(m.push('nd|>')).toEqual({ emit: '', stopped: true });
  });

  it('unicode: stops and text outside the BMP, split between tokens', () => {
    expect(stream(['🛑'], ['go ', '🛑', ' stop'])).toEqual({ emits: ['go ', ''], stoppedAt: 1, rest: '' });
    expect(stream(['。\n'], ['こんにちは。', '\n次'])).toEqual({ emits: ['こんにちは', ''], stoppedAt: 1, rest: '' });
    // A different character after the same first one is released whole.
    expect(stream(['👋🏽'], ['hi 👋', '🏿'])).toEqual({ emits: ['hi ', '👋🏿'], stoppedAt: -1, rest: '' });
    expect(stream(['café'], ['un caf', 'e'])).toEqual({ emits: ['un ', 'cafe'], stoppedAt: -1, rest: '' });
  });

  it('random texts and token splits: the same cut as on the whole text, nothing past it ever sent, nothing held needlessly', () => {
    const r = rng(2024);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const alphabet = ['a', 'b', 'c', ' ', '\n', 'é', '日', '😀'];
    const word = (min: number, max: number) => Array.from({ length: min + Math.floor(r() * (max - min + 1)) }, () => pick(alphabet)).join('');
    let stoppedCases = 0;
    let unstoppedCases = 0;
    let releasedHeld = 0;
    for (let iter = 0; iter < 500; iter++) {
      // Stops of which none contains another: then the cut does not depend on the token split.
      const stops = [...new Set(Array.from({ length: 1 + Math.floor(r() * 3) }, () => word(1, 3)))];
      if (stops.some((s) => stops.some((t) => t !== s && t.includes(s)))) continue;
      const chars = Array.from(word(0, 30));
      const text = chars.join('');
      let cut = text.length;
      let end = Infinity;
      for (const s of stops) {
        const at = text.indexOf(s);
        if (at !== -1 && at + s.length < end) [cut, end] = [at, at + s.length];
      }
      const tokens: string[] = [];
      for (let k = 0; k < chars.length; ) {
        const n = 1 + Math.floor(r() * 4);
        tokens.push(chars.slice(k, k + n).join(''));
        k += n;
      }
      const m = new StopMatcher(stops);
      let sent = '';
      let seen = '';
      let stopped = false;
      let heldBefore = 0;
      for (const token of tokens) {
        seen += token;
        const out = m.push(token);
        sent += out.emit;
        expect(text.slice(0, cut).startsWith(sent), `${JSON.stringify(stops)} ${JSON.stringify(tokens)}`).toBe(true);
        if (out.stopped) {
          stopped = true;
          break;
        }
        // Held back: exactly the longest tail of what came that is a proper prefix of a stop.
        let keep = 0;
        for (const s of stops) for (let n = 1; n < s.length; n++) if (seen.endsWith(s.slice(0, n))) keep = Math.max(keep, n);
        expect(sent).toBe(seen.slice(0, seen.length - keep));
        if (heldBefore > 0 && out.emit.length > 0) releasedHeld++;
        heldBefore = keep;
      }
      if (!stopped) sent += m.flush();
      expect(sent).toBe(text.slice(0, cut));
      expect(stopped).toBe(end !== Infinity);
      if (stopped) stoppedCases++;
      else unstoppedCases++;
    }
    // Seed 2024: 191 texts stop, 234 run to the end, and held text is released 221 times.
    expect(stoppedCases).toBeGreaterThan(120);
    expect(unstoppedCases).toBeGreaterThan(150);
    expect(releasedHeld).toBeGreaterThan(150);
  });
});
