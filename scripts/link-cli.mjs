// Puts the `platform` command in node_modules/.bin, as npm does for a dependency's bin, so that
// `npx platform` (and `platform` with node_modules/.bin on PATH) runs the compiled CLI at once.
// npm never links a project's own bin for itself: without this, npx would install the project
// into its cache and rebuild it (two minutes) before answering.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.join(root, 'dist', 'cli', 'main.js');
if (!fs.existsSync(target)) {
  console.error(`link-cli: ${target} is missing; run "npm run build" first`);
  process.exit(1);
}
fs.chmodSync(target, 0o755);
const binDir = path.join(root, 'node_modules', '.bin');
fs.mkdirSync(binDir, { recursive: true });
const link = path.join(binDir, 'platform');
fs.rmSync(link, { force: true });
fs.symlinkSync(path.relative(binDir, target), link);
