// GET /api/v1/replicas: the replicas of the host on this database, as the `replicas` table has
// them (src/cluster/replicas.ts): state, whether each counts as live, its heartbeat's age, the
// configuration version it has applied against the newest, and what it serves. On SQLite, the one.
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely } from 'kysely';
import type { ReplicaDirectory } from '../../cluster/replicas.js';
import type { ControlPlaneTables } from '../../store/schema.js';
import { responses } from '../schemas.js';

const replicaSchema = {
  type: 'object',
  required: ['replica_id', 'address', 'state', 'live', 'heartbeat_age_ms', 'started_at', 'applied_version', 'deployments_served', 'library_models'],
  properties: {
    replica_id: { type: 'string' },
    address: { type: 'string' },
    state: { type: 'string', enum: ['starting', 'serving', 'draining', 'gone'] },
    // Starting or serving, with a heartbeat younger than REPLICA_TIMEOUT_MS: deployments wait for it.
    live: { type: 'boolean' },
    heartbeat_age_ms: { type: 'integer' },
    started_at: { type: 'integer' },
    applied_version: { type: 'integer' },
    deployments_served: { type: 'integer' },
    // "<model id>@<instance type>/<threads or all>"
    library_models: { type: 'array', items: { type: 'string' } },
    // On PostgreSQL: its copy of each vector collection (as of its last heartbeat).
    vector_collections: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'applied_seq', 'last_seq'],
        properties: { name: { type: 'string' }, applied_seq: { type: 'integer' }, last_seq: { type: 'integer' } },
      },
    },
  },
} as const;

export const replicaRoutes: FastifyPluginAsync<{ replicas: ReplicaDirectory; db: Kysely<ControlPlaneTables> }> = async (app, { replicas, db }) => {
  app.get(
    '/api/v1/replicas',
    {
      config: { access: { action: 'read' } },
      schema: {
        summary: 'The replicas of the host on this database: state, heartbeat, configuration applied, what each serves',
        response: responses({
          200: {
            type: 'object',
            required: ['config_version', 'replicas'],
            properties: { config_version: { type: 'integer' }, replicas: { type: 'array', items: replicaSchema } },
          },
        }),
      },
    },
    async () => {
      const [{ replicas: all, now }, version] = await Promise.all([
        replicas.all(),
        db.selectFrom('config_version').select('version').where('id', '=', 1).executeTakeFirstOrThrow(),
      ]);
      return {
        config_version: Number(version.version),
        replicas: all.map((r) => ({
          replica_id: r.id,
          address: r.address,
          state: r.state,
          live: replicas.isLive(r, now),
          heartbeat_age_ms: Math.max(0, now - r.heartbeatAt),
          started_at: r.startedAt,
          applied_version: r.appliedVersion,
          deployments_served: r.loaded.serving.length,
          library_models: r.loaded.library,
          ...(r.loaded.vectors ? { vector_collections: r.loaded.vectors.map((v) => ({ name: v.name, applied_seq: v.applied, last_seq: v.head })) } : {}),
        })),
      };
    },
  );
};
