// The limits around export and import, against the real app: an export that its client stops
// reading (without closing the socket) is ended after VECTOR_EXPORT_IDLE_TIMEOUT_MS and lets go
// of its snapshot and connection; at most VECTOR_MAX_CONCURRENT_EXPORTS stream at once (429 with
// Retry-After beyond); an export larger than MAX_VECTOR_BODY_BYTES imports back (an import has
// its own limit, MAX_VECTOR_IMPORT_BYTES, and is read as it arrives); and a hand-made file whose
// tenant id is longer than upsert allows is refused naming the line, writing nothing.
import crypto from 'node:crypto';
import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { rng } from './helpers/random.js';
import { vectorTestHost } from './helpers/vectors.js';

const BODY_LIMIT = 8 * 1024 * 1024;
const IDLE_MS = 400;
const MAX_EXPORTS = 2;
const dim = 256;
const n = 12_000;

const setup = vectorTestHost({
  LOG_LEVEL: 'error',
  MAX_VECTOR_BODY_BYTES: String(BODY_LIMIT),
  VECTOR_EXPORT_IDLE_TIMEOUT_MS: String(IDLE_MS),
  VECTOR_MAX_CONCURRENT_EXPORTS: String(MAX_EXPORTS),
});
const { api, post } = setup;

beforeAll(async () => {
  await post('/api/v1/vectors/collections', { name: 'big', dimension: dim, hnsw: { m: 4, ef_construction: 10 } }, 201);
  const r = rng(77);
  for (let s = 0; s < n; s += 1000) {
    const vector = Array.from({ length: 1000 }, (_, k) => ({ id: `v${String(s + k).padStart(6, '0')}`, values: Array.from({ length: dim }, () => r() * 2 - 1), properties: { i: s + k } }));
    await post('/api/v1/vectors/upsert', { collection_name: 'big', vector });
  }
}, 120_000);

const openExports = () => setup.host.app.vectors!.openExports;

/** The vector_store_exports_open gauge on /metrics. */
async function exportsGauge(): Promise<number> {
  const text = await (await fetch(`${setup.host.url}/metrics`, { headers: { authorization: `Bearer ${setup.token}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith('vector_store_exports_open '));
  return Number(line?.split(' ')[1]);
}

/** Whether a reader's snapshot keeps the WAL from being checkpointed in full (PASSIVE never waits). */
function walHeld(): boolean {
  const [r] = setup.host.db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
  return r!.checkpointed < r!.log;
}

/**
 * An export whose client reads the first chunk and then stops reading, keeping the socket open.
 * `resume` reads on: what is left, and how the response ends ('end' only for a complete one).
 */
function stalledExport(name: string): Promise<{ request: http.ClientRequest; resume: () => Promise<{ how: string; tail: string }> }> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${setup.host.url}/api/v1/vectors/export/${name}`, { headers: { authorization: `Bearer ${setup.token}` } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`export answered ${res.statusCode}`));
      let tail = '';
      const ended = new Promise<string>((done) => {
        res.once('aborted', () => done('aborted'));
        res.once('error', (err) => done(`error: ${err.message}`));
        res.once('end', () => done('end'));
        res.once('close', () => done('close'));
      });
      res.once('data', () => {
        res.pause();
        resolve({
          request,
          resume: async () => {
            res.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString('latin1')).slice(-4096)));
            res.resume();
            return { how: await ended, tail };
          },
        });
      });
    });
    request.on('error', () => undefined);
  });
}

