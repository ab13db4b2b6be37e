// The rules of a deployment (SPEC.md "Deployment command", DESIGN.md section 4), checked on the
// server before anything changes: each fault is a 400 naming the rule and the field. The result
// is the complete TrafficConfig that goes live if the builds load.
import { invalidArgument } from '../errors.js';
import { DEFAULT_VARIATION, variationNameProblem } from '../models/names.js';
import type { InstanceType } from '../native/surface.js';
import { mentionedVariations, soleVariation, type AudienceRouting, type BatchingOverride, type RouteConfig, type TrafficConfig } from './traffic.js';
import { describeValue } from '../validation.js';

/** The audiences section as sent (the deploy file's `realtime.audiences`), not yet checked. */
export type RawAudiences = unknown;

export interface DeployPlanInput {
  /** The model's live traffic, or undefined for a first deployment. */
  live: TrafficConfig | undefined;
  variationName: string | undefined;
  buildId: string;
  audiences: RawAudiences | undefined;
  batching?: BatchingOverride;
  /** The deployed variation's instance type (default cpu). */
  instanceType?: InstanceType;
  /** Whether an audience id exists. */
  audienceExists: (id: string) => boolean;
}

const AT = 'realtime.audiences';

function checkVariationName(name: string, field: string): void {
  const problem = variationNameProblem(name);
  if (problem) throw invalidArgument(`variation name "${name}" ${problem}`, field);
}

