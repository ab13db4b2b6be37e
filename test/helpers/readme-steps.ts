// The README as a script: its fenced blocks, in order, turned into the steps a user takes.
//
//   ```sh           a shell block: run, in one shell session that keeps its variables
//   ```js, ```yaml  whose first line is a comment naming a file (`// stream.mjs`, `# deploy.yaml`):
//                   saved under that name, as the text around it tells the user to do
//   anything else   (```text, ```json, a bare ```): prose, not run
//
// Inside a shell block, a comment line that is a JSON document (`# {"num_affected":2}`) shows what
// the command above it prints; the runner checks that an answer of that shape was printed.
import fs from 'node:fs';

export type ReadmeStep =
  | { kind: 'shell'; line: number; code: string; expected: unknown[] }
  | { kind: 'file'; line: number; name: string; content: string };

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
      steps.push({ kind: 'shell', line: start, code: body.join('\n') + '\n', expected: expectedAnswers(body) });
    } else if (lang === 'js' || lang === 'yaml') {
      const named = FILE_COMMENT.exec(body[0] ?? '');
      if (named) steps.push({ kind: 'file', line: start, name: named[1]!, content: body.join('\n') + '\n' });
    }
  }
  return steps;
}

/** The `# {...}` / `# [...]` comment lines of a shell block, parsed. */
function expectedAnswers(body: readonly string[]): unknown[] {
  const out: unknown[] = [];
  for (const line of body) {
    const m = /^#\s*([[{].*)$/.exec(line.trim());
    if (!m) continue;
    try {
      out.push(JSON.parse(m[1]!));
    } catch {
      // a comment that merely starts with a bracket: prose
    }
  }
  return out;
}

/**
 * Whether `actual` has the shape of `expected`: the same keys (recursively), the same types, and
 * equal strings and booleans. Numbers only need to be numbers (distances and timings vary), and
 * arrays match element by element on the shorter length, as long as both are empty or both not.
 */
export function sameShape(expected: unknown, actual: unknown): boolean {
  if (expected === null || typeof expected !== 'object') {
    if (typeof expected === 'number') return typeof actual === 'number';
    return expected === actual;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || (expected.length === 0) !== (actual.length === 0)) return false;
    const n = Math.min(expected.length, actual.length);
    for (let k = 0; k < n; k++) if (!sameShape(expected[k], actual[k])) return false;
    return true;
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  const keys = Object.keys(e);
  if (keys.length !== Object.keys(a).length) return false;
  return keys.every((k) => k in a && sameShape(e[k], a[k]));
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
