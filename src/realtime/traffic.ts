// A model's traffic configuration: which build each variation serves, the audiences in the
// order they are tried with their routes, and where requests that match no audience go. A
// deployment carries the whole configuration it makes live, so going live is one swap.
import type { InstanceType } from '../native/surface.js';

export interface RouteConfig {
  variation_name: string;
  /** Percent of the audience's requests (non-shadow), or of copies sent (shadow). */
  weight: number;
  shadow: boolean;
}

export interface AudienceRouting {
  id: string;
  routes: RouteConfig[];
}

export interface BatchingOverride {
  max_batch_rows?: number;
  max_wait_micros?: number;
}

export interface TrafficConfig {
  /** Variation name -> build id. */
  variations: Record<string, string>;
  /** Tried in order; the first whose conditions hold routes the request. */
  audiences: AudienceRouting[];
  /** Serves requests that match no audience; null only when no variation is left. */
  fallbackVariation: string | null;
  /** Per-variation dynamic batching settings, where the deployment set them. */
  batching?: Record<string, BatchingOverride>;
  /** Per-variation instance type; a variation not listed (deployed before instance types) runs on the CPU. */
  instanceTypes?: Record<string, InstanceType>;
  /** Variations whose traffic only maintainers and admins may change (protection.ts); absent when none. */
  protected?: string[];
}

/** The instance type `variation` runs on. */
export function instanceTypeOf(traffic: TrafficConfig, variation: string): InstanceType {
  return traffic.instanceTypes?.[variation] ?? 'cpu';
}

/** A model's first deployment: one variation with all of the traffic. */
export function soleVariation(variation: string, buildId: string): TrafficConfig {
  return { variations: { [variation]: buildId }, audiences: [], fallbackVariation: variation };
}

/** Variation names that any route or the fallback of `traffic` mentions. */
export function mentionedVariations(audiences: readonly AudienceRouting[], fallback: string | null): Set<string> {
  const names = new Set<string>();
  for (const a of audiences) for (const r of a.routes) names.add(r.variation_name);
  if (fallback !== null) names.add(fallback);
  return names;
}
