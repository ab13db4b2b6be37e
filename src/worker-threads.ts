// Starting a worker thread from a module beside the caller, from compiled dist/ (a plain <name>.js)
// or from TypeScript sources (vitest, tsx: there is no .js beside the caller, so the worker starts
// from a two-line bootstrap that registers tsx's loader in the worker and then imports <name>.ts).
import { Worker } from 'node:worker_threads';

/** A worker running `./<name>` next to the module whose import.meta.url is `callerUrl`. */
export function spawnWorker(callerUrl: string, name: string, workerData?: unknown): Worker {
  if (!callerUrl.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, callerUrl), { workerData });
  const entry = new URL(`./${name}.ts`, callerUrl).href;
  let tsx = 'tsx/esm/api';
  try {
    tsx = import.meta.resolve(tsx);
  } catch {
    // resolved from the working directory instead
  }
  const bootstrap = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}
