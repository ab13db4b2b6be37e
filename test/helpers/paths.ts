import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const HOST_MAIN = path.join(ROOT, 'dist/server/main.js');
export const CLI_MAIN = path.join(ROOT, 'dist/cli/main.js');

export function tempDir(prefix = 'platform-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
