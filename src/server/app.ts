// The Fastify app: plugins for errors, validation, auth and each area's routes. It holds no
// process state of its own (no signals, no listening), so tests build it in-process and main.ts
// wraps it for production.
import crypto from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { Store } from '../store/store.js';
import { ApiKeyStore } from '../auth/api-keys.js';
import { FailureLimiter } from '../auth/failure-limiter.js';
import { resolveTokenSecret } from '../auth/token-secret.js';
import { TokenIssuer } from '../auth/tokens.js';
import { bearerAuth } from './authenticate.js';
import { checkRouteRole, checkRouteScope, requireDeclarations } from './access.js';
import { clientErrorHandler, frameworkErrors, installErrorHandling, lingerOnClose, MAX_PARAM_LENGTH, serializeRequest } from './error-handler.js';
import { installJsonParser } from './json-body.js';
import { createMetricsRegistry, instrumentRequests, metricsRoute } from './metrics.js';
import { docsRoutes, documentTokenRequired, registerOpenApi } from './openapi.js';
import { engineRoutes } from './routes/engine.js';
import { replicaRoutes } from './routes/replicas.js';
import { healthRoutes } from './routes/health.js';
import { keysRoutes } from './routes/keys.js';
import { tokenRoutes } from './routes/token.js';
import { validatorCompiler } from '../validation.js';
import { openVectorCache } from '../vectors/cache-file.js';
import { VectorService } from '../vectors/service.js';
import { SharedVectorLog, VECTORS_CHANNEL } from '../vectors/shared-log.js';
import { vectorRoutes } from './routes/vectors.js';
import { createRealtime, type Realtime } from '../realtime/service.js';
import { ConfigListener } from '../cluster/config-listener.js';
import { ConfigSync } from '../cluster/config-sync.js';
import { ReplicaDirectory } from '../cluster/replicas.js';
import { LibraryForwarder, REPLICA_HEADER } from './forward.js';
import type { EngineInfo } from '../native/surface.js';
import { cudaUnavailableReason } from '../native/cuda-availability.js';
import { LibraryService } from '../llm/library/service.js';
import { LlmMetrics } from '../llm/metrics.js';
import { chatRoutes } from './routes/chat.js';
import { openAiRootRoutes } from './routes/openai-root.js';
import { embeddingsRoutes } from './routes/embeddings.js';
import { libraryRoutes } from './routes/library.js';
import { realtimeRoutes } from './routes/realtime.js';
import { consoleRoutes } from './routes/console.js';

export interface AppDeps {
  config: Config;
  /** The store of record (SQLite or PostgreSQL); the app does not close it. */
  store: Store;
  /** What the native engine reports about itself. */
  engineInfo: () => EngineInfo;
  /** Milliseconds since the epoch; tests inject a clock to expire tokens. */
  clock?: () => number;
  /** Where logs go; defaults to stdout. */
  logStream?: NodeJS.WritableStream;
}

export interface App {
  server: FastifyInstance;
  metrics: Registry;
  keys: ApiKeyStore;
  tokens: TokenIssuer;
  realtime: Realtime;
  vectors: VectorService;
  library: LibraryService;
  /** This replica among those on the database, and its snapshot of the configuration. */
  cluster: { replicas: ReplicaDirectory; sync: ConfigSync };
  /** Marks the app as draining: /readyz answers 503 from then on, and deployments stop waiting for it. */
  beginShutdown(): Promise<void>;
}

// Keys, tokens and secrets never reach the log, whatever a later log line includes.
const REDACT = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'platformApiKey',
  '*.platformApiKey',
  'accessToken',
  '*.accessToken',
  'key',
  '*.key',
];

