// Management of realtime models: create and list models, upload builds (ONNX as
// application/octet-stream), deploy a build and follow the deployment's status, move a live model
// to another instance type.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { summarizeLibrary, type LibraryWindow } from '../../llm/metrics.js';
import { gatherWindows, type ClusterView } from '../cluster-metrics.js';
import type { VariationWindow } from '../../realtime/request-log.js';
import { DEFAULT_PROJECT, MODEL_ID_PATTERN, PROJECT_PATTERN } from '../../models/names.js';
import type { ModelRecord } from '../../models/store.js';
import type { BuildRecord } from '../../realtime/builds.js';
import type { DeploymentRecord } from '../../realtime/deployments.js';
import { holdsLibraryModel, type ReplicaDirectory } from '../../cluster/replicas.js';
import type { Realtime } from '../../realtime/service.js';
import { INSTANCE_TYPES, type InstanceType } from '../../native/surface.js';
import type { BatchingOverride } from '../../realtime/traffic.js';
import { summarizeVariations } from '../../realtime/variation-metrics.js';
import { WINDOW_MS } from '../../metrics/latency-summary.js';
import { invalidArgument } from '../../errors.js';
import { checkAction, checkProtectedChange, projectVisible } from '../../auth/permissions.js';
import { grantOf, type RouteAccess } from '../access.js';
import { latencySummarySchema, listOf, modelParams, responses, replicaCountSchema } from '../schemas.js';

export interface ModelRouteOptions {
  realtime: Realtime;
  maxBuildBytes: number;
  /** This replica's raw figures of a library (LLM) model over the window. */
  libraryWindow: (modelId: string) => LibraryWindow;
  /** The live replicas, whose figures the metrics route adds up. */
  cluster: ClusterView;
  /** The replicas on this database, to say on how many the live deployment is applied. */
  replicas: ReplicaDirectory;
}

const modelJson = (m: ModelRecord) => ({ model_id: m.id, project: m.project, description: m.description, kind: m.kind, created_at: m.createdAt });

const buildJson = (b: BuildRecord) => ({
  build_id: b.id,
  model_id: b.modelId,
  sha256: b.sha256,
  size_bytes: b.sizeBytes,
  features: b.features,
  outputs: b.outputs,
  operators: b.operators,
  opsets: b.opsets,
  created_at: b.createdAt,
});

const deploymentJson = (d: DeploymentRecord) => ({
  deployment_id: d.id,
  model_id: d.modelId,
  action: d.action,
  status: d.status,
  reason: d.reason,
  variation_name: d.variationName,
  build_id: d.buildId,
  instance_type: d.instanceType,
  traffic: d.traffic,
  created_at: d.createdAt,
  updated_at: d.updatedAt,
});

const modelSchema = {
  type: 'object',
  required: ['model_id', 'project', 'description', 'kind', 'created_at'],
  properties: {
    model_id: { type: 'string' },
    project: { type: 'string' },
    description: { type: 'string' },
    kind: { type: 'string', enum: ['realtime', 'library'] },
    created_at: { type: 'integer' },
  },
} as const;

const buildSchema = {
  type: 'object',
  required: ['build_id', 'model_id', 'sha256', 'size_bytes', 'features', 'outputs', 'operators', 'opsets', 'created_at'],
  properties: {
    build_id: { type: 'string' },
    model_id: { type: 'string' },
    sha256: { type: 'string' },
    size_bytes: { type: 'integer' },
    features: { type: 'array', items: { type: 'object', required: ['name', 'type'], properties: { name: { type: 'string' }, type: { type: 'string' } } } },
    outputs: { type: 'array', items: { type: 'string' } },
    operators: { type: 'array', items: { type: 'string' } },
    opsets: { type: 'object', additionalProperties: { type: 'integer' } },
    created_at: { type: 'integer' },
  },
} as const;

const routeSchema = {
  type: 'object',
  required: ['variation_name', 'weight', 'shadow'],
  properties: { variation_name: { type: 'string' }, weight: { type: 'number' }, shadow: { type: 'boolean' } },
} as const;

