// The shapes of the REST API's answers that the console reads (src/server/routes/*.ts).

export interface ReplicaCount {
  applied: number;
  total: number;
}

export interface Model {
  model_id: string;
  project: string;
  description: string;
  kind: 'realtime' | 'library';
  created_at: number;
}

export interface Route {
  variation_name: string;
  weight: number;
  shadow: boolean;
}

export interface Deployment {
  deployment_id: string;
  model_id: string;
  action: 'deploy' | 'undeploy';
  status: 'PENDING' | 'DEPLOYING' | 'LIVE' | 'FAILED' | 'SUPERSEDED';
  reason: string | null;
  variation_name: string;
  build_id: string | null;
  instance_type: string | null;
  traffic: {
    variations: Record<string, string>;
    audiences: Array<{ id: string; routes: Route[] }>;
    fallbackVariation: string | null;
    instanceTypes?: Record<string, string>;
  };
  created_at: number;
  updated_at: number;
}

export interface ModelDetails {
  model: Model;
  live_deployment: Deployment | null;
  deployment_in_progress: Deployment | null;
  replicas: ReplicaCount;
}

export interface Build {
  build_id: string;
  model_id: string;
  sha256: string;
  size_bytes: number;
  features: Array<{ name: string; type: string }>;
  outputs: string[];
  operators: string[];
  opsets: Record<string, number>;
  created_at: number;
}

export interface LibraryDeployment {
  model_id: string;
  name: string;
  file: string;
  license: string | null;
  license_link: string | null;
  instance_type: string;
  threads: number | null;
  placement: number | null;
  pending_instance_type: string | null;
  last_instance_error: string | null;
  status: string;
  reason: string | null;
  created_at: number;
  updated_at: number;
  replicas?: ReplicaCount;
}

export interface UnaryCondition {
  key: string;
  operator: string;
  operand?: string;
}

export interface BinaryCondition {
  key: string;
  operator: string;
  first_operand: number;
  second_operand: number;
}

export interface Audience {
  id: string;
  name: string;
  description: string;
  conditions: { unary: UnaryCondition[]; binary: BinaryCondition[] };
  created_at: number;
  updated_at: number;
}

export interface Collection {
  name: string;
  dimension: number;
  metric: 'cosine' | 'l2' | 'dot';
  description: string;
  multi_tenant: boolean;
  hnsw: { m: number; ef_construction: number; ef: number };
  vector_count: number;
  created_at: number;
  index?: { tenants: number; indexed: number; tombstones: number; pending: number; compacting: boolean };
}

export interface VectorRecord {
  id?: string;
  values?: number[];
  properties?: Record<string, unknown>;
}

export interface SearchResult {
  id?: string;
  distance?: number;
  properties?: Record<string, unknown>;
  vector?: { values: number[] };
}

/** GET /api/v1/library: one GGUF file of MODELS_DIR. */
export interface CatalogEntry {
  name: string;
  file: string;
  size_bytes: number;
  architecture: string;
  parameters: number;
  quantization: string;
  context_length: number | null;
  license: string | null;
  license_link: string | null;
  chat_template: boolean;
  /** What a deployment serves: chat and completions, or embeddings (bert, nomic-bert). */
  serves: 'chat' | 'embeddings';
  /** Why the engine cannot load the file, or null when it can (a deploy of it is refused). */
  unsupported: string | null;
}

export interface Catalog {
  models: CatalogEntry[];
  problems: Array<{ file: string; error: string }>;
}

/** Mean, p50 and p99 over the window; null without samples. */
export interface LatencySummary {
  mean: number | null;
  p50: number | null;
  p99: number | null;
}

/** Of the live replicas, how many gave their figures to GET .../metrics. */
export interface ReplicasAnswered {
  answered: number;
  total: number;
}

/** GET /api/v1/models/:id/metrics of a library model: SPEC.md's four figures over 5 minutes. */
export interface LibraryMetrics {
  replicas?: ReplicasAnswered;
  model_id: string;
  window_seconds: number;
  requests_5m: number;
  throughput_rpm_5m: number;
  token_throughput_tps: number;
  time_to_first_token_ms: LatencySummary;
  time_per_output_token_ms: LatencySummary;
}

/** GET /api/v1/models/:id/metrics of a realtime model: per variation over 5 minutes. */
export interface RealtimeMetrics {
  replicas?: ReplicasAnswered;
  model_id: string;
  window_seconds: number;
  variations: Array<{
    variation: string;
    shadow: boolean;
    requests_5m: number;
    throughput_rpm_5m: number;
    errors_5m: number;
    latency_ms: LatencySummary;
  }>;
}
