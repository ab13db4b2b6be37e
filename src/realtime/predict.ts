// The predict path as a service, below the HTTP route: find the model's live state, route the
// request to a variation (routing.ts), run the payload through that variation's build (payload ->
// batcher -> native executor -> one object per row), count and log the request, and hand a drawn
// shadow variation a copy once the caller has its answer. The primary and its shadow copy run,
// and are recorded, by the same two functions.
import type { FastifyBaseLogger } from 'fastify';
import { ApiError, invalidArgument, notFound, unavailable } from '../errors.js';
import type { ModelStore } from '../models/store.js';
import type { AudienceStore } from './audiences.js';
import type { Headers } from './conditions.js';
import type { DeploymentStore } from './deployments.js';
import type { LoadedBuild } from './loaded-build.js';
import type { PredictMetrics } from './metrics.js';
import { outputsToRows, type PredictRow } from './outputs.js';
import { payloadToInputs, type FeaturePayload } from './payload.js';
import type { LiveModel, RealtimeRegistry } from './registry.js';
import { logBody, type RequestLog } from './request-log.js';
import { routeRequest } from './routing.js';
import type { ShadowDispatcher } from './shadow.js';

export interface PredictRequest {
  modelId: string;
  /** The variation the URL names (no audience split, no shadow), or undefined to route by headers. */
  variation: string | undefined;
  headers: Headers;
  body: FeaturePayload;
  /** Logged with the primary and its shadow copy alike, so that the pair can be found. */
  requestId: string;
  log: FastifyBaseLogger;
}

export interface PredictAnswer {
  /** The variation that answered (sent as X-Variation). */
  variation: string;
  rows: PredictRow[];
}

export interface PredictServiceDeps {
  models: ModelStore;
  deployments: DeploymentStore;
  audiences: AudienceStore;
  registry: RealtimeRegistry;
  metrics: PredictMetrics;
  requestLog: RequestLog;
  shadows: ShadowDispatcher;
}

/** How one run through a build ended: its rows, or what it threw. */
type Outcome = { rows: PredictRow[] } | { rows: null; thrown: unknown };

/**
 * Who a recorded request was: the caller's (`primary`), the caller's with a shadow copy drawn
 * (`paired`: both bodies are logged so that the answers can be compared), or the shadow copy.
 */
type Role = 'primary' | 'paired' | 'copy';

const messageOf = (thrown: unknown) => (thrown instanceof Error ? thrown.message : String(thrown));

const elapsedMs = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e6;

/** Runs a payload through one build: the same path for the primary and for shadow copies. */
async function run(build: LoadedBuild, body: FeaturePayload): Promise<PredictRow[]> {
  const { inputs, rows } = payloadToInputs(build.schema, body);
  const outputs = await build.predict(inputs, rows);
  return outputsToRows(build.schema, outputs, rows);
}

async function settle(work: Promise<PredictRow[]>): Promise<Outcome> {
  try {
    return { rows: await work };
  } catch (thrown) {
    return { rows: null, thrown };
  }
}

export class PredictService {
  private readonly audiencePredicate: (audienceId: string) => ReturnType<AudienceStore['predicate']>;

  constructor(private readonly deps: PredictServiceDeps) {
    this.audiencePredicate = (audienceId) => deps.audiences.predicate(audienceId);
  }

  /** Answers one predict request, or throws the ApiError (or executor error) it failed with. */
  async predict(request: PredictRequest): Promise<PredictAnswer> {
    const started = process.hrtime.bigint();
    const { modelId } = request;
    // The live state is in memory; only a model that is not live here costs a database read,
    // to say why.
    const live = this.deps.registry.get(modelId) ?? (await this.notLive(modelId));
    const route = routeRequest(live.traffic, request.variation, request.headers, this.audiencePredicate);
    if (!route) throw unavailable(`model "${modelId}" has no variation to route to`);
    const build = live.variations.get(route.variation);
    if (!build) throw notFound(`model "${modelId}" has no variation "${route.variation}"`, 'variation_name');

    const outcome = await settle(run(build, request.body));
    this.recordRequest(request, route.variation, route.audienceId, route.shadow !== null ? 'paired' : 'primary', outcome, started);
    if (outcome.rows === null) throw outcome.thrown;
    if (route.shadow !== null) this.sendShadow(request, live, route.shadow, route.audienceId);
    return { variation: route.variation, rows: outcome.rows };
  }

  /** Why a model that is not live in the registry cannot answer: always throws. */
  private async notLive(modelId: string): Promise<never> {
    const model = await this.deps.models.find(modelId);
    if (!model) throw notFound(`model "${modelId}" does not exist`, 'model_id');
    if (model.kind !== 'realtime') throw invalidArgument(`model "${modelId}" is a library model; call /v1/${modelId}/chat/completions`, 'model_id');
    const pending = await this.deps.deployments.inProgress(modelId);
    if (pending) throw unavailable(`model "${modelId}" is not live yet: deployment ${pending.id} is ${pending.status}`);
    throw unavailable(`model "${modelId}" is not live: no variation is deployed`);
  }

  /** Queues the copy for the shadow variation; it runs after the caller's answer, under its own timeout. */
  private sendShadow(request: PredictRequest, live: LiveModel, variation: string, audienceId: string | null): void {
    const build = live.variations.get(variation);
    if (!build) return;
    this.deps.shadows.submit(async (deadline) => {
      const started = process.hrtime.bigint();
      const outcome = await settle(Promise.race([run(build, request.body), deadline]));
      this.recordRequest(request, variation, audienceId, 'copy', outcome, started);
      if (outcome.rows === null) request.log.debug({ modelId: request.modelId, variation, error: messageOf(outcome.thrown) }, 'shadow request failed');
    });
  }

  /**
   * One request in the metrics and the request log. The latency histogram is the callers'
   * latency, so shadow copies stay out of it; bodies are kept for shadow pairs.
   */
  private recordRequest(request: PredictRequest, variation: string, audienceId: string | null, role: Role, outcome: Outcome, started: bigint): void {
    const latencyMs = elapsedMs(started);
    const { modelId } = request;
    const failed = outcome.rows === null;
    const status = !failed ? 200 : outcome.thrown instanceof ApiError ? outcome.thrown.status : 500;
    const keepBodies = role !== 'primary';
    this.deps.metrics.requests.inc({ model: modelId, variation, status: String(status) });
    if (role !== 'copy') this.deps.metrics.latency.observe({ model: modelId, variation }, latencyMs / 1000);
    this.deps.requestLog.add({
      ts: Date.now(),
      requestId: request.requestId,
      modelId,
      variation,
      audienceId,
      shadow: role === 'copy',
      status,
      latencyMs,
      error: failed ? messageOf(outcome.thrown) : null,
      request: keepBodies ? logBody(request.body) : null,
      response: keepBodies && !failed ? logBody(outcome.rows) : null,
    });
  }
}
