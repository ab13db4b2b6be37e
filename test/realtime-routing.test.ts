// Routing without HTTP (src/realtime/routing.ts): the random source is injected, so every pick is
// exact. Audiences are tried in file order and the first match routes; the split takes the route
// whose cumulative weight range holds the draw; the shadow has a draw of its own; the fallback
// serves unmatched requests; a variation named in the URL bypasses all of it.
import { describe, expect, it } from 'vitest';
import type { Headers } from '../src/realtime/conditions.js';
import { chooseRoute, routeRequest } from '../src/realtime/routing.js';
import type { AudienceRouting, RouteConfig, TrafficConfig } from '../src/realtime/traffic.js';

/** A random source that returns `values` in order and fails the test if asked for one more. */
function draws(...values: number[]) {
  const source = () => {
    if (source.calls >= values.length) throw new Error(`random() called ${source.calls + 1} times; the test expected ${values.length}`);
    return values[source.calls++]!;
  };
  source.calls = 0;
  return source;
}

const noDraws = () => draws();

/** Audience `id` matches the requests that carry the header x-<id>. */
const byHeader = (id: string) => (headers: Headers) => headers[`x-${id}`] !== undefined;

const route = (variation_name: string, weight: number, shadow = false): RouteConfig => ({ variation_name, weight, shadow });

function traffic(audiences: AudienceRouting[], fallbackVariation: string | null = 'fallback'): TrafficConfig {
  const variations: Record<string, string> = {};
  for (const a of audiences) for (const r of a.routes) variations[r.variation_name] = `build-${r.variation_name}`;
  if (fallbackVariation !== null) variations[fallbackVariation] = `build-${fallbackVariation}`;
  return { variations, audiences, fallbackVariation };
}

/** The variation an audience with a 90/10 split picks for one draw. */
const split9010 = (draw: number) => chooseRoute(traffic([{ id: 'beta', routes: [route('main', 90), route('canary', 10)] }]), { 'x-beta': '1' }, byHeader, draws(draw))?.variation;

describe('audience order', () => {
  const two = (first: string, second: string) =>
    traffic([
      { id: first, routes: [route(`${first}-only`, 100)] },
      { id: second, routes: [route(`${second}-only`, 100)] },
    ]);

  it('the first audience in file order whose conditions hold routes the request', () => {
    const both = { 'x-gold': '1', 'x-beta': '1' };
    expect(chooseRoute(two('gold', 'beta'), both, byHeader, draws(0.5))).toEqual({ variation: 'gold-only', audienceId: 'gold', shadow: null });
    expect(chooseRoute(two('beta', 'gold'), both, byHeader, draws(0.5))).toEqual({ variation: 'beta-only', audienceId: 'beta', shadow: null });
  });

  it('an audience that does not match is passed over without a draw', () => {
    const random = draws(0.5);
    expect(chooseRoute(two('gold', 'beta'), { 'x-beta': '1' }, byHeader, random)).toEqual({ variation: 'beta-only', audienceId: 'beta', shadow: null });
    expect(random.calls).toBe(1);
  });

  it('asks each audience predicate in order and stops at the first match', () => {
    const asked: string[] = [];
    const config = traffic([
      { id: 'a', routes: [route('va', 100)] },
      { id: 'b', routes: [route('vb', 100)] },
      { id: 'c', routes: [route('vc', 100)] },
    ]);
    const choice = chooseRoute(config, { 'x-b': '1', 'x-c': '1' }, (id) => (asked.push(id), byHeader(id)), draws(0.5));
    expect(choice?.variation).toBe('vb');
    expect(asked).toEqual(['a', 'b']);
  });
});

describe('weighted split', () => {
  it('picks by the cumulative weights: [0, 90) the first route, [90, 100) the second', () => {
    expect(split9010(0)).toBe('main');
    expect(split9010(0.8999999999999999)).toBe('main');
    expect(split9010(0.9)).toBe('canary');
    expect(split9010(1 - 2 ** -53)).toBe('canary');
  });

  it('never picks a zero-weight route, even where its range would start', () => {
    const config = traffic([{ id: 'beta', routes: [route('off', 0), route('on', 100)] }]);
    expect(chooseRoute(config, { 'x-beta': '1' }, byHeader, draws(0))?.variation).toBe('on');
  });

  it('a draw that rounding leaves above the last weight goes to the last positive route', () => {
    // 0.1 + 0.1 + 99.8 total 100, but 99.99999999999999 - 0.1 - 0.1 comes out at 99.8, not below it.
    const config = traffic([{ id: 'beta', routes: [route('a', 0.1), route('b', 0.1), route('c', 99.8), route('d', 0)] }]);
    expect(chooseRoute(config, { 'x-beta': '1' }, byHeader, draws(1 - 2 ** -53))).toEqual({ variation: 'c', audienceId: 'beta', shadow: null });
  });
});

describe('shadow', () => {
  const withShadow = traffic([{ id: 'beta', routes: [route('shadowed', 20, true), route('main', 100)] }]);
  const pick = (split: number, shadowDraw: number) => chooseRoute(withShadow, { 'x-beta': '1' }, byHeader, draws(split, shadowDraw));

  it('draws the shadow separately: a copy below its weight, none from it on', () => {
    expect(pick(0.5, 0)).toEqual({ variation: 'main', audienceId: 'beta', shadow: 'shadowed' });
    expect(pick(0.5, 0.19999999999999996)).toEqual({ variation: 'main', audienceId: 'beta', shadow: 'shadowed' });
    expect(pick(0.5, 0.2)).toEqual({ variation: 'main', audienceId: 'beta', shadow: null });
  });

  it('a shadow route takes no share of the split, even where the split draw lands in its weight', () => {
    expect(pick(0, 0.99)?.variation).toBe('main');
  });
});

describe('fallback', () => {
  const config = traffic([{ id: 'beta', routes: [route('canary', 100)] }], 'stable');

  it('a request that matches no audience goes to the fallback, without a draw', () => {
    expect(chooseRoute(config, {}, byHeader, noDraws())).toEqual({ variation: 'stable', audienceId: null, shadow: null });
  });

  it('without a fallback an unmatched request has no route', () => {
    expect(chooseRoute(traffic([{ id: 'beta', routes: [route('canary', 100)] }], null), {}, byHeader, noDraws())).toBeUndefined();
  });
});

describe('a variation named in the URL', () => {
  const config = traffic([{ id: 'beta', routes: [route('shadowed', 100, true), route('main', 50), route('canary', 50)] }], 'stable');

  it('bypasses the audiences, the split and the shadow', () => {
    const asked: string[] = [];
    const choice = routeRequest(config, 'canary', { 'x-beta': '1' }, (id) => (asked.push(id), byHeader(id)), noDraws());
    expect(choice).toEqual({ variation: 'canary', audienceId: null, shadow: null });
    expect(asked).toEqual([]);
  });

  it('without one, the request is routed by its headers', () => {
    expect(routeRequest(config, undefined, { 'x-beta': '1' }, byHeader, draws(0.5, 0.5))).toEqual({ variation: 'canary', audienceId: 'beta', shadow: 'shadowed' });
  });
});
