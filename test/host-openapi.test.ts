// The API document (GET /openapi.json) and the docs page (GET /docs), through the real host: the
// document is valid OpenAPI 3.1, lists every route Fastify registered with a summary and a tag,
// points every error response at the one error body, says which routes need the token (and the
// host agrees, route by route), and the docs page loads all of its files from this host. The
// document and the page need the token like every route (DESIGN.md section 3) unless
// DOCS_PUBLIC=1, and the document says so in both modes.
import diagnostics from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { errorBodySchema } from '../src/errors.js';
import { packageRoot } from '../src/native/addon.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';

interface Operation {
  summary?: string;
  tags?: string[];
  security?: Array<Record<string, string[]>>;
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Record<string, unknown> }> }>;
}
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  tags: Array<{ name: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, Record<string, string>> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];
/** The routes that need no token, by default and with DOCS_PUBLIC=1. */
const PUBLIC = new Set(['GET /healthz', 'GET /readyz', 'POST /api/v1/authentication/platform-api-key']);
const DOCS = ['GET /openapi.json', 'GET /docs', 'GET /docs/json', 'GET /docs/yaml'];
const PUBLIC_WITH_DOCS = new Set([...PUBLIC, ...DOCS]);
const TAGS = ['auth', 'keys', 'engine', 'replicas', 'realtime models', 'audiences', 'library', 'chat (OpenAI)', 'vectors', 'health/metrics'];

/** Starts a host, recording each route Fastify registers (HEAD twins left out). */
async function startRecordingRoutes(env: Record<string, string> = {}): Promise<{ host: TestHost; routes: string[] }> {
  const routes: string[] = [];
  const onInit = (message: unknown) => {
    (message as { fastify: FastifyInstance }).fastify.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push(`${method} ${route.url}`);
    });
  };
  diagnostics.subscribe('fastify.initialization', onInit);
  try {
    return { host: await listen(await startInProcessHost(env)), routes };
  } finally {
    diagnostics.unsubscribe('fastify.initialization', onInit);
  }
}

function operations(doc: OpenApiDocument): Array<{ key: string; path: string; method: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, method: method.toUpperCase(), op })),
  );
}

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

async function fetchDocument(host: TestHost, token?: string): Promise<OpenApiDocument> {
  const res = await fetch(`${host.url}/openapi.json`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return (await res.json()) as OpenApiDocument;
}

/**
 * Where the document and the host disagree about the token: each operation's `security` against
 * `publicRoutes`, and the host's answer without a token (a protected route answers 401 before it
 * reads anything; a public one never does).
 */
async function securityMismatches(host: TestHost, doc: OpenApiDocument, publicRoutes: ReadonlySet<string>): Promise<string[]> {
  const wrong: string[] = [];
  for (const { key, path, method, op } of operations(doc)) {
    const expected = publicRoutes.has(key) ? undefined : [{ platformToken: [] }];
    if (JSON.stringify(op.security) !== JSON.stringify(expected)) wrong.push(`${key}: security ${JSON.stringify(op.security)}`);
    const res = await fetch(host.url + path.replace(/\{[^}]+\}/g, 'probe'), { method });
    await res.arrayBuffer();
    if ((res.status === 401) !== Boolean(op.security)) wrong.push(`${key}: ${res.status} without a token`);
  }
  return wrong;
}

