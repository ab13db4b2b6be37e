// A model's 5-minute figures for the whole cluster, whichever replica is asked: this replica's
// raw window plus each other live replica's (GET .../metrics/window, with the caller's token, 2 s
// at most each), merged by the caller. A replica that does not answer in time is left out, and
// the answer says how many answered. /metrics (Prometheus) stays per replica.
import type { FastifyRequest } from 'fastify';
import type { ReplicaRecord } from '../cluster/replicas.js';

export interface ClusterView {
  selfId: string;
  /** The live replicas, as last read. */
  live: () => readonly ReplicaRecord[];
}

/** Of the live replicas, how many answered with their figures (this one included). */
export interface ReplicasAnswered {
  answered: number;
  total: number;
}

const WINDOW_TIMEOUT_MS = 2000;

export async function gatherWindows<T>(request: FastifyRequest, cluster: ClusterView, path: string, local: T): Promise<{ windows: T[]; replicas: ReplicasAnswered }> {
  const others = cluster.live().filter((r) => r.id !== cluster.selfId && r.state === 'serving');
  const authorization = request.headers.authorization;
  const answers = await Promise.all(
    others.map(async (r) => {
      try {
        const res = await fetch(r.address + path, { headers: authorization ? { authorization } : {}, signal: AbortSignal.timeout(WINDOW_TIMEOUT_MS) });
        if (!res.ok) return undefined;
        return (await res.json()) as T;
      } catch {
        return undefined;
      }
    }),
  );
  const windows = [local, ...answers.filter((a): a is Awaited<T> & T => a !== undefined)];
  return { windows, replicas: { answered: windows.length, total: others.length + 1 } };
}
