// Each authenticated route declares what it needs (`config: { access: ... }`): the action it
// performs and where the request names its resources. Two hooks enforce the declarations through
// src/auth/permissions.ts: the role at onRequest (nothing of the request is needed but its route),
// the scope at preHandler (once params and body are parsed). A route registered behind the token
// without a declaration fails at start (`requireDeclarations`), so that a new route cannot forget
// one; test/auth-roles.test.ts also checks the API document, where each is shown as x-access.
import type { FastifyInstance, FastifyRequest, onRequestHookHandler, preHandlerHookHandler, RouteOptions } from 'fastify';
import {
  checkAction,
  checkCollection,
  checkEveryProject,
  checkEveryTenant,
  checkModelProject,
  checkNewModelProject,
  checkTenants,
  type Action,
} from '../auth/permissions.js';
import type { KeyGrant } from '../auth/roles.js';
import { DOCS_PREFIX, OPENAPI_PATH } from './openapi.js';

type Named = string | undefined;
type Extract<T> = (request: FastifyRequest) => T | Promise<T>;

export interface RouteAccess {
  action: Action;
  /** The model (realtime or library) the request names, checked against a project scope. */
  model?: Extract<Named>;
  /** The field that names it, for the error's param (default model_id). */
  modelParam?: string;
  /** The project of a model the request makes, checked against a project scope. */
  newProject?: Extract<string>;
  /** What the request changes for every project at once, in words (refused to project-scoped keys). */
  everyProject?: string;
  /** The vector collection the request names, checked against a collections scope. */
  collection?: Extract<Named>;
  /** The field that names it, for the error's param (default collection_name). */
  collectionParam?: string;
  /** The tenants the request names on that collection (every item's for a batch), checked against a tenants scope. */
  tenants?: Extract<Named[]>;
  /** What the request touches in every tenant of a collection, in words (refused to tenant-scoped keys). */
  everyTenant?: string;
  /** A part of the scope the handler checks itself, once it knows the resource (said for the reader and the API document). */
  inHandler?: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route needs of the caller's key (src/server/access.ts). */
    access?: RouteAccess;
  }
  interface FastifyRequest {
    /** The role and scope of the caller's API key, set by the bearer hook; null on public routes. */
    grant: KeyGrant | null;
  }
}

/** The grant of an authenticated request (the bearer hook has run). */
export function grantOf(request: FastifyRequest): KeyGrant {
  if (!request.grant) throw new Error(`no key grant on ${request.method} ${request.url}: the route is not behind the bearer hook`);
  return request.grant;
}

/** The routes of the API document and docs page, which @fastify/swagger-ui registers without a declaration of ours. */
const isDocsRoute = (url: string) => url === OPENAPI_PATH || url === DOCS_PREFIX || url.startsWith(`${DOCS_PREFIX}/`);

/** Refuses, at registration, a route behind the token that declares no access (docs routes read). */
export function requireDeclarations(api: FastifyInstance): void {
  api.addHook('onRoute', (route: RouteOptions) => {
    if (route.config?.access) return;
    if (isDocsRoute(route.url)) {
      route.config = { ...route.config, access: { action: 'read' } };
      return;
    }
    throw new Error(`route ${String(route.method)} ${route.url} declares no access (config.access: src/server/access.ts)`);
  });
}

/** The role check, after the bearer hook: the route's action against the key's role. */
export const checkRouteRole: onRequestHookHandler = async (request) => {
  const access = request.routeOptions.config.access;
  if (!access) throw new Error(`route ${request.method} ${request.routeOptions.url} declares no access`);
  checkAction(grantOf(request), access.action);
};

export interface ScopeLookups {
  /** The project of a model, or undefined when there is no such model (the route answers its 404). */
  projectOf(modelId: string): Promise<string | undefined>;
  /** Whether a collection has tenants, or undefined when there is no such collection. */
  tenancy(name: string): Promise<{ name: string; multiTenant: boolean } | undefined>;
}

/** The scope check, once the request is parsed: each resource the route names against the key's scope. */
export function checkRouteScope(lookups: ScopeLookups): preHandlerHookHandler {
  return async function checkScope(request) {
    const access = request.routeOptions.config.access!;
    const grant = grantOf(request);
    const { scope } = grant;
    if (scope.project !== null) {
      if (access.everyProject !== undefined) checkEveryProject(grant, access.everyProject);
      if (access.newProject) checkNewModelProject(grant, await access.newProject(request));
      const modelId = await access.model?.(request);
      if (modelId !== undefined) {
        const project = await lookups.projectOf(modelId);
        if (project !== undefined) checkModelProject(grant, modelId, project, access.modelParam);
      }
    }
    if (scope.collections === null && scope.tenants === null) return;
    if (scope.tenants !== null && access.everyTenant !== undefined) checkEveryTenant(grant, access.everyTenant);
    const name = await access.collection?.(request);
    if (name === undefined) return;
    checkCollection(grant, name, access.collectionParam);
    if (scope.tenants !== null && access.tenants) {
      const collection = await lookups.tenancy(name);
      if (collection) checkTenants(grant, collection, await access.tenants(request));
    }
  };
}
