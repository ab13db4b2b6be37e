// The API's own description: an OpenAPI 3.1 document built by @fastify/swagger from the routes' JSON
// schemas, served at GET /openapi.json, and a docs page at GET /docs (Swagger UI, whose files ship
// in @fastify/swagger-ui and are served from this host: nothing is fetched from elsewhere). Both
// need the bearer token like every other route (DESIGN.md section 3) unless DOCS_PUBLIC=1: app.ts
// registers `docsRoutes` inside or outside the token scope, and the document says which.
// Route files only add a `summary`; the rest is added here, in one place: the tag (from the URL),
// the security (from where the route was registered), the error responses, binary bodies. These
// additions go to a copy of the schema that only the document reads, so validation and
// serialization stay exactly as each route declares them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import swagger, { type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifyPluginAsync, FastifySchema } from 'fastify';
import { errorBodySchema } from '../errors.js';
import { packageRoot } from '../native/addon.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by `documentTokenRequired` on the routes behind the bearer-token hook. */
    openapiTokenRequired?: boolean;
  }
}

export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PREFIX = '/docs';
/** The name of the bearer scheme in components.securitySchemes. */
export const BEARER_SCHEME = 'platformToken';
/** The name of the error body in components.schemas. */
export const ERROR_COMPONENT = 'Error';

const TAGS = [
  { name: 'auth', description: 'Exchange an API key for an access token' },
  { name: 'keys', description: 'The API keys of this host (ids and names, never secrets)' },
  { name: 'engine', description: 'The native inference engine of this host' },
  { name: 'replicas', description: 'The replicas of the host on its database: state, heartbeat, configuration applied' },
  { name: 'realtime models', description: 'Tabular (ONNX) models: builds, deployments, variations, predictions, request logs, metrics' },
  { name: 'audiences', description: 'Request conditions that route traffic to variations' },
  { name: 'library', description: 'GGUF models of MODELS_DIR: the catalogue and library deployments' },
  { name: 'chat (OpenAI)', description: 'OpenAI-compatible chat and completions, and the tokenizer of library models' },
  { name: 'vectors', description: 'Collections of vectors: upsert, search, fetch, delete' },
  { name: 'health/metrics', description: 'Liveness, readiness and Prometheus metrics' },
  { name: 'docs', description: 'This document and its docs page' },
] as const;
type Tag = (typeof TAGS)[number]['name'];

