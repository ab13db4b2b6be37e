// Runs every bench/*.bench.ts in turn (npm run bench), or only those whose file name contains
// one of the arguments (npm run bench -- gemm). Each benchmark module exports a default async
// function that prints its own table. bench/llm/serving-client.ts is not one: it is a command line
// against a server that is already running (see bench/README.md); serving.bench.ts uses its
// functions and runs here.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => filters.length === 0 || filters.some((f) => name.includes(f)))
  .sort();

if (files.length === 0) {
  console.error(`no benchmarks in ${dir} match ${filters.join(', ') || '*.bench.ts'}`);
  process.exitCode = 1;
}

for (const name of files) {
  const mod = (await import(pathToFileURL(path.join(dir, name)).href)) as { default?: () => Promise<void> };
  if (typeof mod.default !== 'function') {
    console.error(`${name}: no default export to run`);
    process.exitCode = 1;
    continue;
  }
  console.log(`\n## ${name}\n`);
  const started = performance.now();
  await mod.default();
  console.log(`\n(${name}: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
}