/** Fetches the docs page at `page` and every file it names, all from this host. */
async function checkDocsPage(host: TestHost, page: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(host.url + page, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await res.text();
  expect(html).toContain('<title>model-serving-platform API docs</title>');
  const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(refs.length).toBeGreaterThanOrEqual(5);
  expect(refs.some((r) => r.endsWith('swagger-ui-bundle.js'))).toBe(true);
  expect(refs.some((r) => r.endsWith('swagger-ui.css'))).toBe(true);
  for (const ref of refs) {
    const url = new URL(ref, host.url + page);
    expect(url.origin, ref).toBe(new URL(host.url).origin);
    const asset = await fetch(url, { headers });
    const bytes = await asset.arrayBuffer();
    expect(asset.status, url.pathname).toBe(200);
    expect(bytes.byteLength, url.pathname).toBeGreaterThan(0);
    const type = asset.headers.get('content-type') ?? '';
    if (ref.endsWith('.js')) expect(type, url.pathname).toMatch(/javascript/);
    if (ref.endsWith('.css')) expect(type, url.pathname).toMatch(/^text\/css/);
    if (ref.endsWith('.png')) expect(type, url.pathname).toMatch(/^image\/png/);
  }
}

let host: TestHost;
let routes: string[];
let doc: OpenApiDocument;
let auth: Record<string, string>;

beforeAll(async () => {
  ({ host, routes } = await startRecordingRoutes());
  auth = { authorization: `Bearer ${(await tokenFor(host)).token}` };
  doc = await fetchDocument(host, (await tokenFor(host, 'docs')).token);
});
afterAll(async () => {
  await host.close();
});

describe('GET /openapi.json', () => {
  it('needs the token, as every route but the health checks does', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-a-token' }] as Array<Record<string, string>>) {
      const refused = await fetch(`${host.url}/openapi.json`, { headers });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
    }
    expect((await fetch(`${host.url}/openapi.json`, { headers: auth })).status).toBe(200);
    expect((await fetch(`${host.url}/api/v1/engine`, { headers: auth })).status).toBe(200);
  });

  it('is a valid OpenAPI 3.1 document with a title and the package version', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    // Every $ref resolves.
    expect(() => validator.resolveRefs()).not.toThrow();

    const pkg = JSON.parse(readFileSync(`${packageRoot()}/package.json`, 'utf8')) as { version: string };
    expect(doc.info.version).toBe(pkg.version);
    expect(doc.info.title).toMatch(/\S/);

    // The validator does refuse a broken document, so the pass above means something.
    const broken = structuredClone(doc) as unknown as Record<string, unknown>;
    delete broken.info;
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it('lists every registered route, each with a summary and one of the declared tags', () => {
    const documented = new Map(operations(doc).map((o) => [o.key, o.op]));
    const registered = routes.map((route) => {
      const [method, url] = route.split(' ') as [string, string];
      return `${method} ${toOpenApiPath(url)}`;
    });
    expect(registered.length).toBeGreaterThan(40);
    // The docs page's own files are not API operations; they are fetched in the /docs test below.
    const assets = registered.filter((r) => r.startsWith('GET /docs/static/') || r.startsWith('GET /console'));
    expect(assets.length).toBeGreaterThan(0);
    const api = registered.filter((r) => !assets.includes(r));

    expect(api.filter((r) => !documented.has(r)), 'registered but not in the document').toEqual([]);
    expect([...documented.keys()].filter((k) => !api.includes(k)), 'in the document but not registered').toEqual([]);
    expect(api.filter((r) => !documented.get(r)?.summary?.trim()), 'routes without a summary').toEqual([]);

    const tagNames = doc.tags.map((t) => t.name);
    for (const tag of TAGS) expect(tagNames).toContain(tag);
    const badTags = operations(doc).filter(({ op }) => op.tags?.length !== 1 || !tagNames.includes(op.tags[0]!));
    expect(badTags.map((o) => `${o.key} ${JSON.stringify(o.op.tags)}`), 'operations without exactly one declared tag').toEqual([]);
    // The tags come from the URL.
    expect(documented.get('POST /api/v1/authentication/platform-api-key')!.tags).toEqual(['auth']);
    expect(documented.get('GET /api/v1/keys')!.tags).toEqual(['keys']);
    expect(documented.get('GET /api/v1/engine')!.tags).toEqual(['engine']);
    expect(documented.get('POST /v1/{model_id}/predict')!.tags).toEqual(['realtime models']);
    expect(documented.get('GET /api/v1/deployments/{deployment_id}')!.tags).toEqual(['realtime models']);
    expect(documented.get('PUT /api/v1/audiences/{audience_id}')!.tags).toEqual(['audiences']);
    expect(documented.get('GET /api/v1/library')!.tags).toEqual(['library']);
    expect(documented.get('POST /v1/{model_id}/chat/completions')!.tags).toEqual(['chat (OpenAI)']);
    expect(documented.get('POST /api/v1/models/{model_id}/tokenize')!.tags).toEqual(['chat (OpenAI)']);
    expect(documented.get('POST /api/v1/vectors/search')!.tags).toEqual(['vectors']);
    expect(documented.get('GET /healthz')!.tags).toEqual(['health/metrics']);
    expect(documented.get('GET /metrics')!.tags).toEqual(['health/metrics']);
  });

  it('has the error body as a component, referenced by every 4xx and 5xx response', () => {
    expect(doc.components.schemas.Error).toEqual(JSON.parse(JSON.stringify(errorBodySchema)));
    const wrong: string[] = [];
    for (const { key, op } of operations(doc)) {
      const codes = Object.keys(op.responses);
      if (!codes.includes('4XX') || !codes.includes('5XX')) wrong.push(`${key}: no 4XX/5XX`);
      for (const code of codes.filter((c) => /^[45]/.test(c))) {
        const schema = op.responses[code]!.content?.['application/json']?.schema;
        if (schema?.$ref !== '#/components/schemas/Error') wrong.push(`${key} ${code}: ${JSON.stringify(schema)}`);
      }
      if (!codes.some((c) => /^[23]/.test(c))) wrong.push(`${key}: no success response`);
    }
    expect(wrong).toEqual([]);
  });

  it('says which routes need the bearer token, and the host agrees route by route', async () => {
    const scheme = doc.components.securitySchemes.platformToken!;
    expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(scheme.description).toContain('POST /api/v1/authentication/platform-api-key');
    expect((doc as unknown as { security?: unknown }).security).toBeUndefined();

    expect(await securityMismatches(host, doc, PUBLIC)).toEqual([]);
    // The document's own routes are among the protected ones.
    for (const key of DOCS) {
      const [method, path] = key.split(' ') as [string, string];
      expect(doc.paths[path]![method.toLowerCase()]!.security, key).toEqual([{ platformToken: [] }]);
    }
  });

  it('documents the bodies that are not plain JSON', () => {
    const upload = doc.paths['/api/v1/models/{model_id}/builds']!.post!;
    expect(Object.keys(upload.requestBody!.content)).toEqual(['application/octet-stream']);
    expect(upload.requestBody!.content['application/octet-stream']!.schema).toMatchObject({ type: 'string', format: 'binary' });
    expect(upload.security).toEqual([{ platformToken: [] }]);

    for (const path of ['/v1/{model_id}/predict', '/v1/{model_id}/{variation_name}/predict']) {
      const content = doc.paths[path]!.post!.requestBody!.content;
      expect(Object.keys(content).sort()).toEqual(['application/json', 'application/json; format=pandas-split']);
      expect(content['application/json']!.schema).toMatchObject({ type: 'object', required: ['columns', 'data'] });
      expect(content['application/json; format=pandas-split']!.schema).toEqual(content['application/json']!.schema);
    }

    const metrics = doc.paths['/metrics']!.get!.responses['200']!;
    expect(Object.keys(metrics.content!)).toEqual([expect.stringMatching(/^text\/plain/)]);
    // A JSON route keeps its own response schema.
    const engine = doc.paths['/api/v1/engine']!.get!.responses['200']!;
    expect(engine.content!['application/json']!.schema).toMatchObject({ type: 'object', required: ['version', 'simd', 'threads', 'cuda'] });
  });
});

