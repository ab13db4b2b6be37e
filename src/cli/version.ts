// The CLI's version: the package's own, read from package.json at the package root (two levels
// above both src/cli/ and dist/cli/), so that it cannot drift from the published version.
import fs from 'node:fs';

export function packageVersion(): string {
  const file = new URL('../../package.json', import.meta.url);
  const { version } = JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: unknown };
  if (typeof version !== 'string') throw new Error(`${file.pathname} has no "version"`);
  return version;
}
