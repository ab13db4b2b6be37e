// A model's traffic configuration: which build each variation serves, the audiences in the
// order they are tried, and where requests that match no audience go. A deployment carries the
// whole configuration it makes live, so going live is one swap.

export interface RouteConfig {
  variation_name: string;
  /** Percent of the audience's requests (non-shadow), or of copies sent (shadow). */
  weight: number;
  shadow: boolean;
}

export interface AudienceRouting {
  id: string;
  routes: RouteConfig[];
  fallback_variation: string;
}

export interface TrafficConfig {
  /** Variation name -> build id. */
  variations: Record<string, string>;
  audiences: AudienceRouting[];
  /** Serves requests that match no audience. */
  fallbackVariation: string;
}

/** A model's first deployment: one variation with all of the traffic. */
export function soleVariation(variation: string, buildId: string): TrafficConfig {
  return { variations: { [variation]: buildId }, audiences: [], fallbackVariation: variation };
}
