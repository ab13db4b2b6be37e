// Prometheus metrics through prom-client: one registry per app (so tests can run several hosts
// in one process), the process's default metrics and a request-latency histogram per route.
// Later areas register their own metrics on `registry`.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { responses } from './schemas.js';

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

export function instrumentRequests(app: FastifyInstance, registry: Registry): void {
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  // The per-replica load that a HorizontalPodAutoscaler scales on (deploy/helm): requests taken
  // and not yet answered, streams included.
  const inFlight = new Gauge({ name: 'platform_requests_in_flight', help: 'HTTP requests received and not yet answered (streams until they end)', registers: [registry] });
  app.addHook('onRequest', async (_request, reply) => {
    inFlight.inc();
    // 'close' comes once per response, finished or cut off by the client ('finish' does not).
    reply.raw.once('close', () => inFlight.dec());
  });
  app.addHook('onResponse', async (request, reply) => {
    // Unmatched paths share one label, so that probing random URLs cannot grow the series.
    const route = request.routeOptions.url ?? 'unmatched';
    duration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });
}

export const metricsRoute: FastifyPluginAsync<{ registry: Registry }> = async (app, { registry }) => {
  const schema = {
    summary: 'Prometheus metrics of the host and its models (public with METRICS_PUBLIC=1)',
    // The text exposition format; a string payload is sent as it is, never through a serializer.
    response: responses({ 200: { description: 'The Prometheus text format', content: { [registry.contentType]: { schema: { type: 'string' } } } } }),
  };
  // Behind the token (METRICS_PUBLIC unset), every role may read it.
  app.get('/metrics', { schema, config: { access: { action: 'read' } } }, async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
};
