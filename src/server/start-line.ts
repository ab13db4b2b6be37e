// The one human line the host prints at start (on stderr, so that stdout stays JSON logs): where
// it listens, where its data and models are, and which models it brought back.
//
//   platform: listening on http://127.0.0.1:8080; DATA_DIR /srv/data; MODELS_DIR /srv/models;
//   restored 2 models: fraud (realtime, LIVE), tinyllama (library, LIVE)
import fs from 'node:fs';
import type { App } from './app.js';

/** What became of MODELS_DIR at start: it was there, it was made, or it could not be made. */
export type ModelsDirState = { kind: 'present' } | { kind: 'created' } | { kind: 'unavailable'; reason: string };

/**
 * Makes MODELS_DIR (mode 0755: the GGUF files in it are not secrets, and operators copy files in)
 * when it is missing. A failure is reported, not fatal: a host that serves no LLM does not need it.
 */
export function ensureModelsDir(dir: string): ModelsDirState {
  if (fs.existsSync(dir)) return { kind: 'present' };
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    fs.chmodSync(dir, 0o755); // mkdir's mode is narrowed by the umask
    return { kind: 'created' };
  } catch (err) {
    return { kind: 'unavailable', reason: (err as Error).message };
  }
}

export interface RestoredModel {
  id: string;
  kind: 'realtime' | 'library';
  status: string;
}

/**
 * The models the host brought back: realtime models with a live deployment (LIVE once loaded,
 * FAILED when their build could not be loaded) and every library deployment with its status.
 */
export function restoredModels(app: Pick<App, 'realtime' | 'library'>): RestoredModel[] {
  const realtime: RestoredModel[] = [];
  for (const dep of app.realtime.deployments.allLive()) {
    if (app.realtime.registry.get(dep.modelId)) realtime.push({ id: dep.modelId, kind: 'realtime', status: 'LIVE' });
    else if (dep.action === 'deploy') realtime.push({ id: dep.modelId, kind: 'realtime', status: 'FAILED' });
  }
  const library = app.library.list().map((d): RestoredModel => ({ id: d.modelId, kind: 'library', status: d.status }));
  return [...realtime, ...library];
}

export function startLine(url: string, dataDir: string, modelsDir: string, modelsDirState: ModelsDirState, models: readonly RestoredModel[]): string {
  const dirNote =
    modelsDirState.kind === 'created'
      ? ' (created, mode 0755)'
      : modelsDirState.kind === 'unavailable'
        ? ` (missing, and it could not be created: ${modelsDirState.reason})`
        : '';
  const restored =
    models.length === 0
      ? 'no models yet'
      : `restored ${models.length} model${models.length === 1 ? '' : 's'}: ${models.map((m) => `${m.id} (${m.kind}, ${m.status})`).join(', ')}`;
  return `platform: listening on ${url}; DATA_DIR ${dataDir}; MODELS_DIR ${modelsDir}${dirNote}; ${restored}`;
}