/** Checks the shape of the audiences list and rules 4, 5 and 6 against `known` variations. */
function checkAudiences(raw: RawAudiences, known: Set<string>, audienceExists: (id: string) => boolean): { audiences: AudienceRouting[]; fallback: string } {
  if (!Array.isArray(raw)) throw invalidArgument(`${AT} must be a list of audiences`, AT);
  const seen = new Set<string>();
  let fallback: { name: string; from: string } | undefined;
  const audiences = raw.map((item: unknown, i): AudienceRouting => {
    const at = `${AT}[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalidArgument(`${at} must be an object with id, routes and fallback_variation`, at);
    const a = item as Record<string, unknown>;
    if (typeof a.id !== 'string' || a.id === '') throw invalidArgument(`${at}.id must be an audience id`, `${at}.id`);
    if (seen.has(a.id)) throw invalidArgument(`${at}.id: audience "${a.id}" is listed twice`, `${at}.id`);
    seen.add(a.id);
    // Rule 6: the audience exists.
    if (!audienceExists(a.id)) throw invalidArgument(`${at}.id: audience "${a.id}" does not exist; create it first with "platform audiences create"`, `${at}.id`);
    if (!Array.isArray(a.routes) || a.routes.length === 0) throw invalidArgument(`${at}.routes must list at least one route`, `${at}.routes`);

    const inAudience = new Set<string>();
    let total = 0;
    let shadows = 0;
    const routes = a.routes.map((r: unknown, j): RouteConfig => {
      const rt = `${at}.routes[${j}]`;
      if (typeof r !== 'object' || r === null) throw invalidArgument(`${rt} must be an object with variation_name, weight and shadow`, rt);
      const route = r as Record<string, unknown>;
      if (typeof route.variation_name !== 'string') throw invalidArgument(`${rt}.variation_name must be a string`, `${rt}.variation_name`);
      checkVariationName(route.variation_name, `${rt}.variation_name`);
      // Rule 6: the variation exists or is the one being deployed.
      if (!known.has(route.variation_name)) {
        throw invalidArgument(`${rt}.variation_name: variation "${route.variation_name}" does not exist and is not the one being deployed`, `${rt}.variation_name`);
      }
      if (inAudience.has(route.variation_name)) throw invalidArgument(`${rt}: variation "${route.variation_name}" has two routes in audience "${a.id}"`, `${rt}.variation_name`);
      inAudience.add(route.variation_name);
      if (typeof route.weight !== 'number' || !Number.isFinite(route.weight) || route.weight < 0 || route.weight > 100) {
        throw invalidArgument(`${rt}.weight must be a number from 0 to 100, got ${describeValue(route.weight)}`, `${rt}.weight`);
      }
      if (route.shadow !== undefined && typeof route.shadow !== 'boolean') throw invalidArgument(`${rt}.shadow must be true or false`, `${rt}.shadow`);
      const shadow = route.shadow === true;
      if (shadow) shadows++;
      else total += route.weight;
      return { variation_name: route.variation_name, weight: route.weight, shadow };
    });
    // Rule 4: weights total 100, one shadow at most.
    if (shadows > 1) throw invalidArgument(`${at}.routes: audience "${a.id}" has ${shadows} shadow routes; at most one is allowed`, `${at}.routes`);
    if (Math.abs(total - 100) > 1e-9) {
      throw invalidArgument(`${at}.routes: the non-shadow weights of audience "${a.id}" total ${total}; they must total exactly 100`, `${at}.routes`);
    }
    // Rule 5: one fallback, named by at least one audience; the others may repeat it.
    if (a.fallback_variation !== undefined) {
      if (typeof a.fallback_variation !== 'string') throw invalidArgument(`${at}.fallback_variation must be a variation name`, `${at}.fallback_variation`);
      if (!known.has(a.fallback_variation)) {
        throw invalidArgument(`${at}.fallback_variation: variation "${a.fallback_variation}" is neither the new variation nor an existing one`, `${at}.fallback_variation`);
      }
      if (fallback && fallback.name !== a.fallback_variation) {
        throw invalidArgument(
          `${at}.fallback_variation is "${a.fallback_variation}" but ${fallback.from} names "${fallback.name}"; requests that match no audience go to one fallback`,
          `${at}.fallback_variation`,
        );
      }
      fallback ??= { name: a.fallback_variation, from: `${at.replace(/\[\d+\]$/, '')}[${i}]` };
    }
    return { id: a.id, routes };
  });
  if (!fallback) {
    throw invalidArgument(`${AT}: no fallback_variation is named; choose the variation that serves requests matching no audience`, `${AT}[0].fallback_variation`);
  }
  return { audiences, fallback: fallback.name };
}

/** Rule 3: every existing variation is listed in a route or as the fallback. */
function checkAllListed(existing: Iterable<string>, audiences: AudienceRouting[], fallback: string): void {
  const listed = mentionedVariations(audiences, fallback);
  const missing = [...existing].filter((v) => !listed.has(v));
  if (missing.length > 0) {
    throw invalidArgument(
      `${AT} does not list the existing variation${missing.length > 1 ? 's' : ''} ${missing.map((v) => `"${v}"`).join(', ')}; a deployment file must list every existing variation`,
      AT,
    );
  }
}

/** The traffic that deploying `buildId` under a variation makes live. */
export function planDeployment(input: DeployPlanInput): { variation: string; traffic: TrafficConfig } {
  const existing = input.live ? Object.keys(input.live.variations) : [];
  // Rule 2: a first build needs no variation data; it is `default` unless named.
  const variation = input.variationName ?? (existing.length === 1 && input.audiences === undefined ? existing[0]! : DEFAULT_VARIATION);
  checkVariationName(variation, 'variation_name');
  const variations = { ...(input.live?.variations ?? {}), [variation]: input.buildId };
  const batching = { ...(input.live?.batching ?? {}) };
  if (input.batching) batching[variation] = input.batching;
  // Other variations keep theirs; the deployed one gets what was asked for (cpu unless said).
  const instanceTypes = { ...(input.live?.instanceTypes ?? {}), [variation]: input.instanceType ?? 'cpu' };

  if (input.audiences === undefined) {
    if (!input.live || Object.keys(input.live.variations).length === 0) return { variation, traffic: { ...soleVariation(variation, input.buildId), batching, instanceTypes } };
    if (variation in input.live.variations) return { variation, traffic: { ...input.live, variations, batching, instanceTypes } };
    throw invalidArgument(
      `model already has variation${existing.length > 1 ? 's' : ''} ${existing.map((v) => `"${v}"`).join(', ')}; deploying the new variation "${variation}" needs a deployment file whose audiences list every existing variation`,
      AT,
    );
  }
  if (Array.isArray(input.audiences) && input.audiences.length === 0 && existing.length === 0) {
    return { variation, traffic: { ...soleVariation(variation, input.buildId), batching, instanceTypes } };
  }
  const known = new Set(Object.keys(variations));
  const { audiences, fallback } = checkAudiences(input.audiences, known, input.audienceExists);
  checkAllListed(existing, audiences, fallback);
  return { variation, traffic: { variations, audiences, fallbackVariation: fallback, batching, instanceTypes } };
}

/** The traffic left after removing a variation; `audiences` gives the remaining routes. */
export function planUndeploy(live: TrafficConfig, variation: string, audiences: RawAudiences | undefined, audienceExists: (id: string) => boolean): TrafficConfig {
  const variations = { ...live.variations };
  delete variations[variation];
  const batching = { ...(live.batching ?? {}) };
  delete batching[variation];
  const instanceTypes = { ...(live.instanceTypes ?? {}) };
  delete instanceTypes[variation];
  const remaining = Object.keys(variations);
  if (remaining.length === 0) return { variations, audiences: [], fallbackVariation: null, batching, instanceTypes };

  if (audiences === undefined) {
    // Without a file, the variation may go only if no live request depends on it.
    if (live.fallbackVariation === variation) {
      throw invalidArgument(`variation "${variation}" is the fallback; give the remaining traffic with --from-file`, 'variation_name');
    }
    for (const a of live.audiences) {
      if (a.routes.some((r) => r.variation_name === variation && !r.shadow && r.weight > 0)) {
        throw invalidArgument(`variation "${variation}" receives traffic in audience "${a.id}"; give the remaining traffic with --from-file`, 'variation_name');
      }
    }
    // Shadow and zero-weight routes to it simply disappear.
    const kept = live.audiences.map((a) => ({ id: a.id, routes: a.routes.filter((r) => r.variation_name !== variation) }));
    return { variations, audiences: kept, fallbackVariation: live.fallbackVariation, batching, instanceTypes };
  }
  const known = new Set(remaining);
  const checked = checkAudiences(audiences, known, audienceExists);
  checkAllListed(remaining, checked.audiences, checked.fallback);
  return { variations, audiences: checked.audiences, fallbackVariation: checked.fallback, batching, instanceTypes };
}
