// Where a library model runs and which replica answers a request for it, computed the same way by
// every replica from the live replicas alone, with no shared state: rendezvous (highest random
// weight) hashing. A model placed on N replicas runs on the N live replicas whose hash with the
// model id is highest; when a replica comes or goes only the models it held move. A request that
// names a session (X-Session-ID, or the body's `user`) goes to the replica with the highest hash
// with that session among those holding the model, so that its prefix cache stays useful there.
import crypto from 'node:crypto';

function weight(key: string, replicaId: string): bigint {
  return crypto.createHash('sha256').update(key).update('\0').update(replicaId).digest().readBigUInt64BE(0);
}

/** The ids of `replicaIds` ordered by rendezvous weight for `key`, highest first. */
export function rendezvous(key: string, replicaIds: readonly string[]): string[] {
  return [...replicaIds].map((id) => ({ id, w: weight(key, id) })).sort((a, b) => (a.w === b.w ? a.id.localeCompare(b.id) : a.w > b.w ? -1 : 1)).map((x) => x.id);
}

/** The replicas a model runs on: all of them when `count` is null, else the top `count`. */
export function placement(modelId: string, count: number | null, replicaIds: readonly string[]): string[] {
  return count === null ? [...replicaIds].sort() : rendezvous(modelId, replicaIds).slice(0, count);
}
