// autocannon (CommonJS, untyped) with the part of its result the benches read.
import { createRequire } from 'node:module';

export interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
}

export type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;

export const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
