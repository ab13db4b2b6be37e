#!/usr/bin/env node
// `npm start`: reads the configuration, loads the native engine and the database, serves, prints
// one human line on stderr (start-line.ts) once the models are restored, and on SIGTERM or
// SIGINT drains in-flight requests, closes the database and exits 0.
import { loadConfig, ConfigError } from '../config.js';
import { loadAddon, AddonLoadError } from '../native/addon.js';
import { openStore, type Store } from '../store/store.js';
import { buildApp } from './app.js';
import { ensureModelsDir } from './models-dir.js';
import { modelsAtStart, startLine } from './start-line.js';

function fail(message: string, code: number): never {
  process.stderr.write(`platform: ${message}\n`);
  process.exit(code);
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, 2);
    throw err;
  }

  let addon;
  try {
    addon = loadAddon();
  } catch (err) {
    if (err instanceof AddonLoadError) fail(err.message, 1);
    throw err;
  }

  let store: Store;
  try {
    store = await openStore({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  } catch (err) {
    const where = config.databaseUrl ? 'at DATABASE_URL' : `in DATA_DIR (${config.dataDir})`;
    fail(`cannot open the database ${where}: ${(err as Error).message}`, 1);
  }

  const modelsDirState = ensureModelsDir(config.modelsDir);
  const app = await buildApp({
    config,
    store,
    engineInfo: () => addon.engineInfo(),
  });
  const { server } = app;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      server.log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    app.beginShutdown();
    // Readiness is 503 from here on, but requests are still taken for the drain delay, so that a
    // load balancer (a Kubernetes Service) stops sending before the listener closes.
    if (config.drainDelayMs > 0) {
      server.log.info({ signal, delaySeconds: config.drainDelayMs / 1000 }, 'draining: not ready, still serving');
      await new Promise((resolve) => setTimeout(resolve, config.drainDelayMs));
    }
    server.log.info({ signal }, 'shutting down: finishing requests in flight');
    const timer = setTimeout(() => {
      server.log.error('requests still in flight after the shutdown timeout; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    await server.close();
    await store.close();
    server.log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  let url: string;
  try {
    url = await server.listen({ host: config.host, port: config.port });
  } catch (err) {
    await store.close();
    fail(`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}`, 1);
  }
  // Library models load in the background while the host already serves; the line waits for
  // them so that it says how each one ended.
  await app.library.whenRestored();
  if (!stopping) process.stderr.write(startLine(url, config.dataDir, config.modelsDir, modelsDirState, await modelsAtStart(app), store.dialect === 'postgres' ? store.location : undefined) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`platform: unexpected start-up failure: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
});
