// Several replicas of the real host (`npm start` as child processes) on one PostgreSQL database,
// with what a Kubernetes Service would give them: a balancer that sends each request to a replica
// whose /readyz answers 200 (checked every 50 ms, and at once on a refused connection), and load
// generators that record every request. For test/cluster-replicas.test.ts and bench/cluster.ts.
import pg from 'pg';
import { spawnHost, startLineOf, type ChildHost } from './child-host.js';
import { runCli } from './cli.js';
import { tempDir } from './paths.js';
import type { TestPostgres } from './postgres.js';

export const CLUSTER_SECRET = 'a-token-secret-shared-by-every-replica-0123456789';

export interface Replica {
  id: string;
  dataDir: string;
  host: ChildHost;
}

export class Cluster {
  readonly replicas = new Map<string, Replica>();
  private readonly ready = new Set<string>();
  private poller: NodeJS.Timeout | undefined;
  private turn = 0;

  constructor(
    /** DATABASE_URL, PLATFORM_TOKEN_SECRET, MODELS_DIR and whatever else every replica shares. */
    readonly env: Record<string, string>,
  ) {}

  /** Starts (or restarts, with its DATA_DIR) the replica `id`, and waits for its start line. */
  async start(id: string, extra: Record<string, string> = {}): Promise<Replica> {
    const dataDir = this.replicas.get(id)?.dataDir ?? tempDir();
    const host = await spawnHost({ ...this.env, DATA_DIR: dataDir, REPLICA_ID: id, ...extra });
    await startLineOf(host);
    const replica = { id, dataDir, host };
    this.replicas.set(id, replica);
    this.ready.add(id);
    return replica;
  }

  url(id: string): string {
    return this.replicas.get(id)!.host.url;
  }

  /** Checks every replica's readiness every 50 ms, as a Service's endpoints follow readiness probes. */
  startBalancing(): void {
    const check = async () => {
      await Promise.all(
        [...this.replicas.values()].map(async (r) => {
          const ok = await fetch(`${r.host.url}/readyz`, { signal: AbortSignal.timeout(1000) }).then((res) => res.ok, () => false);
          if (ok) this.ready.add(r.id);
          else this.ready.delete(r.id);
        }),
      );
      this.poller = setTimeout(() => void check(), 50);
    };
    void check();
  }

  stopBalancing(): void {
    if (this.poller) clearTimeout(this.poller);
  }

  /** The next ready replica, round robin; undefined when none is. */
  pick(): Replica | undefined {
    const ids = [...this.ready].sort();
    if (ids.length === 0) return undefined;
    return this.replicas.get(ids[this.turn++ % ids.length]!);
  }

  /** A refused connection takes the replica out at once, as a balancer's passive check does. */
  markDown(id: string): void {
    this.ready.delete(id);
  }

  async stopAll(signal: NodeJS.Signals = 'SIGTERM'): Promise<Array<number | null>> {
    const all = [...this.replicas.values()].filter((r) => r.host.proc.exitCode === null && r.host.proc.signalCode === null);
    for (const r of all) r.host.proc.kill(signal);
    return Promise.all(all.map((r) => r.host.exited));
  }
}

/** One request the load sent: to which replica, when, and how it ended. */
export interface LoadRecord {
  kind: 'predict' | 'stream';
  replica: string;
  startedAt: number;
  endedAt: number;
  ok: boolean;
  error?: string;
}

/**
 * Sends `concurrency` loops of `send` through the balancer until `stop()` is called; resolves with
 * every request's record. `send` throws (or returns false) for a failed request.
 */
export function runLoad(
  cluster: Cluster,
  kind: LoadRecord['kind'],
  concurrency: number,
  send: (url: string) => Promise<boolean>,
): { stop: () => Promise<LoadRecord[]> } {
  const records: LoadRecord[] = [];
  let stopping = false;
  const loops = Array.from({ length: concurrency }, async () => {
    while (!stopping) {
      const replica = cluster.pick();
      if (!replica) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      const startedAt = performance.now();
      let ok = false;
      let error: string | undefined;
      try {
        ok = await send(replica.host.url);
        if (!ok) error = 'answered with an error';
      } catch (err) {
        error = String((err as Error & { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
        if (error === 'ECONNREFUSED') cluster.markDown(replica.id);
      }
      records.push({ kind, replica: replica.id, startedAt, endedAt: performance.now(), ok, ...(error ? { error } : {}) });
    }
  });
  return {
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
      return records;
    },
  };
}

/** A key made with the CLI against the database, as an operator would. */
export async function createKey(env: Record<string, string>, name: string): Promise<{ key: string; id: string }> {
  const created = await runCli(['keys', 'create', '--name', name], { ...env, DATA_DIR: tempDir() });
  if (created.code !== 0) throw new Error(created.stderr);
  const key = created.stdout.trim();
  return { key, id: key.split('_')[1]! };
}

export async function tokenOn(url: string, key: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/authentication/platform-api-key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformApiKey: key }),
  });
  if (!res.ok) throw new Error(`token exchange: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { accessToken: string }).accessToken;
}

/** Ends the LISTEN connection of replica `id` on the server side, as a network cut or a failover would. */
export async function killListener(databaseUrl: string, id: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const res = await client.query('SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1', [`platform-listen ${id}`]);
    return res.rows.filter((r: { ended: boolean }) => r.ended).length;
  } finally {
    await client.end();
  }
}

/** The p-th percentile (0-100) of `values`, nearest rank. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * A fresh database on `server` with the replicas `ids` started on it (one token secret, and
 * `env`), an operator's key made with the CLI, and a token for it from the first replica.
 */
export async function startCluster(
  server: TestPostgres,
  database: string,
  ids: readonly string[],
  env: Record<string, string> = {},
): Promise<{ cluster: Cluster; databaseUrl: string; key: string; token: string }> {
  const databaseUrl = await server.createDatabase(database);
  const cluster = new Cluster({ DATABASE_URL: databaseUrl, PLATFORM_TOKEN_SECRET: CLUSTER_SECRET, ...env });
  const { key } = await createKey(cluster.env, 'ops');
  for (const id of ids) await cluster.start(id);
  return { cluster, databaseUrl, key, token: await tokenOn(cluster.url(ids[0]!), key) };
}
