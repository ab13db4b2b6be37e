#!/usr/bin/env node
// `npm start`: reads the configuration, loads the native engine and the database, serves, prints
// one human line on stderr (start-line.ts) once the models are restored, and on SIGTERM or
// SIGINT drains: /readyz 503 (and the replica no longer counted by deployments) for
// DRAIN_DELAY_SECONDS while still serving, then no new connections, in-flight requests and streams
// finished within SHUTDOWN_TIMEOUT_SECONDS (cut after it), the replica marked gone, exit 0.
import os from 'node:os';
import { loadConfig, ConfigError } from '../config.js';
import { loadAddon, AddonLoadError } from '../native/addon.js';
import { openStore, type Store } from '../store/store.js';
import { buildApp } from './app.js';
import { ensureModelsDir } from './models-dir.js';
import { modelsAtStart, startLine } from './start-line.js';

/** The URL other replicas reach this one at, from the one it listens on. */
function reachableUrl(url: string, host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return url;
  const external = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal);
  if (!external) return url;
  const u = new URL(url);
  u.hostname = external.address;
  return u.toString().replace(/\/$/, '');
}

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
    await app.beginShutdown().catch((err: unknown) => server.log.warn({ err }, 'could not record this replica as draining'));
    // Readiness is 503 from here on, but requests are still taken for the drain delay, so that a
    // load balancer (a Kubernetes Service) stops sending before the listener closes.
    if (config.drainDelayMs > 0) {
      server.log.info({ signal, delaySeconds: config.drainDelayMs / 1000 }, 'draining: not ready, still serving');
      await new Promise((resolve) => setTimeout(resolve, config.drainDelayMs));
    }
    server.log.info({ signal }, 'shutting down: finishing requests in flight');
    // The bound: what is still in flight then (a long stream) is cut, and the stop goes on.
    const cut = setTimeout(() => {
      server.log.warn({ timeoutSeconds: config.shutdownTimeoutMs / 1000 }, 'requests still in flight after the shutdown timeout; closing their connections');
      server.server.closeAllConnections();
    }, config.shutdownTimeoutMs);
    cut.unref();
    // Should closing itself hang (a native call that does not return), do not outlive the grace period by much.
    const last = setTimeout(() => {
      server.log.error('shutdown did not finish 10 s after the timeout; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 10_000);
    last.unref();
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
  // Listening on port 0, the replica learns its address only now; listening on every interface,
  // the others reach it at its first non-loopback address, not at the loopback one listen names.
  if (config.replica.address === undefined) await app.cluster.replicas.setAddress(reachableUrl(url, config.host));
  // Library models load in the background while the host already serves; the line waits for
  // them so that it says how each one ended.
  await app.library.whenRestored();
  // A load ends by having the replica report it, which makes it LIVE once every replica has it.
  await app.cluster.sync.idle();
  if (!stopping) process.stderr.write(startLine(url, config.dataDir, config.modelsDir, modelsDirState, await modelsAtStart(app), store.dialect === 'postgres' ? store.location : undefined) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`platform: unexpected start-up failure: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
});
