// The README as a script: its fenced blocks, in order, turned into the steps a user takes.
//
//   ```sh           a shell block: run, in one shell session that keeps its variables
//   ```js, ```yaml  whose first line is a comment naming a file (`// stream.mjs`, `# deploy.yaml`):
//                   saved under that name, as the text around it tells the user to do
//   ```text, ```json, a bare ```: prose, not run
// Any other fence, or a js/yaml block that names no file, is an error: nothing is skipped silently.
//
// Inside a shell block, a comment line that is a JSON document shows what the command above it
// prints, and the runner checks that an answer of that shape was printed: `# {"num_affected":2}`
// exactly (strings, integers, booleans, array lengths; other numbers only as numbers), and
// `# e.g. {"tokens":[15043,3186]}` loosely (values that depend on the model: numbers and array
// lengths are free). A comment `# Header-Name: value` in a block that runs `curl -i` is a
// response header the runner looks for.
import fs from 'node:fs';

export interface ExpectedAnswer {
  value: unknown;
  /** `# e.g. ...`: numbers and array lengths may differ. */
  loose: boolean;
}

export type ReadmeStep =
  | { kind: 'shell'; line: number; code: string; expected: ExpectedAnswer[]; headers: string[] }
  | { kind: 'file'; line: number; name: string; content: string };

const PROSE_FENCES = new Set(['', 'text', 'json']);

const FENCE = /^```(\S*)\s*$/;
const FILE_COMMENT = /^(?:\/\/|#)\s*([A-Za-z0-9_.-]+\.(?:mjs|js|yaml|yml|json))\s*$/;

export function readmeSteps(file: string): ReadmeStep[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const steps: ReadmeStep[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const lang = open[1]!;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (end === lines.length) throw new Error(`README.md:${i + 1}: the code block never closes`);
    const body = lines.slice(start, end);
    i = end;
    if (lang === 'sh') {
      const code = body.join('\n') + '\n';
      steps.push({ kind: 'shell', line: start, code, expected: expectedAnswers(body), headers: / -i\b/.test(code) ? expectedHeaders(body) : [] });
    } else if (lang === 'js' || lang === 'yaml') {
      const named = FILE_COMMENT.exec(body[0] ?? '');
      if (!named) throw new Error(`README.md:${start}: a ${lang} block must name the file it is saved as in its first line (or be a text block)`);
      steps.push({ kind: 'file', line: start, name: named[1]!, content: body.join('\n') + '\n' });
    } else if (!PROSE_FENCES.has(lang)) {
      throw new Error(`README.md:${start}: a \`\`\`${lang} block is neither run nor prose; use sh, js, yaml (named files), text or json`);
    }
  }
  return steps;
}

/** The `# {...}` / `# [...]` (and `# e.g. ...`) comment lines of a shell block, parsed. */
function expectedAnswers(body: readonly string[]): ExpectedAnswer[] {
  const out: ExpectedAnswer[] = [];
  for (const line of body) {
    const m = /^#\s*(e\.g\.\s*)?([[{].*)$/.exec(line.trim());
    if (!m) continue;
    try {
      out.push({ value: JSON.parse(m[2]!), loose: m[1] !== undefined });
    } catch {
      // a comment that merely starts with a bracket: prose
    }
  }
  return out;
}

/** The `# Header-Name: value` comment lines of a shell block, as `name: value` lines. */
function expectedHeaders(body: readonly string[]): string[] {
  return body.flatMap((line) => {
    const m = /^#\s*([A-Za-z][A-Za-z0-9-]*): (\S.*)$/.exec(line.trim());
    return m ? [`${m[1]!.toLowerCase()}: ${m[2]!.trim()}`] : [];
  });
}

/**
 * Whether `actual` answers like `expected`: the same keys (recursively), the same types, equal
 * strings and booleans, and arrays of the same length. Integers are equal; other numbers only
 * need to be numbers (a score or a distance is shown rounded). `loose` (`# e.g.`) also frees
 * integers and array lengths, for answers that depend on the model file.
 */
export function sameShape(expected: unknown, actual: unknown, loose = false): boolean {
  if (expected === null || typeof expected !== 'object') {
    if (typeof expected === 'number') return typeof actual === 'number' && (loose || !Number.isInteger(expected) || actual === expected);
    return expected === actual;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return false;
    if (loose ? (expected.length === 0) !== (actual.length === 0) : expected.length !== actual.length) return false;
    const n = Math.min(expected.length, actual.length);
    for (let k = 0; k < n; k++) if (!sameShape(expected[k], actual[k], loose)) return false;
    return true;
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  const keys = Object.keys(e);
  if (keys.length !== Object.keys(a).length) return false;
  return keys.every((k) => k in a && sameShape(e[k], a[k], loose));
}

/**
 * Every JSON object or array printed in `text`, also when documents follow each other without a
 * newline (curl prints none after a body) or follow headers on the same stream.
 */
export function printedJson(text: string): unknown[] {
  const found: unknown[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c !== '{' && c !== '[') {
      i++;
      continue;
    }
    const end = matchingClose(text, i);
    if (end !== -1) {
      try {
        found.push(JSON.parse(text.slice(i, end + 1)));
        i = end + 1;
        continue;
      } catch {
        // not JSON after all
      }
    }
    i++;
  }
  return found;
}

/** The index of the bracket closing the one at `start`, skipping strings; -1 if none. */
function matchingClose(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}
