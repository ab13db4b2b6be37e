// The one place that decides who may do what. Each route declares the action it performs and the
// resources it names (src/server/access.ts); these checks answer with a 403 permission_denied
// whose message names what the key lacks: its role, or the part of its scope that the request
// falls outside of. The table of roles is ALLOWED below and in the README ("Roles and scopes").
import { ApiError } from '../errors.js';
import type { KeyGrant, Role } from './roles.js';

export const ACTIONS = [
  /** GETs: models, builds, deployments, metrics, the library, collections, the engine, replicas, the API document, Prometheus. */
  'read',
  /** A realtime model's request log, which holds request and response bodies. */
  'read-logs',
  /** predict, the OpenAI routes (chat, completions, models, embeddings), tokenize and detokenize. */
  'infer',
  /** Vector search, fetch, count, scroll and sample. */
  'read-vectors',
  /** Vector upserts and deletes. */
  'write-vectors',
  /** Creating, deleting, exporting and importing vector collections. */
  'manage-collections',
  /** Creating realtime models and uploading builds. */
  'manage-models',
  /** Deploying and undeploying (realtime and library), and moving a model to another instance type. */
  'deploy',
  /** Creating, changing and deleting audiences. */
  'manage-audiences',
  /** Protecting a variation, or changing the traffic of a protected one. */
  'protect',
  /** Listing, creating and revoking API keys. */
  'manage-keys',
] as const;
export type Action = (typeof ACTIONS)[number];

const EVERY_ROLE: readonly Role[] = ['admin', 'maintainer', 'member', 'inference'];
const BUILDERS: readonly Role[] = ['admin', 'maintainer', 'member'];

/** Which roles may perform each action. */
export const ALLOWED: Record<Action, readonly Role[]> = {
  read: EVERY_ROLE,
  'read-logs': BUILDERS,
  infer: EVERY_ROLE,
  'read-vectors': EVERY_ROLE,
  'write-vectors': EVERY_ROLE,
  'manage-collections': BUILDERS,
  'manage-models': BUILDERS,
  deploy: BUILDERS,
  'manage-audiences': BUILDERS,
  protect: ['admin', 'maintainer'],
  'manage-keys': ['admin'],
};

/** The action in words, after "cannot". */
const WORDS: Record<Action, string> = {
  read: 'read',
  'read-logs': "read request logs",
  infer: 'run inference',
  'read-vectors': 'read vectors',
  'write-vectors': 'write vectors',
  'manage-collections': 'create, delete, export or import vector collections',
  'manage-models': 'create models or upload builds',
  deploy: 'deploy models',
  'manage-audiences': 'change audiences',
  protect: 'protect variations',
  'manage-keys': 'manage API keys',
};

const list = (names: readonly string[]) => JSON.stringify(names);

const denied = (message: string, param: string | null = null) => new ApiError('permission_denied', message, param);

export function mayPerform(grant: KeyGrant, action: Action): boolean {
  return ALLOWED[action].includes(grant.role);
}

/** The role check: the only one that needs nothing from the request but its route. */
export function checkAction(grant: KeyGrant, action: Action): void {
  if (!mayPerform(grant, action)) throw denied(`this key's role "${grant.role}" cannot ${WORDS[action]}`);
}

/** A model (realtime or library) in `project`, named by `param`. */
export function checkModelProject(grant: KeyGrant, modelId: string, project: string, param = 'model_id'): void {
  const scoped = grant.scope.project;
  if (scoped !== null && scoped !== project) throw denied(`this key is scoped to project "${scoped}"; model "${modelId}" is in project "${project}", outside it`, param);
}

/** A new model to be made in `project`. */
export function checkNewModelProject(grant: KeyGrant, project: string, param = 'project'): void {
  const scoped = grant.scope.project;
  if (scoped !== null && scoped !== project) throw denied(`this key is scoped to project "${scoped}"; project "${project}" is outside it`, param);
}

/** What spans every project (audiences route the requests of every model). */
export function checkEveryProject(grant: KeyGrant, what: string): void {
  const scoped = grant.scope.project;
  if (scoped !== null) throw denied(`this key is scoped to project "${scoped}"; ${what} belong to every project`);
}

export function projectVisible(grant: KeyGrant, project: string): boolean {
  return grant.scope.project === null || grant.scope.project === project;
}

export function collectionVisible(grant: KeyGrant, name: string): boolean {
  return grant.scope.collections === null || grant.scope.collections.includes(name);
}

export function checkCollection(grant: KeyGrant, name: string, param = 'collection_name'): void {
  const scoped = grant.scope.collections;
  if (scoped !== null && !scoped.includes(name)) throw denied(`this key is scoped to collections ${list(scoped)}; collection "${name}" is outside it`, param);
}

/** An import without ?name= takes the file's own name, which is not known before the body is read. */
export function checkImportName(grant: KeyGrant, name: string | undefined): void {
  const scoped = grant.scope.collections;
  if (scoped === null) return;
  if (name === undefined) throw denied(`this key is scoped to collections ${list(scoped)}; an import must name its collection with ?name=`, 'name');
  checkCollection(grant, name, 'name');
}

/**
 * The tenants a vector request touches on a collection. A tenant-scoped key works only on
 * multi-tenant collections, and every tenant the request names (each item's, for a batch) must be
 * in its list; a request that names none is refused too.
 */
export function checkTenants(grant: KeyGrant, collection: { name: string; multiTenant: boolean }, tenants: ReadonlyArray<string | undefined>, param = 'tenant_id'): void {
  const scoped = grant.scope.tenants;
  if (scoped === null) return;
  if (!collection.multiTenant) throw denied(`this key is scoped to tenants ${list(scoped)}; the collection "${collection.name}" has no tenants`, 'collection_name');
  if (tenants.length === 0 || tenants.includes(undefined)) throw denied(`this key is scoped to tenants ${list(scoped)}; name one of them in ${param}`, param);
  const outside = tenants.find((t) => !scoped.includes(t!));
  if (outside !== undefined) throw denied(`this key is scoped to tenants ${list(scoped)}; tenant "${outside}" is outside it`, param);
}

/** What touches every tenant of a collection at once (creating, deleting, exporting, importing it). */
export function checkEveryTenant(grant: KeyGrant, what: string): void {
  const scoped = grant.scope.tenants;
  if (scoped !== null) throw denied(`this key is scoped to tenants ${list(scoped)}; ${what} touches every tenant`);
}

/** A change to the traffic of protected variations: maintainers and admins only. */
export function checkProtectedChange(grant: KeyGrant, modelId: string, variations: readonly string[]): void {
  if (variations.length === 0 || mayPerform(grant, 'protect')) return;
  const names = variations.map((v) => `"${v}"`).join(', ');
  throw denied(
    `this key's role "${grant.role}" cannot change the protected variation${variations.length > 1 ? 's' : ''} ${names} of model "${modelId}"; a maintainer or admin can`,
    'variation_name',
  );
}
