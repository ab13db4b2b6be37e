// Name rules of DESIGN.md section 4 for both model kinds (realtime and library), shared by the
// routes (as schema patterns), the deploy plan and the CLI.

/** Model ids: lowercase alphanumerics, '_' and '-', 1 to 64 characters, starting alphanumeric. */
export const MODEL_ID_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$';
export const PROJECT_PATTERN = MODEL_ID_PATTERN;

export const DEFAULT_VARIATION = 'default';
export const DEFAULT_PROJECT = 'default';
export const LIBRARY_PROJECT = 'library';

/**
 * Why `name` is not a valid variation name (1 to 36 characters of [a-z0-9.-], first and last
 * alphanumeric), rule by rule, or undefined when it is.
 */
export function variationNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name.length > 36) return `has ${name.length} characters; at most 36 are allowed`;
  const bad = [...name].find((c) => !/[a-z0-9.-]/.test(c));
  if (bad !== undefined) return `contains "${bad}"; only lowercase letters, digits, "-" and "." are allowed`;
  if (!/^[a-z0-9]/.test(name)) return 'must start with a lowercase letter or digit';
  if (!/[a-z0-9]$/.test(name)) return 'must end with a lowercase letter or digit';
  return undefined;
}

/**
 * Model ids that are path segments of the OpenAI root routes (`/v1/chat/completions`,
 * `/v1/completions`, `/v1/embeddings`, `/v1/models`): a model so named would be shadowed by them.
 */
export const RESERVED_MODEL_IDS: readonly string[] = ['chat', 'completions', 'embeddings', 'models'];

/** Why `id` cannot name a new model, or undefined when it can (the pattern is checked by the routes' schemas). */
export function reservedModelIdProblem(id: string): string | undefined {
  if (!RESERVED_MODEL_IDS.includes(id)) return undefined;
  return `model id "${id}" is reserved for the OpenAI root routes (/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models); choose another id`;
}
