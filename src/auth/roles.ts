// What an API key may do: its role, and its scope (a project, collections, tenants). Both are
// fixed when the key is made (`platform keys create --role ...`, POST /api/v1/keys) and kept in
// its row (migration 12); keys made before roles existed are admin with no scope.
// permissions.ts decides each request from these.
import { PROJECT_PATTERN } from '../models/names.js';
import { COLLECTION_NAME_PATTERN, MAX_TENANT_LENGTH } from '../vectors/types.js';

export const ROLES = ['admin', 'maintainer', 'member', 'inference'] as const;
export type Role = (typeof ROLES)[number];

/** The role of a key made without one, and of every key made before roles existed. */
export const DEFAULT_ROLE: Role = 'admin';

/** Each part null: unscoped in that respect. */
export interface KeyScope {
  /** The one project whose models the key may touch (library models are in project "library"). */
  project: string | null;
  /** The vector collections the key may touch. */
  collections: string[] | null;
  /** The tenants of multi-tenant collections the key may touch. */
  tenants: string[] | null;
}

export const UNSCOPED: KeyScope = { project: null, collections: null, tenants: null };

/** A key's role and scope, as every authenticated request carries it. */
export interface KeyGrant {
  role: Role;
  scope: KeyScope;
}

/** The most names a scope list holds. */
export const MAX_SCOPE_NAMES = 1000;

const PROJECT = new RegExp(PROJECT_PATTERN);
const COLLECTION = new RegExp(COLLECTION_NAME_PATTERN);

/** A bad role or scope, said in words the CLI and the HTTP route both show. */
export class ScopeError extends Error {
  constructor(
    message: string,
    /** The field at fault: role, project, collections or tenants. */
    readonly field: 'role' | 'project' | 'collections' | 'tenants',
  ) {
    super(message);
  }
}

export function checkRole(role: string): Role {
  if (!(ROLES as readonly string[]).includes(role)) throw new ScopeError(`role must be one of ${ROLES.join(', ')}; got "${role}"`, 'role');
  return role as Role;
}

function checkList(names: readonly string[], field: 'collections' | 'tenants', valid: (name: string) => string | null): string[] {
  if (names.length === 0) throw new ScopeError(`${field} must name at least one; leave it out for a key unscoped in ${field}`, field);
  if (names.length > MAX_SCOPE_NAMES) throw new ScopeError(`${field} names ${names.length}; at most ${MAX_SCOPE_NAMES}`, field);
  for (const name of names) {
    const problem = valid(name);
    if (problem !== null) throw new ScopeError(`${field}: ${problem}`, field);
  }
  return [...new Set(names)];
}

/** Checks each part of a scope as given (undefined: unscoped there) and returns it whole. */
export function checkScope(given: { project?: string; collections?: readonly string[]; tenants?: readonly string[] }): KeyScope {
  if (given.project !== undefined && !PROJECT.test(given.project)) {
    throw new ScopeError(`project "${given.project}" is not a project name (lowercase letters, digits, _ and -, 1 to 64, starting with a letter or digit)`, 'project');
  }
  const collections =
    given.collections === undefined
      ? null
      : checkList(given.collections, 'collections', (n) => (COLLECTION.test(n) ? null : `"${n}" is not a collection name (letters, digits, _ . and -, 1 to 128, starting with a letter or digit)`));
  const tenants =
    given.tenants === undefined
      ? null
      : checkList(given.tenants, 'tenants', (t) => (t.length >= 1 && t.length <= MAX_TENANT_LENGTH ? null : `a tenant id has 1 to ${MAX_TENANT_LENGTH} characters; "${t.slice(0, 40)}" has ${t.length}`));
  return { project: given.project ?? null, collections, tenants };
}

/** The scope in one line, for `platform keys list`: `project=p collections=a,b tenants=t` or `-`. */
export function describeScope(scope: KeyScope): string {
  const parts: string[] = [];
  if (scope.project !== null) parts.push(`project=${scope.project}`);
  if (scope.collections !== null) parts.push(`collections=${scope.collections.join(',')}`);
  if (scope.tenants !== null) parts.push(`tenants=${scope.tenants.join(',')}`);
  return parts.length === 0 ? '-' : parts.join(' ');
}

const parseList = (text: string | null): string[] | null => (text === null ? null : (JSON.parse(text) as string[]));

/** The role and scope of an api_keys row (the columns of migration 12). */
export function grantOf(row: { role: Role; scope_project: string | null; scope_collections: string | null; scope_tenants: string | null }): KeyGrant {
  return {
    role: row.role,
    scope: { project: row.scope_project, collections: parseList(row.scope_collections), tenants: parseList(row.scope_tenants) },
  };
}