async function until(what: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('export limits', () => {
  it('a stalled export is ended after the idle timeout, and lets go of its snapshot and connection', async () => {
    const stalled = await stalledExport('big');
    expect(openExports()).toBe(1);
    expect(await exportsGauge()).toBe(1);
    // A write after the export began: the export's read transaction keeps the WAL from being checkpointed past it.
    await post('/api/v1/vectors/upsert', { collection_name: 'big', vector: [{ id: 'zz-after', values: Array(dim).fill(0.25) }] });
    expect(walHeld()).toBe(true);
    const started = Date.now();
    await until(() => openExports() === 0, 10_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS / 2);
    expect(await exportsGauge()).toBe(0);
    await until(() => !walHeld(), 5_000);
    // Reading on, the client finds its transfer cut off before the last line.
    const { how, tail } = await stalled.resume();
    expect(how).not.toBe('end');
    expect(tail).not.toContain('"end":true');
    await post('/api/v1/vectors/delete', { collection_name: 'big', vector_identifiers: [{ vector_id: 'zz-after' }] });
  });

  it(`at most ${MAX_EXPORTS} exports stream at once: beyond, a 429 with Retry-After in the error shape`, async () => {
    const stalled = await Promise.all(Array.from({ length: MAX_EXPORTS }, () => stalledExport('big')));
    expect(openExports()).toBe(MAX_EXPORTS);
    const refused = await fetch(`${setup.host.url}/api/v1/vectors/export/big`, { headers: { authorization: `Bearer ${setup.token}` } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const body = (await refused.json()) as any;
    expect(body.error).toMatchObject({ code: 'overloaded', param: null, type: 'rate_limit_error' });
    expect(body.error.message).toMatch(/VECTOR_MAX_CONCURRENT_EXPORTS/);
    // Once the stalled ones are ended, exports are served again.
    await until(() => openExports() === 0, 10_000);
    for (const s of stalled) s.request.destroy();
    const again = await fetch(`${setup.host.url}/api/v1/vectors/export/big`, { headers: { authorization: `Bearer ${setup.token}` } });
    expect(again.status).toBe(200);
    await again.arrayBuffer();
    await until(() => openExports() === 0, 5_000);
  });
});

describe('import at size', () => {
  it('an export larger than MAX_VECTOR_BODY_BYTES imports back, exactly', async () => {
    const res = await fetch(`${setup.host.url}/api/v1/vectors/export/big`, { headers: { authorization: `Bearer ${setup.token}` } });
    expect(res.headers.get('x-vector-count')).toBe(String(n));
    const file = Buffer.from(await res.arrayBuffer());
    expect(file.byteLength).toBeGreaterThan(BODY_LIMIT);
    const imported = await fetch(`${setup.host.url}/api/v1/vectors/import?name=big-copy`, {
      method: 'POST',
      headers: { authorization: `Bearer ${setup.token}`, 'content-type': 'application/x-ndjson' },
      body: file,
    });
    const body = (await imported.json()) as any;
    expect(imported.status, JSON.stringify(body)).toBe(201);
    expect(body.vector_count).toBe(n);
    const copy = Buffer.from(await (await fetch(`${setup.host.url}/api/v1/vectors/export/big-copy`, { headers: { authorization: `Bearer ${setup.token}` } })).arrayBuffer());
    // The same lines after the header (which names the collection), the same digest over them.
    const lines = (b: Buffer) => b.toString('utf8').split('\n');
    expect(lines(copy).slice(1, -2)).toEqual(lines(file).slice(1, -2));
  }, 60_000);

  it('a large body refused at its first line answers at once, and the next requests are served', async () => {
    const res = await setup.importChunked('refused', '{"format":"something else"}\n', 6 * 1024 * 1024);
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(/line 1: .*not a vector collection export/);
    for (let i = 0; i < 3; i++) expect((await api('GET', '/api/v1/vectors/collections')).status).toBe(200);
    expect((await api('GET', '/api/v1/vectors/collections/refused')).status).toBe(404);
  });

  it('a hand-made file with a 300-character tenant is a 400 naming the line, and writes nothing', async () => {
    const header = {
      format: 'platform-vector-collection',
      version: 1,
      values: 'float32-le-base64',
      collection: { name: 'handmade', dimension: 2, metric: 'cosine', description: '', multi_tenant: true, hnsw: { m: 8, ef_construction: 10, ef: 10 } },
      vector_count: 2,
    };
    const values = Buffer.from(Float32Array.from([1, 2]).buffer).toString('base64');
    const body =
      JSON.stringify(header) +
      '\n' +
      JSON.stringify({ id: 'a', tenant_id: 'ok', values, properties: {} }) +
      '\n' +
      JSON.stringify({ id: 'b', tenant_id: 't'.repeat(300), values, properties: {} }) +
      '\n';
    const file = body + JSON.stringify({ end: true, vector_count: 2, sha256: crypto.createHash('sha256').update(body).digest('hex') }) + '\n';
    const res = await fetch(`${setup.host.url}/api/v1/vectors/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${setup.token}`, 'content-type': 'application/x-ndjson' },
      body: file,
    });
    const error = ((await res.json()) as any).error;
    expect(res.status).toBe(400);
    expect(error.code).toBe('invalid_argument');
    expect(error.message).toMatch(/line 3: tenant_id has 300 characters; a tenant id is at most 256/);
    expect((await api('GET', '/api/v1/vectors/collections/handmade')).status).toBe(404);
    expect(setup.host.db.prepare("SELECT count(*) AS n FROM vector_collections WHERE name = 'handmade'").get()).toEqual({ n: 0 });
  });
});
