// Prometheus series of the vector store, on the host's registry (GET /metrics):
//
//   vector_store_collections                                  gauge: collections
//   vector_store_vectors{collection}                          gauge: vectors stored
//   vector_store_upserted_vectors_total{collection}           counter: vectors written by upserts
//   vector_store_upsert_duration_seconds{collection}          histogram: upsert latency (its _count: upsert requests)
//   vector_store_search_duration_seconds{collection}          histogram: search latency (its _count: searches)
//   vector_store_index_lag_vectors{collection}                gauge: committed changes not yet in the graphs
//   vector_store_index_backlog_seconds{collection}            gauge: how long the queued graph work would take at
//                                                             the measured insert rate (searches scan it meanwhile)
//   vector_store_replica_lag_changes{collection}              gauge (PostgreSQL): changes of the shared store this
//                                                             replica's copy has not applied, as last seen
//   vector_store_checkpoint_age_seconds{collection}           gauge: seconds since the graphs were last all
//                                                             checkpointed (0 while they are)
//   vector_store_exports_open                                 gauge: exports streaming now (each holds a
//                                                             read transaction and a connection)
//
// The gauges are read when /metrics is scraped: counts from SQLite, lag and checkpoint age from
// the index worker (one question per scrape, shared by those gauges).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { CollectionGauges } from './types.js';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What a scrape reads: every collection's name and count, and the worker's figures by collection id. */
export interface VectorStoreReadings {
  collections: () => Array<{ id: number; name: string; vectorCount: number }>;
  /** Undefined when the index worker is not running (it has nothing queued then). */
  gauges: () => Promise<CollectionGauges[] | undefined>;
  /** Exports streaming now. */
  exportsOpen: () => number;
  /** On PostgreSQL: each collection's changes not yet in this replica's copy. */
  replicaLag?: () => Array<{ name: string; changes: number }>;
}

export class VectorMetrics {
  private readonly upserted: Counter<'collection'>;
  private readonly upsertLatency: Histogram<'collection'>;
  private readonly searchLatency: Histogram<'collection'>;
  private pending: Promise<CollectionGauges[] | undefined> | undefined;

  constructor(registry: Registry, readings: VectorStoreReadings) {
    const labelNames = ['collection'] as const;
    this.upserted = new Counter({ name: 'vector_store_upserted_vectors_total', help: 'Vectors written by upserts', labelNames, registers: [registry] });
    this.upsertLatency = new Histogram({
      name: 'vector_store_upsert_duration_seconds',
      help: 'Upsert latency, from the body received to the durable answer',
      labelNames,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    this.searchLatency = new Histogram({
      name: 'vector_store_search_duration_seconds',
      help: 'Search latency, from the checked request to the answer',
      labelNames,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
    new Gauge({
      name: 'vector_store_collections',
      help: 'Vector collections',
      registers: [registry],
      collect() {
        this.set(readings.collections().length);
      },
    });
    new Gauge({
      name: 'vector_store_vectors',
      help: 'Vectors stored, by collection',
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const c of readings.collections()) this.set({ collection: c.name }, c.vectorCount);
      },
    });
    new Gauge({
      name: 'vector_store_exports_open',
      help: 'Collection exports streaming now (each holds a read transaction and a database connection)',
      registers: [registry],
      collect() {
        this.set(readings.exportsOpen());
      },
    });
    const replicaLag = readings.replicaLag;
    if (replicaLag) {
      new Gauge({
        name: 'vector_store_replica_lag_changes',
        help: "Changes of the shared store (PostgreSQL) this replica's copy has not applied yet, as last seen, by collection",
        labelNames,
        registers: [registry],
        collect() {
          this.reset();
          for (const c of replicaLag()) this.set({ collection: c.name }, c.changes);
        },
      });
    }
    // The gauges of the index worker share one answer per scrape.
    const workerGauges = async () => {
      this.pending ??= readings.gauges().finally(() => setImmediate(() => (this.pending = undefined)));
      const gauges = await this.pending;
      const names = new Map(readings.collections().map((c) => [c.id, c.name]));
      return (gauges ?? []).filter((g) => names.has(g.collectionId)).map((g) => ({ ...g, name: names.get(g.collectionId)! }));
    };
    new Gauge({
      name: 'vector_store_index_lag_vectors',
      help: 'Committed vector changes not yet in the HNSW graphs, by collection',
      labelNames,
      registers: [registry],
      async collect() {
        const gauges = await workerGauges();
        this.reset();
        for (const g of gauges) this.set({ collection: g.name }, g.pending);
      },
    });
    new Gauge({
      name: 'vector_store_index_backlog_seconds',
      help: 'Seconds the queued graph work would take at the measured insert rate, by collection (searches scan the queued vectors exactly meanwhile)',
      labelNames,
      registers: [registry],
      async collect() {
        const gauges = await workerGauges();
        this.reset();
        for (const g of gauges) this.set({ collection: g.name }, g.backlogSeconds);
      },
    });
    new Gauge({
      name: 'vector_store_checkpoint_age_seconds',
      help: 'Seconds since the collection\'s graphs were last all checkpointed (0 while every change is in a checkpoint)',
      labelNames,
      registers: [registry],
      async collect() {
        const gauges = await workerGauges();
        this.reset();
        for (const g of gauges) this.set({ collection: g.name }, g.checkpointAgeSeconds);
      },
    });
  }

  upsert(collection: string, vectors: number, seconds: number): void {
    this.upserted.inc({ collection }, vectors);
    this.upsertLatency.observe({ collection }, seconds);
  }

  search(collection: string, seconds: number): void {
    this.searchLatency.observe({ collection }, seconds);
  }

  /** A deleted collection's series go with it. */
  forget(collection: string): void {
    for (const m of [this.upserted, this.upsertLatency, this.searchLatency]) m.remove({ collection });
  }
}
