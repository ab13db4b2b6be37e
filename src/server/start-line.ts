// The one human line the host prints at start (on stderr, so that stdout stays JSON logs): where
// it listens, where its data and models are, and how each model it keeps came out of this start.
//
//   platform: listening on http://127.0.0.1:8080; DATA_DIR /srv/data; MODELS_DIR /srv/models;
//   3 models: fraud (realtime, LIVE), tinyllama (library, LIVE), qwen (library, FAILED: load_error, not retried)
import type { App } from './app.js';
import type { ModelsDirState } from './models-dir.js';

export interface ModelAtStart {
  id: string;
  kind: 'realtime' | 'library';
  /** LIVE, FAILED, or FAILED with its failure kind and whether this start tried it again. */
  status: string;
}

/**
 * The models the host keeps, as this start left them: realtime models with a live deployment (LIVE
 * once loaded, FAILED when their build could not be loaded) and every library deployment. A FAILED
 * library deployment says its failure kind, and `not retried` when this start did not try to load
 * it (a `load_error` or `interrupted` one stays FAILED until it is deployed again).
 */
export async function modelsAtStart(app: Pick<App, 'realtime' | 'library'>): Promise<ModelAtStart[]> {
  const realtime: ModelAtStart[] = [];
  for (const dep of await app.realtime.deployments.allLive()) {
    if (app.realtime.registry.get(dep.modelId)) realtime.push({ id: dep.modelId, kind: 'realtime', status: 'LIVE' });
    else if (dep.action === 'deploy') realtime.push({ id: dep.modelId, kind: 'realtime', status: 'FAILED' });
  }
  const library = (await app.library.list()).map((d): ModelAtStart => {
    if (d.status !== 'FAILED') return { id: d.modelId, kind: 'library', status: d.status };
    const tried = app.library.triedAtStart.has(d.modelId);
    return { id: d.modelId, kind: 'library', status: `FAILED: ${d.failureKind ?? 'load_error'}${tried ? '' : ', not retried'}` };
  });
  return [...realtime, ...library];
}

/** `database`: where the control plane is when it is not the SQLite file in DATA_DIR (a redacted DATABASE_URL). */
export function startLine(url: string, dataDir: string, modelsDir: string, modelsDirState: ModelsDirState, models: readonly ModelAtStart[], database?: string): string {
  const dirNote =
    modelsDirState.kind === 'created'
      ? ' (created, mode 0755)'
      : modelsDirState.kind === 'unavailable'
        ? ` (missing, and it could not be created: ${modelsDirState.reason})`
        : '';
  const listed =
    models.length === 0
      ? 'no models yet'
      : `${models.length} model${models.length === 1 ? '' : 's'}: ${models.map((m) => `${m.id} (${m.kind}, ${m.status})`).join(', ')}`;
  const db = database === undefined ? '' : `; DATABASE_URL ${database}`;
  return `platform: listening on ${url}; DATA_DIR ${dataDir}${db}; MODELS_DIR ${modelsDir}${dirNote}; ${listed}`;
}
