// platform vectors collections create | list | get | delete, and count | export | import, against
// the real host (dist/), with DESIGN.md's exit codes: 0 done, 1 refused by the platform (its
// message printed), 2 bad usage.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Api } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { rng } from './helpers/random.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { tempDir } from './helpers/paths.js';

let host: ChildHost;
let env: Record<string, string>;
let api: Api;

beforeAll(async () => {
  const dataDir = tempDir();
  const created = await runCli(['keys', 'create', '--name', 'cli'], { DATA_DIR: dataDir });
  expect(created.code).toBe(0);
  host = await spawnHost({ DATA_DIR: dataDir });
  env = { PLATFORM_URL: host.url, PLATFORM_API_KEY: created.stdout.trim(), PLATFORM_CACHE_DIR: tempDir() };
  const res = await fetch(`${host.url}/api/v1/authentication/platform-api-key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformApiKey: env.PLATFORM_API_KEY }),
  });
  api = apiClient(host.url, ((await res.json()) as { accessToken: string }).accessToken);
});
afterAll(async () => {
  host?.proc.kill('SIGTERM');
  await host?.exited;
});

describe('platform vectors collections', () => {
  it('create, list, get and delete', async () => {
    let res = await runCli(['vectors', 'collections', 'create', '--name', 'docs', '--dimension', '384'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe('docs\n');
    res = await runCli(
      ['vectors', 'collections', 'create', '--name', 'tenants', '--dimension', '8', '--metric', 'l2', '--multi-tenant', '--description', 'per customer', '--m', '8', '--ef', '40', '--json'],
      env,
    );
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ name: 'tenants', dimension: 8, metric: 'l2', multi_tenant: true, description: 'per customer', hnsw: { m: 8, ef_construction: 200, ef: 40 } });

    res = await runCli(['vectors', 'collections', 'list'], env);
    expect(res.code).toBe(0);
    expect(res.stdout.split('\n')[0]).toMatch(/^NAME\s+DIMENSION\s+METRIC\s+TENANTS\s+VECTORS\s+CREATED\s+DESCRIPTION$/);
    expect(res.stdout).toMatch(/docs\s+384\s+cosine\s+no\s+0\s/);
    expect(res.stdout).toMatch(/tenants\s+8\s+l2\s+yes\s+0\s+\S+\s+per customer/);
    const json = JSON.parse((await runCli(['vectors', 'collections', 'list', '--json'], env)).stdout) as Array<{ name: string }>;
    expect(json.map((c) => c.name).sort()).toEqual(['docs', 'tenants']);

    res = await runCli(['vectors', 'collections', 'get', 'tenants'], env);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('dimension:     8');
    expect(res.stdout).toContain('multi-tenant:  yes');
    expect(res.stdout).toContain('hnsw:          M 8, ef_construction 200, ef 40');
    expect(res.stdout).toMatch(/index:\s+0 indexed, 0 pending, 0 tombstones, 0 tenants/);

    res = await runCli(['vectors', 'collections', 'delete', 'docs'], env);
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('deleted docs\n');
    expect(JSON.parse((await runCli(['vectors', 'collections', 'list', '--json'], env)).stdout)).toHaveLength(1);
  });

  it('refusals exit 1 with the server\'s message', async () => {
    await runCli(['vectors', 'collections', 'create', '--name', 'twice', '--dimension', '4'], env);
    let res = await runCli(['vectors', 'collections', 'create', '--name', 'twice', '--dimension', '4'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('a vector collection named "twice" already exists (HTTP 409)');
    res = await runCli(['vectors', 'collections', 'get', 'nope'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('no vector collection named "nope" (HTTP 404)');
    res = await runCli(['vectors', 'collections', 'delete', 'nope'], env);
    expect(res.code).toBe(1);
    res = await runCli(['vectors', 'collections', 'create', '--name', '-bad-', '--dimension', '4'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/field "name" must match pattern/);
  });

  it('bad usage exits 2 and --help works', async () => {
    const cases = [
      ['vectors', 'collections', 'create', '--name', 'x'],
      ['vectors', 'collections', 'create', '--name', 'x', '--dimension', 'abc'],
      ['vectors', 'collections', 'create', '--name', 'x', '--dimension', '0'],
      ['vectors', 'collections', 'create', '--name', 'x', '--dimension', '4', '--metric', 'hamming'],
      ['vectors', 'collections', 'get'],
      ['vectors', 'collections', 'frobnicate'],
    ];
    for (const args of cases) {
      const res = await runCli(args, env);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr.length).toBeGreaterThan(0);
    }
    for (const args of [['vectors'], ['vectors', 'collections'], ['vectors', 'collections', 'create']]) {
      const res = await runCli([...args, '--help'], env);
      expect(res.code, args.join(' ')).toBe(0);
      expect(res.stdout).toContain('Usage: platform vectors');
    }
  });
});

describe('platform vectors count | export | import', () => {
  const dim = 5;
  const r = rng(81);
  const data = Array.from({ length: 300 }, () => Array.from({ length: dim }, () => r() * 2 - 1));
  const colors = ['red', 'green', 'blue'];

  beforeAll(async () => {
    expect((await runCli(['vectors', 'collections', 'create', '--name', 'shop', '--dimension', String(dim), '--multi-tenant'], env)).code).toBe(0);
    for (const tenant of ['eu', 'us']) {
      const res = await api('POST', '/api/v1/vectors/upsert', {
        collection_name: 'shop',
        tenant_id: tenant,
        vector: data.map((values, i) => ({ id: `item-${i}`, values, properties: { color: colors[i % 3], price: i } })),
      });
      expect(res.status).toBe(200);
    }
  });

  it('count prints the number of vectors, of a tenant, matching a filter', async () => {
    let res = await runCli(['vectors', 'count', 'shop', '--tenant', 'eu'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe('300\n');
    res = await runCli(['vectors', 'count', 'shop', '--tenant', 'us', '--filter', '{"and": [{"eq": {"color": "red"}}, {"range": {"price": {"lt": 150}}}]}'], env);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe('50\n');
    res = await runCli(['vectors', 'count', 'shop'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('the collection "shop" is multi-tenant: tenant_id is required (HTTP 400)');
    res = await runCli(['vectors', 'count', 'shop', '--tenant', 'eu', '--filter', '{"like": {"color": "r"}}'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/unknown operator "like".*\(HTTP 400\)/);
    res = await runCli(['vectors', 'count', 'nope'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('no vector collection named "nope" (HTTP 404)');
  });

  it('export writes the file to stdout or --output; import creates a collection from it', async () => {
    const out = await runCli(['vectors', 'export', 'shop'], env);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ format: 'platform-vector-collection', collection: { name: 'shop', dimension: dim, multi_tenant: true }, vector_count: 600 });
    expect(lines).toHaveLength(603); // header, 600 vectors, last line, and the final newline

    const dir = tempDir();
    const file = path.join(dir, 'shop.ndjson');
    const written = await runCli(['vectors', 'export', 'shop', '--output', file], env);
    expect(written.code, written.stderr).toBe(0);
    expect(written.stdout).toBe('');
    expect(written.stderr).toBe(`${file}: 600 vectors\n`);
    expect(fs.readFileSync(file, 'utf8')).toBe(out.stdout);
    expect(fs.readdirSync(dir)).toEqual(['shop.ndjson']);

    const imported = await runCli(['vectors', 'import', file, '--name', 'shop-copy'], env);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toBe('shop-copy\n');
    expect(imported.stderr).toBe('600 vectors\n');
    expect((await runCli(['vectors', 'count', 'shop-copy', '--tenant', 'us'], env)).stdout).toBe('300\n');
    for (const i of [0, 17, 299]) {
      const a = await api('GET', `/api/v1/vectors/collections/shop/item-${i}?tenant_id=eu`);
      const b = await api('GET', `/api/v1/vectors/collections/shop-copy/item-${i}?tenant_id=eu`);
      expect(b.body).toEqual(a.body);
    }
    // From stdin, with --json.
    const piped = await runCli(['vectors', 'import', '-', '--name', 'shop-piped', '--json'], env, out.stdout);
    expect(piped.code, piped.stderr).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ name: 'shop-piped', dimension: dim, multi_tenant: true, vector_count: 600 });
  });

  it('refusals: a taken name, a damaged file, a missing file, an unknown collection', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'shop.ndjson');
    expect((await runCli(['vectors', 'export', 'shop', '--output', file], env)).code).toBe(0);
    let res = await runCli(['vectors', 'import', file], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('a vector collection named "shop" already exists');
    expect(res.stderr).toContain('(HTTP 409)');
    const text = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, text.slice(0, text.length - 200));
    res = await runCli(['vectors', 'import', file, '--name', 'shop-broken'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/the export is damaged or not an export: .*\(HTTP 400\)/);
    expect((await runCli(['vectors', 'count', 'shop-broken'], env)).stderr).toContain('no vector collection named "shop-broken" (HTTP 404)');
    res = await runCli(['vectors', 'import', path.join(dir, 'absent.ndjson')], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('cannot read');
    expect(res.stderr).toContain('ENOENT');
    res = await runCli(['vectors', 'export', 'nope', '--output', path.join(dir, 'nope.ndjson')], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('no vector collection named "nope" (HTTP 404)');
    expect(fs.existsSync(path.join(dir, 'nope.ndjson'))).toBe(false);
  });

  it('bad usage exits 2', async () => {
    const cases = [
      ['vectors', 'count'],
      ['vectors', 'count', 'shop', '--filter', '{not json'],
      ['vectors', 'count', 'shop', '--filter', '[1, 2]'],
      ['vectors', 'export'],
      ['vectors', 'import'],
    ];
    for (const args of cases) {
      const res = await runCli(args, env);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr.length).toBeGreaterThan(0);
    }
    const res = await runCli(['vectors', 'count', 'shop', '--filter', '{not json'], env);
    expect(res.stderr).toContain('--filter is not JSON');
  });
});