// First match wins; the order matters where one area's URLs sit inside another's
// (tokenize under /api/v1/models, chat under /v1/<model_id>).
const TAG_RULES: ReadonlyArray<readonly [RegExp, Tag]> = [
  [/^\/(healthz|readyz|metrics)$/, 'health/metrics'],
  [/^\/api\/v1\/authentication\//, 'auth'],
  [/^\/api\/v1\/keys(\/|$)/, 'keys'],
  [/^\/api\/v1\/engine$/, 'engine'],
  [/^\/api\/v1\/replicas$/, 'replicas'],
  [/^\/api\/v1\/models\/[^/]+\/(tokenize|detokenize)$/, 'chat (OpenAI)'],
  [/^\/api\/v1\/(models|deployments)(\/|$)/, 'realtime models'],
  [/^\/v1\/[^/]+(\/[^/]+)?\/predict$/, 'realtime models'],
  [/^\/api\/v1\/audiences(\/|$)/, 'audiences'],
  [/^\/api\/v1\/library(\/|$)/, 'library'],
  [/^\/api\/v1\/vectors(\/|$)/, 'vectors'],
  [/^\/v1(\/|$)/, 'chat (OpenAI)'],
  [/^\/(openapi\.json|docs)(\/|$)/, 'docs'],
];

export function tagOf(url: string): Tag | undefined {
  return TAG_RULES.find(([pattern]) => pattern.test(url))?.[1];
}

const ERROR_DESCRIPTIONS: Record<string, string> = {
  '4xx': 'The request was refused: the error body names the code and, for a bad field, the field (param)',
  '5xx': 'The server failed or is not ready (shutting down, model loading): the error body says why',
};
const ERROR_DESCRIPTION_SET = new Set(Object.values(ERROR_DESCRIPTIONS));

const TOKEN_DESCRIPTION =
  'An access token: an HS256 JWT valid for 24 hours. Exchange your API key for one at ' +
  '`POST /api/v1/authentication/platform-api-key` (body `{"platformApiKey": "<key>"}`), then send it ' +
  'as `Authorization: Bearer <accessToken>`.';

// The docs page's own routes that the document lists; its asset routes (/docs/, /docs/static/...)
// stay hidden, as @fastify/swagger-ui registers them.
const DOCS_ROUTES: Record<string, FastifySchema> = {
  [DOCS_PREFIX]: {
    summary: 'The API docs page (Swagger UI)',
    response: { 200: { description: 'An HTML page; its scripts and styles are served from /docs/static/', content: { 'text/html': { schema: { type: 'string' } } } } },
  },
  [`${DOCS_PREFIX}/json`]: {
    summary: 'The OpenAPI document, as the docs page loads it (the same as /openapi.json)',
    response: { 200: { description: 'The OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } } },
  },
  [`${DOCS_PREFIX}/yaml`]: {
    summary: 'The OpenAPI document as YAML',
    response: { 200: { description: 'The OpenAPI 3.1 document', content: { 'application/x-yaml': { schema: { type: 'string' } } } } },
  },
};

type ResponseMap = Record<string, unknown>;

const SUCCESS_DESCRIPTIONS: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the work goes on in the background; the answer says how to follow it',
  204: 'Done; no body',
};

function isUndescribed(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !('description' in value) && !('x-response-description' in value);
}

function describeError(code: string): string {
  return ERROR_DESCRIPTIONS[`${code[0]}xx`] ?? ERROR_DESCRIPTIONS['4xx']!;
}

/** The doc-only schema of one route: its own, plus tag, security, error responses, binary body. */
const documentRoute: SwaggerTransform = ({ schema, url: routeUrl, route }) => {
  // The page answers at /docs and /docs/; Fastify hands its route over with the slash.
  const url = routeUrl === `${DOCS_PREFIX}/` ? DOCS_PREFIX : routeUrl;
  const doc: Record<string, unknown> = { ...(DOCS_ROUTES[url] ?? schema ?? {}) };
  const tag = tagOf(url);
  if (tag && !doc.tags) doc.tags = [tag];
  if (route.config?.openapiTokenRequired) doc.security = [{ [BEARER_SCHEME]: [] }];
  // What the caller's key needs (src/server/access.ts): the action, whose roles are in the README.
  const access = route.config?.access;
  if (access) doc['x-access'] = { action: access.action, ...(access.inHandler ? { checked_in_handler: access.inHandler } : {}) };

  // A route that takes raw bytes declares its media types in `consumes` and has no body schema.
  const consumes = doc.consumes as readonly string[] | undefined;
  if (!doc.body && consumes?.length && !consumes.some((type) => type.includes('json'))) {
    doc.body = { type: 'string', format: 'binary', description: `The raw bytes (${consumes.join(', ')})` };
  }

  // The error body on 4xx and 5xx, also for routes that declare no response schema.
  const response: ResponseMap = { ...((doc.response as ResponseMap | undefined) ?? {}) };
  if (!Object.keys(response).some((code) => /^[23]/.test(code))) {
    response[200] = { description: 'Success', content: { '*/*': { schema: {} } } };
  }
  for (const [code, value] of Object.entries(response)) {
    if (value === errorBodySchema) response[code] = { ...errorBodySchema, description: describeError(code) };
    else if (/^[23]/.test(code) && isUndescribed(value)) response[code] = { ...value, 'x-response-description': SUCCESS_DESCRIPTIONS[code] ?? 'Success' };
  }
  for (const range of ['4xx', '5xx']) {
    // Exact codes a route declares stay; the range covers the rest (401 without a token, 400, 500...).
    if (!Object.keys(response).some((code) => code.toLowerCase() === range)) {
      response[range] = { ...errorBodySchema, description: ERROR_DESCRIPTIONS[range] };
    }
  }
  doc.response = response;
  return { schema: doc as FastifySchema, url };
};

/** Points every error response built from the error body at the one component. */
const referenceErrorComponent: SwaggerTransformObject = (documentObject) => {
  if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
  const { openapiObject } = documentObject;
  const ref = { $ref: `#/components/schemas/${ERROR_COMPONENT}` };
  for (const item of Object.values(openapiObject.paths ?? {})) {
    for (const operation of Object.values(item ?? {})) {
      const responses = (operation as { responses?: Record<string, { description?: string; content?: unknown }> }).responses;
      for (const response of Object.values(responses ?? {})) {
        if (response.description && ERROR_DESCRIPTION_SET.has(response.description)) {
          response.content = { 'application/json': { schema: ref } };
        }
      }
    }
  }
  return openapiObject;
};

function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown };
  if (typeof version !== 'string') throw new Error('package.json has no "version"');
  return version;
}

/**
 * Registers the document generator. Call it before any route is registered: the generator learns
 * the routes as they are added. The routes that serve the document are `docsRoutes`.
 */
export async function registerOpenApi(server: FastifyInstance): Promise<void> {
  await server.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'model-serving-platform API',
        version: packageVersion(),
        description:
          'Realtime (ONNX) models with variations, audiences, canaries and shadows; GGUF models behind an ' +
          'OpenAI-compatible API; a vector store. Every error has one shape, the `Error` schema. Operations ' +
          'with the `platformToken` security scheme need an access token: exchange an API key for one at ' +
          '`POST /api/v1/authentication/platform-api-key`.',
      },
      tags: TAGS.map((tag) => ({ ...tag })),
      components: {
        securitySchemes: { [BEARER_SCHEME]: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: TOKEN_DESCRIPTION } },
        schemas: { [ERROR_COMPONENT]: errorBodySchema as object },
      },
    },
    transform: documentRoute,
    transformObject: referenceErrorComponent,
  });
}

/**
 * GET /openapi.json and the /docs page with its files. Registered by app.ts inside the token scope
 * (the default) or beside it (DOCS_PUBLIC=1); `registerOpenApi` must have run on the root first.
 */
export const docsRoutes: FastifyPluginAsync = async (scope) => {
  await scope.register(swaggerUi, { routePrefix: DOCS_PREFIX, theme: { title: 'model-serving-platform API docs' } });

  let body: string | undefined;
  scope.get(
    OPENAPI_PATH,
    {
      schema: {
        summary: 'The OpenAPI document of this API',
        response: { 200: { description: 'The OpenAPI 3.1 document', type: 'object' } },
      },
    },
    async (_request, reply) => {
      // Built once, on the first request (after every route exists), and sent as JSON text.
      body ??= JSON.stringify(scope.swagger());
      reply.type('application/json; charset=utf-8');
      return body;
    },
  );
};

/** Marks every route registered in `scope` from now on as one that needs the bearer token. */
export function documentTokenRequired(scope: FastifyInstance): void {
  scope.addHook('onRoute', (route) => {
    route.config = { ...route.config, openapiTokenRequired: true };
  });
}