/** src/realtime/traffic.ts's TrafficConfig, as stored with the deployment (camelCase keys and all). */
const trafficSchema = {
  type: 'object',
  required: ['variations', 'audiences', 'fallbackVariation'],
  properties: {
    variations: { type: 'object', additionalProperties: { type: 'string' } },
    audiences: {
      type: 'array',
      items: { type: 'object', required: ['id', 'routes'], properties: { id: { type: 'string' }, routes: { type: 'array', items: routeSchema } } },
    },
    fallbackVariation: { type: ['string', 'null'] },
    // Deployments recorded before batching overrides or instance types carry neither.
    batching: {
      type: 'object',
      additionalProperties: { type: 'object', properties: { max_batch_rows: { type: 'integer' }, max_wait_micros: { type: 'integer' } } },
    },
    instanceTypes: { type: 'object', additionalProperties: { type: 'string', enum: [...INSTANCE_TYPES] } },
    // Variations only maintainers and admins may change (src/realtime/protection.ts); absent when none.
    protected: { type: 'array', items: { type: 'string' } },
  },
} as const;

const deploymentSchema = {
  type: 'object',
  required: ['deployment_id', 'model_id', 'action', 'status', 'reason', 'variation_name', 'build_id', 'instance_type', 'traffic', 'created_at', 'updated_at'],
  properties: {
    deployment_id: { type: 'string' },
    model_id: { type: 'string' },
    action: { type: 'string', enum: ['deploy', 'undeploy'] },
    status: { type: 'string', enum: ['PENDING', 'DEPLOYING', 'LIVE', 'FAILED', 'SUPERSEDED'] },
    reason: { type: ['string', 'null'] },
    variation_name: { type: 'string' },
    build_id: { type: ['string', 'null'] },
    // The deployed variation's; null for an undeploy.
    instance_type: { type: ['string', 'null'], enum: [...INSTANCE_TYPES, null] },
    traffic: trafficSchema,
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

const logSchema = {
  type: 'object',
  required: ['id', 'ts', 'request_id', 'variation', 'audience_id', 'shadow', 'status', 'latency_ms', 'error', 'request', 'response'],
  properties: {
    id: { type: 'integer' },
    ts: { type: 'integer' },
    request_id: { type: 'string' },
    variation: { type: 'string' },
    audience_id: { type: ['string', 'null'] },
    shadow: { type: 'boolean' },
    status: { type: 'integer' },
    latency_ms: { type: 'number' },
    error: { type: ['string', 'null'] },
    request: { type: ['string', 'null'] },
    response: { type: ['string', 'null'] },
  },
} as const;

/** src/realtime/variation-metrics.ts: a realtime model's figures per variation. */
/** How many of the live replicas gave their figures (this one included). */
const replicasAnsweredSchema = {
  type: 'object',
  required: ['answered', 'total'],
  properties: { answered: { type: 'integer' }, total: { type: 'integer' } },
} as const;

const realtimeMetricsSchema = {
  type: 'object',
  required: ['model_id', 'window_seconds', 'variations'],
  properties: {
    replicas: replicasAnsweredSchema,
    model_id: { type: 'string' },
    window_seconds: { type: 'integer' },
    variations: {
      type: 'array',
      items: {
        type: 'object',
        required: ['variation', 'shadow', 'requests_5m', 'throughput_rpm_5m', 'errors_5m', 'latency_ms'],
        properties: {
          variation: { type: 'string' },
          // true: the copies sent to this variation as a shadow, counted apart from its routed requests.
          shadow: { type: 'boolean' },
          requests_5m: { type: 'integer' },
          throughput_rpm_5m: { type: 'number' },
          errors_5m: { type: 'integer' },
          latency_ms: latencySummarySchema,
        },
      },
    },
  },
} as const;

/** src/llm/metrics.ts's LibraryMetrics: a library model's four figures. */
const libraryWindowSchema = {
  type: 'object',
  required: ['requests', 'samples'],
  properties: {
    requests: { type: 'integer' },
    samples: {
      type: 'array',
      items: {
        type: 'object',
        required: ['completionTokens', 'ttftMs', 'tpotMs'],
        properties: { completionTokens: { type: 'integer' }, ttftMs: { type: ['number', 'null'] }, tpotMs: { type: ['number', 'null'] } },
      },
    },
  },
} as const;

const variationWindowSchema = {
  type: 'object',
  required: ['variation', 'shadow', 'requests', 'errors', 'latenciesMs'],
  properties: {
    variation: { type: 'string' },
    shadow: { type: 'boolean' },
    requests: { type: 'integer' },
    errors: { type: 'integer' },
    latenciesMs: { type: 'array', items: { type: 'number' } },
  },
} as const;

const libraryMetricsSchema = {
  type: 'object',
  required: ['model_id', 'window_seconds', 'requests_5m', 'throughput_rpm_5m', 'token_throughput_tps', 'time_to_first_token_ms', 'time_per_output_token_ms'],
  properties: {
    // Of the live replicas, how many gave their figures: the figures are the whole cluster's.
    replicas: replicasAnsweredSchema,
    model_id: { type: 'string' },
    window_seconds: { type: 'integer' },
    requests_5m: { type: 'integer' },
    throughput_rpm_5m: { type: 'number' },
    token_throughput_tps: { type: 'number' },
    time_to_first_token_ms: latencySummarySchema,
    time_per_output_token_ms: latencySummarySchema,
  },
} as const;

/** `a,b,c` -> ['a', 'b', 'c'], refusing empty names. */
function nameList(value: string | undefined, param: string): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw invalidArgument(`${param} has an empty name; give comma-separated names`, param);
  return names;
}

/** What a route on one model (`:model_id`) needs: `action` on that model (src/server/access.ts). */
const onModel = (action: RouteAccess['action']): { access: RouteAccess } => ({
  access: { action, model: (request) => (request.params as { model_id: string }).model_id },
});

export const modelRoutes: FastifyPluginAsync<ModelRouteOptions> = async (app, opts) => {
  const { models, builds, deployments, deployer, requestLog } = opts.realtime;
  /** Refuses a member's change to a protected variation (src/realtime/protection.ts). */
  const guardFor = (request: FastifyRequest) => (modelId: string, variations: string[]) => checkProtectedChange(grantOf(request), modelId, variations);

  app.post<{ Body: { model_id: string; project?: string; description?: string } }>(
    '/api/v1/models',
    {
      config: { access: { action: 'manage-models', newProject: (request) => (request.body as { project?: string }).project ?? DEFAULT_PROJECT } },
      schema: {
        summary: 'Create a realtime model',
        body: {
          type: 'object',
          required: ['model_id'],
          properties: {
            model_id: { type: 'string', pattern: MODEL_ID_PATTERN },
            project: { type: 'string', pattern: PROJECT_PATTERN },
            description: { type: 'string', maxLength: 1024 },
          },
        },
        response: responses({ 201: modelSchema }),
      },
    },
    async (request, reply) => {
      const { model_id, project = DEFAULT_PROJECT, description = '' } = request.body;
      reply.code(201);
      return modelJson(await models.create(model_id, project, description));
    },
  );

  app.get<{ Querystring: { project?: string } }>(
    '/api/v1/models',
    {
      config: { access: { action: 'read', inHandler: "a project-scoped key lists only its project's models" } },
      schema: {
        summary: 'List the models (realtime and library), optionally of one project',
        querystring: { type: 'object', properties: { project: { type: 'string', maxLength: 64 } } },
        response: responses({ 200: listOf('models', modelSchema) }),
      },
    },
    async (request) => {
      const grant = grantOf(request);
      return { models: (await models.list(request.query.project)).filter((m) => projectVisible(grant, m.project)).map(modelJson) };
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/api/v1/models/:model_id',
    {
      config: onModel('read'),
      schema: {
        summary: 'Get a model with its live deployment and the one in progress',
        params: modelParams,
        response: responses({
          200: {
            type: 'object',
            required: ['model', 'live_deployment', 'deployment_in_progress', 'replicas'],
            properties: {
              model: modelSchema,
              live_deployment: { anyOf: [deploymentSchema, { type: 'null' }] },
              deployment_in_progress: { anyOf: [deploymentSchema, { type: 'null' }] },
              // Realtime: the live replicas that route by the live deployment; library: those with the model loaded.
              replicas: replicaCountSchema,
            },
          },
        }),
      },
    },
    async (request) => {
      const model = await models.get(request.params.model_id);
      const [live, busy] = await Promise.all([deployments.live(model.id), deployments.inProgress(model.id)]);
      const replicas = await opts.replicas.appliedOn((load) =>
        model.kind === 'library' ? holdsLibraryModel(load, model.id) : live !== undefined && load.serving.includes(live.id),
      );
      return { model: modelJson(model), live_deployment: live ? deploymentJson(live) : null, deployment_in_progress: busy ? deploymentJson(busy) : null, replicas };
    },
  );

  // Builds arrive as the raw ONNX bytes; names come in the query string.
  await app.register(async (uploads) => {
    // Only raw bytes here: a JSON body is a wrong content type (415), not a malformed model.
    uploads.removeAllContentTypeParsers();
    uploads.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit: opts.maxBuildBytes }, (_req, body, done) => done(null, body));
    uploads.post<{ Params: { model_id: string }; Querystring: { feature_names?: string; output_names?: string }; Body: Buffer }>(
      '/api/v1/models/:model_id/builds',
      {
        config: onModel('manage-models'),
        bodyLimit: opts.maxBuildBytes,
        schema: {
          summary: 'Upload an ONNX file as a new build (the raw bytes as application/octet-stream)',
          // The body is raw bytes, so there is no body schema; the API document reads this.
          consumes: ['application/octet-stream'],
          params: modelParams,
          querystring: {
            type: 'object',
            properties: { feature_names: { type: 'string', maxLength: 1_000_000 }, output_names: { type: 'string', maxLength: 100_000 } },
          },
          response: responses({ 201: buildSchema }),
        },
      },
      async (request, reply) => {
        const model = await models.get(request.params.model_id);
        if (model.kind !== 'realtime') throw invalidArgument(`model "${model.id}" is a library model; it takes no builds`, 'model_id');
        if (!Buffer.isBuffer(request.body) || request.body.length === 0) {
          throw invalidArgument('the request body must be the ONNX file, sent as application/octet-stream', 'file');
        }
        const featureNames = nameList(request.query.feature_names, 'feature_names');
        const outputNames = nameList(request.query.output_names, 'output_names');
        const build = await builds.create(model.id, request.body, { featureNames, outputNames });
        request.log.info({ modelId: model.id, buildId: build.id, bytes: build.sizeBytes }, 'build stored');
        reply.code(201);
        return buildJson(build);
      },
    );
  });

  app.get<{ Params: { model_id: string } }>(
    '/api/v1/models/:model_id/builds',
    {
      config: onModel('read'),
      schema: {
        summary: 'List the builds of a model',
        params: modelParams,
        response: responses({ 200: listOf('builds', buildSchema) }),
      },
    },
    async (request) => {
      const model = await models.get(request.params.model_id);
      return { builds: (await builds.list(model.id)).map(buildJson) };
    },
  );

  app.post<{ Params: { model_id: string }; Body: { build_id: string; variation_name?: string; audiences?: unknown[]; batching?: BatchingOverride; instance_type?: InstanceType; protected?: boolean } }>(
    '/api/v1/models/:model_id/deployments',
    {
      config: { access: { ...onModel('deploy').access, inHandler: 'protected variations: a member may not change them, nor set protected' } },
      schema: {
        summary: 'Deploy a build as a variation, with audiences, weights and shadows (202)',
        params: modelParams,
        body: {
          type: 'object',
          required: ['build_id'],
          properties: {
            build_id: { type: 'string', minLength: 1, maxLength: 64 },
            // The deployer checks the name rule by rule, so that the message says which one failed.
            variation_name: { type: 'string', maxLength: 256 },
            // The deploy file's realtime.audiences; checked rule by rule in deploy-plan.ts.
            audiences: { type: 'array', maxItems: 1000 },
            batching: {
              type: 'object',
              properties: {
                max_batch_rows: { type: 'integer', minimum: 1, maximum: 1_000_000 },
                max_wait_micros: { type: 'integer', minimum: 0, maximum: 1_000_000 },
              },
            },
            // cpu (default) or cuda (device 0); cuda on a host without it is a 400 naming the reason.
            instance_type: { type: 'string', enum: [...INSTANCE_TYPES] },
            // Maintainers and admins only: protect the deployed variation, or lift its protection.
            protected: { type: 'boolean' },
          },
        },
        response: responses({ 202: deploymentSchema }),
      },
    },
    async (request, reply) => {
      if (request.body.protected !== undefined) checkAction(grantOf(request), 'protect');
      const record = await deployer.deploy({
        modelId: request.params.model_id,
        buildId: request.body.build_id,
        variationName: request.body.variation_name,
        audiences: request.body.audiences,
        batching: request.body.batching,
        instanceType: request.body.instance_type,
        protect: request.body.protected,
        guard: guardFor(request),
      });
      reply.code(202);
      return deploymentJson(record);
    },
  );

  app.post<{ Params: { model_id: string }; Body: { variation_name: string; audiences?: unknown[] } }>(
    '/api/v1/models/:model_id/undeploy',
    {
      config: { access: { ...onModel('deploy').access, inHandler: 'protected variations: a member may not change them' } },
      schema: {
        summary: 'Take a variation out of service (202)',
        params: modelParams,
        body: {
          type: 'object',
          required: ['variation_name'],
          properties: { variation_name: { type: 'string', minLength: 1, maxLength: 256 }, audiences: { type: 'array', maxItems: 1000 } },
        },
        response: responses({ 202: deploymentSchema }),
      },
    },
    async (request, reply) => {
      const record = await deployer.undeploy({
        modelId: request.params.model_id,
        variationName: request.body.variation_name,
        audiences: request.body.audiences,
        guard: guardFor(request),
      });
      reply.code(202);
      return deploymentJson(record);
    },
  );

  // Moves every variation of a live model to another instance type (cpu or cuda); a new
  // deployment loads the builds on that backend and swaps traffic when they are ready.
  app.put<{ Params: { model_id: string }; Body: { instance_type: InstanceType } }>(
    '/api/v1/models/:model_id/instance-type',
    {
      config: { access: { ...onModel('deploy').access, inHandler: 'protected variations: a member may not change them' } },
      schema: {
        summary: 'Move every variation of a live model to another instance type (202)',
        params: modelParams,
        body: { type: 'object', required: ['instance_type'], properties: { instance_type: { type: 'string', enum: [...INSTANCE_TYPES] } } },
        response: responses({ 202: deploymentSchema }),
      },
    },
    async (request, reply) => {
      const record = await deployer.setInstanceType(request.params.model_id, request.body.instance_type, guardFor(request));
      reply.code(202);
      return deploymentJson(record);
    },
  );

  // Protects a live variation or lifts its protection, as a deployment of the live traffic with
  // only that changed (src/realtime/protection.ts).
  app.put<{ Params: { model_id: string; variation_name: string }; Body: { protected: boolean } }>(
    '/api/v1/models/:model_id/variations/:variation_name/protection',
    {
      config: onModel('protect'),
      schema: {
        summary: 'Protect a variation (only maintainers and admins may then change its traffic) or lift its protection (202)',
        params: {
          type: 'object',
          required: ['model_id', 'variation_name'],
          properties: { model_id: { type: 'string', maxLength: 64 }, variation_name: { type: 'string', minLength: 1, maxLength: 36 } },
        },
        body: { type: 'object', required: ['protected'], properties: { protected: { type: 'boolean' } } },
        response: responses({ 202: deploymentSchema }),
      },
    },
    async (request, reply) => {
      const record = await deployer.setProtection(request.params.model_id, request.params.variation_name, request.body.protected);
      reply.code(202);
      return deploymentJson(record);
    },
  );

  app.get<{ Params: { model_id: string }; Querystring: { variation?: string; shadow?: boolean; limit: number; before?: number } }>(
    '/api/v1/models/:model_id/logs',
    {
      config: onModel('read-logs'),
      schema: {
        summary: 'The request log of a model, newest first',
        params: modelParams,
        querystring: {
          type: 'object',
          properties: {
            variation: { type: 'string', maxLength: 36 },
            shadow: { type: 'boolean' },
            limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 100 },
            before: { type: 'integer', minimum: 1 },
          },
        },
        response: responses({ 200: listOf('logs', logSchema) }),
      },
    },
    async (request) => {
      const model = await models.get(request.params.model_id);
      const { variation, shadow, limit, before } = request.query;
      const logs = requestLog.query({ modelId: model.id, variation, shadow, limit, before });
      return {
        logs: logs.map((e) => ({
          id: e.id,
          ts: e.ts,
          request_id: e.requestId,
          variation: e.variation,
          audience_id: e.audienceId,
          shadow: e.shadow,
          status: e.status,
          latency_ms: e.latencyMs,
          error: e.error,
          request: e.request,
          response: e.response,
        })),
      };
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/api/v1/models/:model_id/metrics',
    {
      config: onModel('read'),
      schema: {
        summary: "A model's figures over the last 5 minutes: per variation (realtime) or the four LLM figures (library)",
        params: modelParams,
        // Which of the two depends on the model's kind.
        response: responses({ 200: { anyOf: [realtimeMetricsSchema, libraryMetricsSchema] } }),
      },
    },
    async (request) => {
      const model = await models.get(request.params.model_id);
      const path = `/api/v1/models/${encodeURIComponent(model.id)}/metrics/window`;
      if (model.kind === 'library') {
        const { windows, replicas } = await gatherWindows(request, opts.cluster, path, opts.libraryWindow(model.id));
        return { ...summarizeLibrary(model.id, windows), replicas };
      }
      const { windows, replicas } = await gatherWindows<VariationWindow[]>(request, opts.cluster, path, requestLog.window(model.id, Date.now() - WINDOW_MS));
      return { ...summarizeVariations(model.id, windows), replicas };
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/api/v1/models/:model_id/metrics/window',
    {
      config: onModel('read'),
      schema: {
        summary: "This replica's raw figures of a model over the last 5 minutes, which the metrics route adds up across replicas",
        params: modelParams,
        response: responses({ 200: { anyOf: [libraryWindowSchema, { type: 'array', items: variationWindowSchema }] } }),
      },
    },
    async (request) => {
      const model = await models.get(request.params.model_id);
      if (model.kind === 'library') return opts.libraryWindow(model.id);
      return requestLog.window(model.id, Date.now() - WINDOW_MS);
    },
  );

  app.get<{ Params: { model_id: string } }>(
    '/api/v1/models/:model_id/deployments',
    {
      config: onModel('read'),
      schema: {
        summary: 'List the deployments of a model',
        params: modelParams,
        response: responses({ 200: listOf('deployments', deploymentSchema) }),
      },
    },
    async (request) => {
      const model = await models.get(request.params.model_id);
      return { deployments: (await deployments.list(model.id)).map(deploymentJson) };
    },
  );

  app.get<{ Params: { deployment_id: string } }>(
    '/api/v1/deployments/:deployment_id',
    {
      // The model is the deployment's; an unknown deployment is the route's own 404.
      config: {
        access: {
          action: 'read',
          model: async (request) => (await deployments.get((request.params as { deployment_id: string }).deployment_id).catch(() => undefined))?.modelId,
        },
      },
      schema: {
        summary: 'Get one deployment and its status',
        params: { type: 'object', required: ['deployment_id'], properties: { deployment_id: { type: 'string', maxLength: 64 } } },
        response: responses({ 200: deploymentSchema }),
      },
    },
    async (request) => deploymentJson(await deployments.get(request.params.deployment_id)),
  );
};
