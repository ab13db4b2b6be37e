// The deploy plan without HTTP (src/realtime/deploy-plan.ts): every rule a deployment or an
// undeploy is checked against, each refused with its exact message and field, and the complete
// traffic that a valid plan makes live.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { planDeployment, planUndeploy, type DeployPlanInput } from '../src/realtime/deploy-plan.js';
import type { TrafficConfig } from '../src/realtime/traffic.js';

const AUDIENCES = new Set(['aud-gold', 'aud-all']);
const audienceExists = (id: string) => AUDIENCES.has(id);

/** A model with `default` live on build b1, everyone routed there. */
const LIVE: TrafficConfig = {
  variations: { default: 'b1' },
  audiences: [],
  fallbackVariation: 'default',
  batching: {},
  instanceTypes: { default: 'cpu' },
};

/** default and canary live behind one audience, 90/10, with a shadow. */
const TWO_LIVE: TrafficConfig = {
  variations: { default: 'b1', canary: 'b2', mirror: 'b3' },
  audiences: [
    {
      id: 'aud-gold',
      routes: [
        { variation_name: 'default', weight: 90, shadow: false },
        { variation_name: 'canary', weight: 10, shadow: false },
        { variation_name: 'mirror', weight: 5, shadow: true },
      ],
    },
  ],
  fallbackVariation: 'default',
  batching: { canary: { max_batch_rows: 8 } },
  instanceTypes: { default: 'cpu', canary: 'cuda', mirror: 'cpu' },
};

const deploy = (input: Partial<DeployPlanInput>) => planDeployment({ live: LIVE, variationName: 'canary', buildId: 'b2', audiences: undefined, audienceExists, ...input });

/** A valid audiences file for deploying canary next to default. */
const canaryFile = (over: Record<string, unknown> = {}) => [
  {
    id: 'aud-gold',
    routes: [
      { variation_name: 'default', weight: 90, shadow: false },
      { variation_name: 'canary', weight: 10, shadow: false },
    ],
    fallback_variation: 'default',
    ...over,
  },
];

/** The ApiError `plan` throws, as { status, message, param }. */
function refusal(plan: () => unknown): { status: number; message: string; param: string | null } {
  try {
    plan();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { status: err.status, message: err.message, param: err.param };
  }
  throw new Error('the plan was accepted');
}

const refused = (message: string, param: string | null) => ({ status: 400, message, param });

describe('variation names', () => {
  it.each([
    ['', 'variation name "" is empty'],
    ['c'.repeat(37), `variation name "${'c'.repeat(37)}" has 37 characters; at most 36 are allowed`],
    ['Canary', 'variation name "Canary" contains "C"; only lowercase letters, digits, "-" and "." are allowed'],
    ['can_ary', 'variation name "can_ary" contains "_"; only lowercase letters, digits, "-" and "." are allowed'],
    ['.canary', 'variation name ".canary" must start with a lowercase letter or digit'],
    ['canary-', 'variation name "canary-" must end with a lowercase letter or digit'],
  ])('%j is refused', (name, message) => {
    expect(refusal(() => deploy({ live: undefined, variationName: name }))).toEqual(refused(message, 'variation_name'));
  });

  it('a route names a variation by the same rules, with the route as the field', () => {
    const file = [{ id: 'aud-gold', routes: [{ variation_name: 'Default', weight: 100 }], fallback_variation: 'default' }];
    expect(refusal(() => deploy({ audiences: file }))).toEqual(
      refused('variation name "Default" contains "D"; only lowercase letters, digits, "-" and "." are allowed', 'realtime.audiences[0].routes[0].variation_name'),
    );
  });

  it('the longest and shortest valid names pass', () => {
    expect(deploy({ live: undefined, variationName: 'a' }).variation).toBe('a');
    expect(deploy({ live: undefined, variationName: `a${'.-9'.repeat(11)}z1` }).variation).toBe(`a${'.-9'.repeat(11)}z1`);
  });
});

