// Protected variations (issue 22): a variation whose traffic only maintainers and admins may
// change. The list travels in the model's TrafficConfig (`protected`), so that every deployment
// carries it on like the rest of the traffic, and it is shown wherever the traffic is. What counts
// as a change is everything that decides what the variation serves and which requests reach it:
// its build, instance type and batching, its route (weight, shadow) in each audience, and whether
// it is the fallback. Removing it is a change too. Other variations may come and go beside it.
import { instanceTypeOf, type TrafficConfig } from './traffic.js';

export function protectedVariations(traffic: TrafficConfig | undefined): string[] {
  return traffic?.protected ?? [];
}

/**
 * What of `traffic` concerns `variation`, as one comparable text. For the fallback variation, an
 * audience that sends it all of its requests is the same as no audience at all (those requests
 * reach it either way), so that adding a variation at weight 0 beside it is no change to it.
 */
function footprint(traffic: TrafficConfig, variation: string): string {
  if (!(variation in traffic.variations)) return 'absent';
  const fallback = traffic.fallbackVariation === variation;
  const routes = traffic.audiences.flatMap((a) => {
    const route = a.routes.find((r) => r.variation_name === variation);
    if (fallback && route && !route.shadow && route.weight === 100) return [];
    return [[a.id, route ? { weight: route.weight, shadow: route.shadow } : null]];
  });
  return JSON.stringify({
    build: traffic.variations[variation],
    instanceType: instanceTypeOf(traffic, variation),
    batching: traffic.batching?.[variation] ?? null,
    routes,
    fallback,
  });
}

/** The protected variations of `live` that going from `live` to `next` changes. */
export function changedProtected(live: TrafficConfig | undefined, next: TrafficConfig): string[] {
  if (!live) return [];
  return protectedVariations(live).filter((v) => footprint(live, v) !== footprint(next, v));
}

/**
 * `next` with its protected list: the live one, less variations that are gone, with `variation`
 * protected or not when `set` says so. No list at all when empty, as traffic was before.
 */
export function withProtection(live: TrafficConfig | undefined, next: TrafficConfig, variation?: string, set?: boolean): TrafficConfig {
  const names = new Set(protectedVariations(live).filter((v) => v in next.variations));
  if (variation !== undefined && set === true) names.add(variation);
  if (variation !== undefined && set === false) names.delete(variation);
  const { protected: _previous, ...rest } = next;
  return names.size === 0 ? rest : { ...rest, protected: [...names].sort() };
}