describe('GET /docs', () => {
  it('serves an HTML page whose every asset loads from this host, with the token', async () => {
    for (const page of ['/docs', '/docs/']) await checkDocsPage(host, page, auth);
  });

  it('refuses the page, its files and its copies of the document without the token', async () => {
    for (const page of ['/docs', '/docs/', '/docs/json', '/docs/yaml', '/docs/static/swagger-ui.css', '/docs/static/swagger-initializer.js']) {
      const res = await fetch(host.url + page);
      expect(res.status, page).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code, page).toBe('unauthenticated');
    }
  });

  it('points Swagger UI at this host\'s copy of the document', async () => {
    const init = await (await fetch(`${host.url}/docs/static/swagger-initializer.js`, { headers: auth })).text();
    expect(init).toContain("resolveUrl('./json')");
    const viaDocs = await fetch(`${host.url}/docs/json`, { headers: auth });
    expect(viaDocs.status).toBe(200);
    expect(await viaDocs.json()).toEqual(doc);
    const yaml = await fetch(`${host.url}/docs/yaml`, { headers: auth });
    expect(yaml.status).toBe(200);
    expect(await yaml.text()).toContain('openapi: 3.1.0');
  });

  it('answers a missing asset with the one error shape', async () => {
    const res = await fetch(`${host.url}/docs/static/no-such-file.js`, { headers: auth });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});

describe('with DOCS_PUBLIC=1', () => {
  it('serves the document and the docs page without a token, documents them as public, and the rest still needs one', async () => {
    const { host: open, routes: openRoutes } = await startRecordingRoutes({ DOCS_PUBLIC: '1' });
    try {
      const openDoc = await fetchDocument(open);
      // The same routes as by default; only the docs routes' security differs.
      expect([...openRoutes].sort()).toEqual([...routes].sort());
      expect(await securityMismatches(open, openDoc, PUBLIC_WITH_DOCS)).toEqual([]);
      for (const key of DOCS) {
        const [method, path] = key.split(' ') as [string, string];
        expect(openDoc.paths[path]![method.toLowerCase()]!.security, key).toBeUndefined();
      }
      expect(openDoc.paths['/api/v1/engine']!.get!.security).toEqual([{ platformToken: [] }]);
      expect((await fetch(`${open.url}/api/v1/engine`)).status).toBe(401);
      await checkDocsPage(open, '/docs', {});
      expect((await fetch(`${open.url}/docs/json`)).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it('is a flag: 1 or 0, anything else stops the configuration', () => {
    expect(loadConfig({}).docsPublic).toBe(false);
    expect(loadConfig({ DOCS_PUBLIC: '1' }).docsPublic).toBe(true);
    expect(loadConfig({ DOCS_PUBLIC: '0' }).docsPublic).toBe(false);
    expect(() => loadConfig({ DOCS_PUBLIC: 'maybe' })).toThrow('DOCS_PUBLIC must be 1 or 0, got "maybe"');
  });
});

describe('with METRICS_PUBLIC=1', () => {
  it('documents /metrics as public, and it is', async () => {
    const { host: open } = await startRecordingRoutes({ METRICS_PUBLIC: '1' });
    try {
      const openDoc = await fetchDocument(open, (await tokenFor(open)).token);
      expect(openDoc.paths['/metrics']!.get!.security).toBeUndefined();
      expect(openDoc.paths['/api/v1/keys']!.get!.security).toEqual([{ platformToken: [] }]);
      const res = await fetch(`${open.url}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('http_request_duration_seconds');
    } finally {
      await open.close();
    }
  });
});