describe('without a deployment file', () => {
  it('a first build becomes `default` with all of the traffic, on the CPU unless asked', () => {
    expect(deploy({ live: undefined, variationName: undefined, buildId: 'b1' })).toEqual({
      variation: 'default',
      traffic: { variations: { default: 'b1' }, audiences: [], fallbackVariation: 'default', batching: {}, instanceTypes: { default: 'cpu' } },
    });
    const batching = { max_batch_rows: 64, max_wait_micros: 500 };
    expect(deploy({ live: undefined, variationName: 'blue', buildId: 'b1', batching, instanceType: 'cuda' }).traffic).toEqual({
      variations: { blue: 'b1' },
      audiences: [],
      fallbackVariation: 'blue',
      batching: { blue: batching },
      instanceTypes: { blue: 'cuda' },
    });
  });

  it('a new build for the only variation replaces its build and keeps the routing', () => {
    expect(deploy({ variationName: undefined, buildId: 'b9' })).toEqual({ variation: 'default', traffic: { ...LIVE, variations: { default: 'b9' } } });
    const redeploy = deploy({ live: TWO_LIVE, variationName: 'canary', buildId: 'b9', instanceType: 'cpu' });
    expect(redeploy.traffic).toEqual({ ...TWO_LIVE, variations: { ...TWO_LIVE.variations, canary: 'b9' }, instanceTypes: { ...TWO_LIVE.instanceTypes, canary: 'cpu' } });
  });

  it('a new variation next to existing ones needs a file', () => {
    expect(refusal(() => deploy({}))).toEqual(
      refused('model already has variation "default"; deploying the new variation "canary" needs a deployment file whose audiences list every existing variation', 'realtime.audiences'),
    );
    expect(refusal(() => deploy({ live: TWO_LIVE, variationName: 'green' }))).toEqual(
      refused(
        'model already has variations "default", "canary", "mirror"; deploying the new variation "green" needs a deployment file whose audiences list every existing variation',
        'realtime.audiences',
      ),
    );
  });

  it('an empty audiences list is a first deployment without routing', () => {
    expect(deploy({ live: undefined, audiences: [] }).traffic).toEqual({ variations: { canary: 'b2' }, audiences: [], fallbackVariation: 'canary', batching: {}, instanceTypes: { canary: 'cpu' } });
  });
});

