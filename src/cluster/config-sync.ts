// How a replica keeps its routing snapshot current. The configuration (deployments, audiences,
// library deployments, revoked keys) is read again, and applied by swapping what the request
// path reads, whenever it may have changed:
//   - on a notification carrying a version newer than the applied one (PostgreSQL's LISTEN);
//   - after every (re)connect of the listening connection, since notifications sent while it was
//     down are lost;
//   - on a jittered timer that reads config_version, in case a notification was lost anyway;
//   - right after a change made through this replica (`poke`).
// Reads are coalesced: one runs at a time, and a request during it runs one more after it. The
// version is read before the configuration, so the configuration applied is at least that new.
// After each read the replica reports its applied version and what it has loaded, then lets each
// part advance what waits on every live replica (a deployment goes LIVE once all have loaded it).
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { ControlPlaneTables } from '../store/schema.js';
import type { ConfigListener } from './config-listener.js';
import { liveOf, type ReplicaDirectory, type ReplicaLoad, type ReplicaRecord } from './replicas.js';

/** One share of the configuration: realtime routing, library models, key revocations. */
export interface SnapshotPart {
  name: string;
  /** Reads its share of the configuration and applies it on this replica. */
  apply(): Promise<void>;
  /**
   * After this replica has reported what it loaded: moves on what waits for every live replica.
   * True when it changed the configuration (then the snapshot is read again).
   */
  advance?(live: ReplicaRecord[]): Promise<boolean>;
  /** Whether something waits on other replicas, so that the timer reads again without a new version. */
  waiting?(): boolean;
}

export interface ConfigSyncOptions {
  db: Kysely<ControlPlaneTables>;
  replicas: ReplicaDirectory;
  parts: SnapshotPart[];
  /** What this replica serves and prepares, for its row in `replicas`. */
  load: () => ReplicaLoad;
  /** Mean time between reads of config_version; each wait is drawn from 0.75 to 1.25 times it. */
  pollMs: number;
  /** Time between heartbeats. */
  heartbeatMs: number;
  log: FastifyBaseLogger;
  /** The LISTEN connection, on PostgreSQL; made by the sync so that it can call back. */
  listener?: (callbacks: { onVersion: (v: number) => void; onListening: () => void }) => ConfigListener;
}

export class ConfigSync {
  /** The config_version of the snapshot in force; 0 before the first. */
  applied = 0;
  /** The live replicas, as last read (with each read of the configuration and each heartbeat). */
  liveReplicas: ReplicaRecord[] = [];
  /** The same with the draining ones, which still serve until they stop: for forwarding. */
  reachableReplicas: ReplicaRecord[] = [];
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timers: NodeJS.Timeout[] = [];
  private listener: ConfigListener | undefined;
  private state: 'starting' | 'serving' | 'draining' = 'starting';
  /** The live replicas' ids when the configuration was last applied. */
  private members = '';

  constructor(private readonly options: ConfigSyncOptions) {}

  /** Registers this replica, reads the first snapshot, and starts listening and polling. */
  async start(): Promise<void> {
    const o = this.options;
    await o.replicas.register();
    this.listener = o.listener?.({
      onVersion: (v) => {
        if (v > this.applied) this.poke();
      },
      onListening: () => this.poke(),
    });
    this.listener?.start();
    this.poke();
    await this.idle();
    this.state = 'serving';
    await o.replicas.report({ state: 'serving' });
    this.every(o.pollMs, true, async () => {
      if (this.running) return;
      if ((await this.currentVersion()) > this.applied || o.parts.some((p) => p.waiting?.())) this.poke();
    });
    this.every(o.heartbeatMs, false, async () => {
      await o.replicas.report({ loaded: o.load() });
      this.see(await o.replicas.reachable());
      // A replica came or went (no version moves for that): library models may have to move.
      if (membersOf(this.liveReplicas) !== this.members) this.poke();
    });
  }

  /** Whether this replica holds a routing snapshot (it is not ready before). */
  hasSnapshot(): boolean {
    return this.applied > 0;
  }

  /** Reads the configuration again soon; several pokes while one read runs make one more read. */
  poke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      // Let the caller's answer (a 202) go out before a read that may compile builds.
      await new Promise((resolve) => setImmediate(resolve));
      do {
        this.again = false;
        try {
          await this.refresh();
        } catch (err) {
          // The snapshot in force stays; the timer or the next notification tries again.
          this.options.log.warn({ err }, 'could not read the configuration; keeping the snapshot in force');
        }
      } while (this.again && !this.stopped);
      this.running = undefined;
    })();
  }

  /** Resolves when no read is running or asked for (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** From SIGTERM on: not counted as a live replica, so deployments stop waiting for it. */
  async drain(): Promise<void> {
    this.state = 'draining';
    await this.options.replicas.report({ state: 'draining' }).catch(() => undefined);
  }

  /** Stops listening and polling, and marks the replica gone. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    await this.listener?.stop();
    await this.idle();
    await this.options.replicas.report({ state: 'gone' }).catch(() => undefined);
  }

  private async refresh(): Promise<void> {
    const o = this.options;
    const version = await this.currentVersion();
    // Read before the parts apply: the library places its models on the live replicas.
    this.see(await o.replicas.reachable());
    this.members = membersOf(this.liveReplicas);
    for (const part of o.parts) await part.apply();
    this.applied = Math.max(this.applied, version);
    await o.replicas.report({ state: this.state, appliedVersion: this.applied, loaded: o.load() });
    this.see(await o.replicas.reachable());
    const live = this.liveReplicas;
    for (const part of o.parts) {
      if (part.advance && (await part.advance(live))) this.again = true;
    }
  }

  private see(reachable: ReplicaRecord[]): void {
    this.reachableReplicas = reachable;
    this.liveReplicas = liveOf(reachable);
  }

  private async currentVersion(): Promise<number> {
    const row = await this.options.db.selectFrom('config_version').select('version').where('id', '=', 1).executeTakeFirstOrThrow();
    return Number(row.version);
  }

  /** Runs `task` every `ms` (jittered when asked) until stopped; a failed run waits for the next. */
  private every(ms: number, jitter: boolean, task: () => Promise<void>): void {
    const next = () => {
      if (this.stopped) return;
      const timer = setTimeout(() => {
        this.timers = this.timers.filter((t) => t !== timer);
        task()
          .catch((err: unknown) => this.options.log.debug({ err }, 'configuration timer failed'))
          .finally(next);
      }, jitter ? ms * (0.75 + Math.random() / 2) : ms);
      timer.unref();
      this.timers.push(timer);
    };
    next();
  }
}

const membersOf = (live: readonly ReplicaRecord[]) => live.map((r) => r.id).sort().join(' ');
