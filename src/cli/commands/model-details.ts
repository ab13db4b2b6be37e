// `platform models get <model-id>` for people: the model's fields, then for a realtime model its
// live traffic (variations with their builds and instance types, audiences with their routes),
// and for a library model its loaded file and instance.
import type { RouteConfig } from '../../realtime/traffic.js';
import type { PlatformClient } from '../http-client.js';
import { formatFields, formatTable, isoTime } from '../table.js';
import type { LibraryDeploymentJson } from './library.js';

export interface DeploymentJson {
  deployment_id: string;
  action: string;
  status: string;
  reason: string | null;
  variation_name: string;
  build_id: string | null;
  instance_type: string | null;
  traffic: {
    variations: Record<string, string>;
    audiences: Array<{ id: string; routes: RouteConfig[] }>;
    fallbackVariation: string | null;
    batching?: Record<string, { max_batch_rows?: number; max_wait_micros?: number }>;
    instanceTypes?: Record<string, string>;
  };
  updated_at: number;
}

export interface ModelDetailsJson {
  model: { model_id: string; project: string; description: string; kind: string; created_at: number };
  live_deployment: DeploymentJson | null;
  deployment_in_progress: DeploymentJson | null;
  /** Of the live replicas, how many serve the live deployment (or have the library model loaded). */
  replicas: { applied: number; total: number };
}

/** "applied on 2/3 replicas" */
const appliedOn = (r: { applied: number; total: number }) => `applied on ${r.applied}/${r.total} replica${r.total === 1 ? '' : 's'}`;

/** "dep_... (deploy of canary, LIVE since ...)": one deployment in a line. */
function deploymentLine(d: DeploymentJson): string {
  const what = d.action === 'undeploy' ? `undeploy of ${d.variation_name}` : `deploy of ${d.variation_name}`;
  return `${d.deployment_id} (${what}, ${d.status} since ${isoTime(d.updated_at)})${d.reason ? `: ${d.reason}` : ''}`;
}

function batching(b: { max_batch_rows?: number; max_wait_micros?: number } | undefined): string {
  const parts = [b?.max_batch_rows !== undefined ? `max_batch_rows ${b.max_batch_rows}` : '', b?.max_wait_micros !== undefined ? `max_wait_micros ${b.max_wait_micros}` : ''];
  return parts.filter(Boolean).join(', ') || 'default';
}

async function trafficTables(client: PlatformClient, live: DeploymentJson): Promise<string> {
  const t = live.traffic;
  const variations = Object.entries(t.variations).map(([name, build]) => [name, build, t.instanceTypes?.[name] ?? 'cpu', batching(t.batching?.[name])]);
  let out = '\n' + formatTable(['VARIATION', 'BUILD', 'INSTANCE', 'BATCHING'], variations);
  if (t.audiences.length === 0) return out;
  // The traffic holds audience ids only; their names make the routes readable.
  const { audiences } = await client.request<{ audiences: Array<{ id: string; name: string }> }>('GET', '/api/v1/audiences');
  const names = new Map(audiences.map((a) => [a.id, a.name]));
  const rows: string[][] = [];
  for (const a of t.audiences) {
    a.routes.forEach((r, i) => {
      rows.push([i === 0 ? a.id : '', i === 0 ? (names.get(a.id) ?? '-') : '', r.variation_name, `${r.weight} %`, r.shadow ? 'shadow copy' : 'routed']);
    });
  }
  out += '\n' + formatTable(['AUDIENCE', 'NAME', 'VARIATION', 'WEIGHT', 'ROUTE'], rows);
  return out;
}

export async function formatModelDetails(client: PlatformClient, info: ModelDetailsJson): Promise<string> {
  const m = info.model;
  const fields: Array<[string, string]> = [
    ['model', m.model_id],
    ['kind', m.kind],
    ['project', m.project],
    ['description', m.description || '-'],
    ['created', isoTime(m.created_at)],
  ];
  if (m.kind === 'library') {
    const dep = await client.request<LibraryDeploymentJson>('GET', `/api/v1/library/deployments/${encodeURIComponent(m.model_id)}`);
    fields.push(
      ['file', `${dep.file} (${dep.name})`],
      ['status', dep.status + (dep.reason ? `: ${dep.reason}` : '')],
      ['instance', `${dep.instance_type}${dep.threads !== null ? `, ${dep.threads} thread${dep.threads === 1 ? '' : 's'}` : ''}`],
    );
    fields.push(['replicas', appliedOn(dep.replicas ?? info.replicas) + (dep.placement !== null && dep.placement !== undefined ? ` (placed on ${dep.placement})` : '')]);
    if (dep.pending_instance_type) fields.push(['switching to', dep.pending_instance_type]);
    if (dep.last_instance_error) fields.push(['last switch failed', dep.last_instance_error]);
    fields.push(['licence', dep.license ?? '-']);
    return formatFields(fields);
  }
  const live = info.live_deployment;
  fields.push(['live', live ? deploymentLine(live) : 'nothing deployed']);
  if (live) fields.push(['replicas', appliedOn(info.replicas)]);
  if (info.deployment_in_progress) fields.push(['in progress', deploymentLine(info.deployment_in_progress)]);
  if (live) fields.push(['fallback', live.traffic.fallbackVariation ?? '-']);
  return formatFields(fields) + (live && Object.keys(live.traffic.variations).length > 0 ? await trafficTables(client, live) : '');
}