describe('the audiences file', () => {
  const refuse = (audiences: unknown, message: string, param: string) => expect(refusal(() => deploy({ audiences }))).toEqual(refused(message, param));

  it('is a list of objects with an existing, unrepeated audience id', () => {
    refuse({ id: 'aud-gold' }, 'realtime.audiences must be a list of audiences', 'realtime.audiences');
    refuse(['aud-gold'], 'realtime.audiences[0] must be an object with id, routes and fallback_variation', 'realtime.audiences[0]');
    refuse(canaryFile({ id: '' }), 'realtime.audiences[0].id must be an audience id', 'realtime.audiences[0].id');
    refuse(canaryFile({ id: 'aud-none' }), 'realtime.audiences[0].id: audience "aud-none" does not exist; create it first with "platform audiences create"', 'realtime.audiences[0].id');
    refuse([...canaryFile(), ...canaryFile()], 'realtime.audiences[1].id: audience "aud-gold" is listed twice', 'realtime.audiences[1].id');
  });

  it('every audience has routes, each an object naming a known variation once', () => {
    refuse(canaryFile({ routes: [] }), 'realtime.audiences[0].routes must list at least one route', 'realtime.audiences[0].routes');
    refuse(canaryFile({ routes: [null] }), 'realtime.audiences[0].routes[0] must be an object with variation_name, weight and shadow', 'realtime.audiences[0].routes[0]');
    refuse(canaryFile({ routes: [{ weight: 100 }] }), 'realtime.audiences[0].routes[0].variation_name must be a string', 'realtime.audiences[0].routes[0].variation_name');
    refuse(
      canaryFile({ routes: [{ variation_name: 'default', weight: 90 }, { variation_name: 'ghost', weight: 10 }] }),
      'realtime.audiences[0].routes[1].variation_name: variation "ghost" does not exist and is not the one being deployed',
      'realtime.audiences[0].routes[1].variation_name',
    );
    refuse(
      canaryFile({ routes: [{ variation_name: 'default', weight: 50 }, { variation_name: 'default', weight: 50 }] }),
      'realtime.audiences[0].routes[1]: variation "default" has two routes in audience "aud-gold"',
      'realtime.audiences[0].routes[1].variation_name',
    );
  });

  it('weights are numbers from 0 to 100 and shadow is a boolean', () => {
    for (const weight of [-1, 100.5, '50', null, Number.NaN]) {
      refuse(
        canaryFile({ routes: [{ variation_name: 'default', weight }] }),
        `realtime.audiences[0].routes[0].weight must be a number from 0 to 100, got ${Number.isNaN(weight) ? 'NaN' : JSON.stringify(weight)}`,
        'realtime.audiences[0].routes[0].weight',
      );
    }
    refuse(canaryFile({ routes: [{ variation_name: 'default', weight: 100, shadow: 'yes' }] }), 'realtime.audiences[0].routes[0].shadow must be true or false', 'realtime.audiences[0].routes[0].shadow');
  });

  it('the non-shadow weights of an audience total exactly 100', () => {
    const routes = (a: number, b: number) => [
      { variation_name: 'default', weight: a },
      { variation_name: 'canary', weight: b },
    ];
    refuse(canaryFile({ routes: routes(80, 10) }), 'realtime.audiences[0].routes: the non-shadow weights of audience "aud-gold" total 90; they must total exactly 100', 'realtime.audiences[0].routes');
    refuse(canaryFile({ routes: routes(90, 10.5) }), 'realtime.audiences[0].routes: the non-shadow weights of audience "aud-gold" total 100.5; they must total exactly 100', 'realtime.audiences[0].routes');
    // A shadow's weight is the share of copies: it does not count towards the 100.
    expect(deploy({ audiences: canaryFile({ routes: [{ variation_name: 'default', weight: 100 }, { variation_name: 'canary', weight: 10, shadow: true }] }) }).traffic.audiences[0]!.routes).toEqual([
      { variation_name: 'default', weight: 100, shadow: false },
      { variation_name: 'canary', weight: 10, shadow: true },
    ]);
  });

  it('at most one shadow route per audience', () => {
    const live: TrafficConfig = { ...LIVE, variations: { default: 'b1', mirror: 'b3' }, instanceTypes: { default: 'cpu', mirror: 'cpu' } };
    const routes = [
      { variation_name: 'default', weight: 100 },
      { variation_name: 'mirror', weight: 5, shadow: true },
      { variation_name: 'canary', weight: 5, shadow: true },
    ];
    expect(refusal(() => deploy({ live, audiences: canaryFile({ routes }) }))).toEqual(
      refused('realtime.audiences[0].routes: audience "aud-gold" has 2 shadow routes; at most one is allowed', 'realtime.audiences[0].routes'),
    );
  });

  it('one fallback, named by at least one audience, that exists or is being deployed', () => {
    refuse(canaryFile({ fallback_variation: 7 }), 'realtime.audiences[0].fallback_variation must be a variation name', 'realtime.audiences[0].fallback_variation');
    refuse(
      canaryFile({ fallback_variation: 'ghost' }),
      'realtime.audiences[0].fallback_variation: variation "ghost" is neither the new variation nor an existing one',
      'realtime.audiences[0].fallback_variation',
    );
    refuse(
      [...canaryFile(), { ...canaryFile()[0], id: 'aud-all', fallback_variation: 'canary' }],
      'realtime.audiences[1].fallback_variation is "canary" but realtime.audiences[0] names "default"; requests that match no audience go to one fallback',
      'realtime.audiences[1].fallback_variation',
    );
    refuse(
      canaryFile({ fallback_variation: undefined }),
      'realtime.audiences: no fallback_variation is named; choose the variation that serves requests matching no audience',
      'realtime.audiences[0].fallback_variation',
    );
    // Others may repeat the one fallback, or leave it out.
    const repeated = [...canaryFile(), { ...canaryFile()[0], id: 'aud-all' }];
    expect(deploy({ audiences: repeated }).traffic.fallbackVariation).toBe('default');
    const omitted = [{ ...canaryFile()[0], fallback_variation: undefined }, { ...canaryFile()[0], id: 'aud-all' }];
    expect(deploy({ audiences: omitted }).traffic.fallbackVariation).toBe('default');
  });

  it('lists every existing variation in a route or as the fallback', () => {
    const onlyCanary = [{ id: 'aud-gold', routes: [{ variation_name: 'canary', weight: 100 }], fallback_variation: 'canary' }];
    expect(refusal(() => deploy({ audiences: onlyCanary }))).toEqual(
      refused('realtime.audiences does not list the existing variation "default"; a deployment file must list every existing variation', 'realtime.audiences'),
    );
    expect(refusal(() => deploy({ live: TWO_LIVE, variationName: 'green', audiences: [{ id: 'aud-gold', routes: [{ variation_name: 'green', weight: 100 }], fallback_variation: 'default' }] }))).toEqual(
      refused('realtime.audiences does not list the existing variations "canary", "mirror"; a deployment file must list every existing variation', 'realtime.audiences'),
    );
  });

  it('a valid file gives the complete traffic that goes live', () => {
    const file = [
      {
        id: 'aud-gold',
        routes: [
          { variation_name: 'default', weight: 25 },
          { variation_name: 'canary', weight: 75, shadow: false },
        ],
      },
      { id: 'aud-all', routes: [{ variation_name: 'default', weight: 100 }, { variation_name: 'canary', weight: 50, shadow: true }], fallback_variation: 'default' },
    ];
    expect(deploy({ audiences: file, batching: { max_wait_micros: 0 }, instanceType: 'cuda' })).toEqual({
      variation: 'canary',
      traffic: {
        variations: { default: 'b1', canary: 'b2' },
        audiences: [
          {
            id: 'aud-gold',
            routes: [
              { variation_name: 'default', weight: 25, shadow: false },
              { variation_name: 'canary', weight: 75, shadow: false },
            ],
          },
          {
            id: 'aud-all',
            routes: [
              { variation_name: 'default', weight: 100, shadow: false },
              { variation_name: 'canary', weight: 50, shadow: true },
            ],
          },
        ],
        fallbackVariation: 'default',
        batching: { canary: { max_wait_micros: 0 } },
        instanceTypes: { default: 'cpu', canary: 'cuda' },
      },
    });
  });
});

