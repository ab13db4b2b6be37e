// Builds the web console (console/src, Preact) into console/dist, which the host serves at
// /console (src/server/routes/console.ts). Every file it loads is in dist: no CDN, no web fonts.
// Each emitted file also gets a gzip twin (name.gz) that the host sends to browsers that accept it.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const root = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(root, 'dist');

function gzipTwins(): Plugin {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const file = path.join(dir, name);
      return statSync(file).isDirectory() ? walk(file) : [file];
    });
  return {
    name: 'gzip-twins',
    apply: 'build',
    closeBundle() {
      for (const file of walk(outDir)) {
        if (!/\.(html|js|css|svg|json)$/.test(file)) continue;
        writeFileSync(`${file}.gz`, gzipSync(readFileSync(file), { level: 9 }));
      }
    },
  };
}

export default defineConfig({
  root,
  base: '/console/',
  // Preact's automatic JSX runtime (the TypeScript side says the same in console/tsconfig.json).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    // The console is small; one script and one stylesheet, plus the YAML reader on demand.
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  plugins: [gzipTwins()],
  logLevel: 'warn',
});
