// platform vectors collections create | list | get | delete against the real host (dist/), with
// DESIGN.md's exit codes: 0 done, 1 refused by the platform (its message printed), 2 bad usage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { tempDir } from './helpers/paths.js';

let host: ChildHost;
let env: Record<string, string>;

beforeAll(async () => {
  const dataDir = tempDir();
  const created = await runCli(['keys', 'create', '--name', 'cli'], { DATA_DIR: dataDir });
  expect(created.code).toBe(0);
  host = await spawnHost({ DATA_DIR: dataDir });
  env = { PLATFORM_URL: host.url, PLATFORM_API_KEY: created.stdout.trim(), PLATFORM_CACHE_DIR: tempDir() };
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
