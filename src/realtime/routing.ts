// Which variation answers a predict request. Issue 4 adds audiences and weighted routes; a model
// with a single variation sends everything to its fallback.
import type { LiveModel } from './registry.js';

export function chooseVariation(live: LiveModel, _headers: Record<string, string | string[] | undefined>): string {
  return live.traffic.fallbackVariation;
}
