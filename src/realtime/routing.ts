// Which variation answers a predict request (DESIGN.md section 4): audiences are tried in the
// deployment's order; the first whose conditions hold picks a non-shadow route at random by
// weight, and, with the shadow's probability, a shadow variation for a copy. A request that
// matches no audience goes to the fallback; one whose path names a variation goes there.
import type { HeaderPredicate, Headers } from './conditions.js';
import type { TrafficConfig } from './traffic.js';

export interface RouteChoice {
  variation: string;
  /** The audience that matched, or null for the fallback. */
  audienceId: string | null;
  /** A variation that gets a copy of the request, if the audience's shadow was drawn. */
  shadow: string | null;
}

export function chooseRoute(
  traffic: TrafficConfig,
  headers: Headers,
  predicate: (audienceId: string) => HeaderPredicate,
  random: () => number = Math.random,
): RouteChoice | undefined {
  for (const audience of traffic.audiences) {
    if (!predicate(audience.id)(headers)) continue;
    let draw = random() * 100;
    let variation: string | undefined;
    let shadow: string | null = null;
    for (const route of audience.routes) {
      if (route.shadow) {
        if (random() * 100 < route.weight) shadow = route.variation_name;
        continue;
      }
      if (variation === undefined && route.weight > 0 && draw < route.weight) variation = route.variation_name;
      draw -= route.weight;
    }
    // Rounding can leave the draw a hair above the last weight: the last positive route takes it.
    variation ??= [...audience.routes].reverse().find((r) => !r.shadow && r.weight > 0)?.variation_name;
    if (variation !== undefined) return { variation, audienceId: audience.id, shadow };
  }
  if (traffic.fallbackVariation === null) return undefined;
  return { variation: traffic.fallbackVariation, audienceId: null, shadow: null };
}

/** The route of a request whose path may name a variation: that one (no split, no shadow), or chooseRoute's pick. */
export function routeRequest(
  traffic: TrafficConfig,
  pathVariation: string | undefined,
  headers: Headers,
  predicate: (audienceId: string) => HeaderPredicate,
  random: () => number = Math.random,
): RouteChoice | undefined {
  if (pathVariation !== undefined) return { variation: pathVariation, audienceId: null, shadow: null };
  return chooseRoute(traffic, headers, predicate, random);
}