describe('undeploy', () => {
  it('the last variation leaves no traffic and no fallback', () => {
    expect(planUndeploy(LIVE, 'default', undefined, audienceExists)).toEqual({ variations: {}, audiences: [], fallbackVariation: null, batching: {}, instanceTypes: {} });
  });

  it('without a file, the fallback and a variation with traffic stay', () => {
    expect(refusal(() => planUndeploy(TWO_LIVE, 'default', undefined, audienceExists))).toEqual(
      refused('variation "default" is the fallback; give the remaining traffic with --from-file', 'variation_name'),
    );
    expect(refusal(() => planUndeploy(TWO_LIVE, 'canary', undefined, audienceExists))).toEqual(
      refused('variation "canary" receives traffic in audience "aud-gold"; give the remaining traffic with --from-file', 'variation_name'),
    );
  });

  it('without a file, a shadow-only variation goes and its routes with it', () => {
    expect(planUndeploy(TWO_LIVE, 'mirror', undefined, audienceExists)).toEqual({
      variations: { default: 'b1', canary: 'b2' },
      audiences: [
        {
          id: 'aud-gold',
          routes: [
            { variation_name: 'default', weight: 90, shadow: false },
            { variation_name: 'canary', weight: 10, shadow: false },
          ],
        },
      ],
      fallbackVariation: 'default',
      batching: { canary: { max_batch_rows: 8 } },
      instanceTypes: { default: 'cpu', canary: 'cuda' },
    });
  });

  it('a file gives the remaining traffic, by the same rules', () => {
    const remaining = [{ id: 'aud-all', routes: [{ variation_name: 'canary', weight: 100 }, { variation_name: 'mirror', weight: 1, shadow: true }], fallback_variation: 'canary' }];
    expect(planUndeploy(TWO_LIVE, 'default', remaining, audienceExists)).toEqual({
      variations: { canary: 'b2', mirror: 'b3' },
      audiences: [
        {
          id: 'aud-all',
          routes: [
            { variation_name: 'canary', weight: 100, shadow: false },
            { variation_name: 'mirror', weight: 1, shadow: true },
          ],
        },
      ],
      fallbackVariation: 'canary',
      batching: { canary: { max_batch_rows: 8 } },
      instanceTypes: { canary: 'cuda', mirror: 'cpu' },
    });
    const stillNamed = [{ id: 'aud-all', routes: [{ variation_name: 'default', weight: 100 }], fallback_variation: 'canary' }];
    expect(refusal(() => planUndeploy(TWO_LIVE, 'default', stillNamed, audienceExists))).toEqual(
      refused('realtime.audiences[0].routes[0].variation_name: variation "default" does not exist and is not the one being deployed', 'realtime.audiences[0].routes[0].variation_name'),
    );
    const forgetsMirror = [{ id: 'aud-all', routes: [{ variation_name: 'canary', weight: 100 }], fallback_variation: 'canary' }];
    expect(refusal(() => planUndeploy(TWO_LIVE, 'default', forgetsMirror, audienceExists))).toEqual(
      refused('realtime.audiences does not list the existing variation "mirror"; a deployment file must list every existing variation', 'realtime.audiences'),
    );
  });
});