export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, store } = deps;
  const clock = deps.clock ?? Date.now;
  const logger: FastifyServerOptions['logger'] = {
    level: config.logLevel,
    redact: { paths: REDACT, censor: '[redacted]' },
    // Credentials in a URL's query string (refused, but logged with the request) are redacted too.
    serializers: { req: serializeRequest },
    ...(deps.logStream ? { stream: deps.logStream } : {}),
  };
  const server = Fastify({
    logger,
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => crypto.randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Room for the longest vector id, percent-encoded; longer path parameters are a 414.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Errors before routing and of the HTTP parser, in our error shape (error-handler.ts).
    frameworkErrors: frameworkErrors(config.replica.id, config.bodyLimitBytes),
    clientErrorHandler,
  });
  // A connection closed after its response reads what the client still sends first, so that the
  // kernel does not reset it and cut the response short (error-handler.ts).
  server.server.on('connection', lingerOnClose);
  server.setValidatorCompiler(validatorCompiler);
  // Only JSON is accepted unless a route says otherwise (ONNX uploads add octet-stream).
  server.removeContentTypeParser('text/plain');
  // Every JSON body is refused past MAX_JSON_DEPTH levels of nesting before it is parsed.
  installJsonParser(server);
  installErrorHandling(server, config.bodyLimitBytes);
  server.decorateRequest('apiKeyId', null);
  server.decorateRequest('grant', null);
  // Which replica answered; a forwarded answer carries the one that generated it instead.
  server.addHook('onRequest', async (_request, reply) => {
    reply.header(REPLICA_HEADER, config.replica.id);
  });
  let ready = true;
  server.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // While draining, close each connection after its response instead of keeping it alive.
    if (!ready) reply.header('connection', 'close');
  });

  const keys = new ApiKeyStore(store.db, clock);
  // Revocations are read into memory and kept current, so that no request reads the database.
  await keys.revocations.start();
  const tokens = new TokenIssuer(resolveTokenSecret(config.dataDir, config.tokenSecret), clock);
  const limiter = new FailureLimiter(config.authFailureLimit, config.authFailureWindowMs, clock);
  const metrics = createMetricsRegistry();
  instrumentRequests(server, metrics);

  const realtime = await createRealtime({ db: store.db, config, clock, metrics, log: server.log, cudaUnavailable: () => cudaUnavailableReason() });
  const vectors = await openVectors(store, config, server.log, metrics);
  const library = new LibraryService(store.db, realtime.models, { modelsDir: config.modelsDir, cudaUnavailable: () => cudaUnavailableReason(), engine: config.llm, deployTimeoutMs: config.replica.deployTimeoutMs }, server.log, clock);
  const llmMetrics = new LlmMetrics(metrics, () => library.liveInstances().filter(({ instance }) => !instance.embedder).map(({ modelId, instance }) => ({ modelId, stats: instance.model.stats() })), clock);

  // This replica's routing snapshot, kept current (src/cluster/): read before the app serves.
  const replicas = new ReplicaDirectory(store.db, { id: config.replica.id, address: config.replica.address ?? `http://${config.host}:${config.port}` }, config.replica.timeoutMs);
  const databaseUrl = store.dialect === 'postgres' ? config.databaseUrl : undefined;
  const sync = new ConfigSync({
    db: store.db,
    replicas,
    parts: [
      keys.revocations.snapshotPart,
      realtime.audiences.snapshotPart,
      realtime.deployer.snapshotPart,
      library.snapshotPart,
      ...(vectors.snapshotPart ? [vectors.snapshotPart] : []),
    ],
    load: () => {
      const copies = vectors.copies();
      return { ...realtime.deployer.load(), library: library.loadedIds(), ...(copies ? { vectors: copies } : {}) };
    },
    pollMs: config.replica.configPollMs,
    heartbeatMs: Math.max(50, Math.round(config.replica.timeoutMs / 5)),
    log: server.log,
    ...(databaseUrl
      ? {
          listener: ({ onVersion, onListening }) =>
            new ConfigListener({
              url: databaseUrl,
              applicationName: `platform-listen ${config.replica.id}`,
              log: server.log,
              onListening,
              onNotification: (payload) => {
                const version = Number(payload);
                if (Number.isSafeInteger(version)) onVersion(version);
              },
            }),
        }
      : {}),
  });
  // Vector writes wake the replicas on a channel of their own (each names its collection).
  const vectorListener = databaseUrl
    ? new ConfigListener({
        url: databaseUrl,
        applicationName: `platform-listen-vectors ${config.replica.id}`,
        channel: VECTORS_CHANNEL,
        log: server.log,
        onNotification: (payload) => vectors.notified(payload),
        onListening: () => vectors.listening(),
      })
    : undefined;
  realtime.deployer.changed = () => sync.poke();
  library.cluster = {
    selfId: replicas.self.id,
    live: () => sync.liveReplicas,
    poke: () => sync.poke(),
    othersLive: async () => (await replicas.live()).some((r) => r.id !== replicas.self.id),
  };
  await sync.start();
  vectorListener?.start();
  vectors.startFollowing();
  // After the first snapshot: the library places its models on the replicas it now knows.
  await library.restore();
  const forwarder = new LibraryForwarder({
    selfId: replicas.self.id,
    live: () => sync.reachableReplicas,
    servedHere: (modelId) => library.servesHere(modelId),
    deployedLive: async (modelId) => (await library.find(modelId))?.status === 'LIVE',
  });
  // In this order: stop reading the configuration, then let go of what it loaded.
  server.addHook('onClose', async () => {
    await sync.stop();
    await vectorListener?.stop();
    keys.revocations.stop();
    await library.close();
    await realtime.close();
    await vectors.close();
  });

  // First: the document learns each route as it is registered.
  await registerOpenApi(server);
  await server.register(healthRoutes, {
    isReady: () => ready && sync.hasSnapshot(),
    notReadyFor: () =>
      vectors
        .catchingUp()
        .map((c) => `the vector collection "${c.name}" (${c.copy ? `at change ${c.copy.applied} of ${c.copy.head}` : 'loading its indexes'})`),
  });
  await server.register(tokenRoutes, { keys, tokens, limiter });
  if (config.metricsPublic) await server.register(metricsRoute, { registry: metrics });
  if (config.docsPublic) await server.register(docsRoutes);
  await server.register(consoleRoutes); // the web console's files: public; its API calls carry the token

  // Everything registered in here requires a bearer token.
  await server.register(async (api) => {
    api.addHook('onRequest', bearerAuth(tokens, keys));
    // Then what the key may do: its role, then its scope once the request is parsed (access.ts).
    api.addHook('onRequest', checkRouteRole);
    api.addHook(
      'preHandler',
      checkRouteScope({
        projectOf: async (modelId) => (await realtime.models.find(modelId))?.project,
        tenancy: (name) => vectors.tenancy(name),
      }),
    );
    requireDeclarations(api);
    documentTokenRequired(api);
    if (!config.metricsPublic) await api.register(metricsRoute, { registry: metrics });
    if (!config.docsPublic) await api.register(docsRoutes);
    await api.register(keysRoutes, { keys });
    await api.register(engineRoutes, { engineInfo: deps.engineInfo });
    await api.register(replicaRoutes, { replicas, db: store.db });
    await api.register(realtimeRoutes, {
      realtime,
      maxBuildBytes: config.maxBuildBytes,
      libraryWindow: (id) => llmMetrics.window(id),
      cluster: { selfId: replicas.self.id, live: () => sync.liveReplicas },
      replicas,
    });
    await api.register(libraryRoutes, { library, replicas });
    await api.register(chatRoutes, { library, metrics: llmMetrics, forwarder });
    await api.register(openAiRootRoutes, { library, metrics: llmMetrics, forwarder });
    await api.register(embeddingsRoutes, { library, metrics: llmMetrics, forwarder });
    await api.register(vectorRoutes, { vectors, maxBodyBytes: config.vectors.maxBodyBytes });
  });

  return {
    server,
    metrics,
    keys,
    tokens,
    realtime,
    vectors,
    library,
    cluster: { replicas, sync },
    beginShutdown: async () => {
      ready = false;
      await sync.drain();
    },
  };
}

/**
 * The vector store: on SQLite, its tables in the store's own file; on PostgreSQL, the shared log
 * there, with this replica's copy in a cache file of its own in DATA_DIR (src/vectors/cache-file.ts).
 */
async function openVectors(store: Store, config: Config, log: FastifyBaseLogger, metrics: Registry): Promise<VectorService> {
  if (store.local) return new VectorService(store.local, config.vectors, config.dataDir, log, metrics);
  const shared = new SharedVectorLog(store.db);
  const cache = await openVectorCache(config.dataDir, shared, log);
  return new VectorService(cache.db, config.vectors, cache.dir, log, metrics, {
    log: shared,
    pollMs: config.vectors.pollMs,
    readTimeoutMs: config.vectors.readTimeoutMs,
    tombstoneRetentionMs: config.vectors.tombstoneRetentionMs,
  });
}
