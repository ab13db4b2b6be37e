// `platform models deploy realtime --interactive`: the five steps of SPEC.md's deployment dialog
// (pick a build; name a new variation or pick one to replace; attach variations to audiences with
// percentages; choose the fallback; confirm). Every answer is checked as it is typed: a mistake is
// explained and the same question asked again, so that one typo never loses the answers before
// it; only the end of input (Ctrl-D) or a model that cannot be deployed this way ends the dialog.
// The result is the same deployment file that --from-file takes, shown as YAML before it is sent.
import { stringify } from 'yaml';
import { variationNameProblem } from '../../models/names.js';
import type { RouteConfig } from '../../realtime/traffic.js';
import { CliError } from '../errors.js';
import type { PlatformClient } from '../http-client.js';
import { Prompter, choice, percentage, yesNo, type Answer } from '../prompt.js';

interface BuildJson {
  build_id: string;
  created_at: number;
  features: Array<{ name: string }>;
}
interface AudienceJson {
  id: string;
  name: string;
}
interface ModelInfo {
  live_deployment: { traffic: { variations: Record<string, string>; audiences: Array<{ id: string; routes: RouteConfig[] }>; fallbackVariation: string | null } } | null;
}

export interface DeployFile {
  model_id: string;
  build_id: string;
  realtime: { variation_name: string; audiences: Array<{ id: string; routes: RouteConfig[]; fallback_variation?: string }> };
}

/** A listed item picked by its number or by its id. */
function pick<T>(answer: string, items: T[], idOf: (item: T) => string, what: string): Answer<number> {
  const byId = items.findIndex((item) => idOf(item) === answer);
  if (byId >= 0) return { value: byId };
  if (/^\d+$/.test(answer) || answer === '') return choice(answer, items.length);
  return { error: `there is no ${what} "${answer}": enter a number from 1 to ${items.length}, or an id from the list` };
}

export async function deployDialog(client: PlatformClient, modelId: string, prompt = new Prompter()): Promise<DeployFile | undefined> {
  try {
    const { builds } = await client.request<{ builds: BuildJson[] }>('GET', `/api/v1/models/${encodeURIComponent(modelId)}/builds`);
    if (builds.length === 0) throw new CliError(`model "${modelId}" has no builds; upload one with "platform models build"`);
    const model = await client.request<ModelInfo>('GET', `/api/v1/models/${encodeURIComponent(modelId)}`);
    const live = model.live_deployment?.traffic;
    const existing = Object.keys(live?.variations ?? {});

    // 1. The build.
    prompt.say(`Step 1 of 5: choose a build of "${modelId}"\n`);
    builds.forEach((b, i) => prompt.say(`  ${i + 1}) ${b.build_id}  ${new Date(b.created_at).toISOString()}  features: ${b.features.map((f) => f.name).join(', ')}\n`));
    const build = builds[await prompt.ask('build (number or build id)> ', (a) => pick(a, builds, (b) => b.build_id, 'build'))]!;

    // 2. The variation: a new name, or an existing one to replace.
    prompt.say('Step 2 of 5: name a new variation, or enter an existing one to replace it\n');
    if (existing.length > 0) prompt.say(`  existing: ${existing.join(', ')}\n`);
    const variation = await prompt.ask<string>(`variation${existing.length === 0 ? ' [default]' : ''}> `, (a) => {
      const name = a === '' && existing.length === 0 ? 'default' : a;
      const problem = variationNameProblem(name);
      return problem ? { error: `"${name}" ${problem}` } : { value: name };
    });
    const variations = [...new Set([...existing, variation])];
    // A new variation next to live ones takes traffic only through an audience's routes.
    const needsAudience = existing.length > 0 && !existing.includes(variation);

    // 3. Audiences and their percentages.
    const { audiences } = await client.request<{ audiences: AudienceJson[] }>('GET', '/api/v1/audiences');
    if (needsAudience && audiences.length === 0) {
      throw new CliError(`the new variation "${variation}" needs an audience to route traffic to it, and there is none; create one with "platform audiences create --from-file audience.yaml", then run the dialog again`);
    }
    const attached: DeployFile['realtime']['audiences'] = [];
    if (variations.length > 1 || audiences.length > 0) {
      prompt.say('Step 3 of 5: attach variations to audiences (an empty answer ends the list)\n');
      audiences.forEach((a, i) => prompt.say(`  ${i + 1}) ${a.id}  ${a.name}\n`));
      for (;;) {
        const remaining = audiences.filter((a) => !attached.some((x) => x.id === a.id));
        if (remaining.length === 0) break;
        const index = await prompt.ask<number>('audience (number or id, empty to finish)> ', (a) => {
          if (a === '') {
            if (needsAudience && attached.length === 0) return { error: `"${variation}" is new next to ${existing.join(', ')}: attach at least one audience to route traffic to it` };
            return { value: -1 };
          }
          const c = pick(a, audiences, (x) => x.id, 'audience');
          if ('value' in c && attached.some((x) => x.id === audiences[c.value]!.id)) return { error: 'that audience is attached already: choose another, or enter nothing to finish' };
          return c;
        });
        if (index === -1) break;
        attached.push(await audienceRoutes(prompt, audiences[index]!, variations));
      }
    }

    // 4. The fallback.
    let fallback: string;
    if (attached.length === 0 && existing.includes(variation)) {
      // No audiences sent: the new build replaces the variation's and the live routes stay.
      fallback = live?.fallbackVariation ?? variation;
      prompt.say(`Step 4 of 5: the live routes stay as they are; the fallback stays "${fallback}"\n`);
    } else if (variations.length === 1) {
      fallback = variation;
      prompt.say(`Step 4 of 5: the fallback is "${fallback}", the only variation\n`);
    } else {
      prompt.say('Step 4 of 5: choose the fallback variation (requests that match no audience)\n');
      variations.forEach((v, i) => prompt.say(`  ${i + 1}) ${v}\n`));
      fallback = variations[await prompt.ask('fallback (number or name)> ', (a) => pick(a, variations, (v) => v, 'variation'))]!;
    }
    if (attached.length > 0) attached[0]!.fallback_variation = fallback;

    // 5. Confirm.
    const file: DeployFile = { model_id: modelId, build_id: build.build_id, realtime: { variation_name: variation, audiences: attached } };
    prompt.say(`Step 5 of 5: deploy this?\n---\n${stringify(file)}---\n`);
    return (await prompt.ask<boolean>('deploy? [y/N]> ', (a) => yesNo(a, false))) ? file : undefined;
  } finally {
    prompt.close();
  }
}

/** One audience's routes: a percentage per variation (totalling 100), then an optional shadow. */
async function audienceRoutes(prompt: Prompter, audience: AudienceJson, variations: string[]): Promise<DeployFile['realtime']['audiences'][number]> {
  const routes: RouteConfig[] = [];
  let left = 100;
  for (const [i, v] of variations.entries()) {
    const last = i === variations.length - 1;
    const weight = last
      ? await prompt.ask<number>(`  ${v} % of "${audience.name}" (must be ${left}, Enter accepts)> `, (a) => {
          const p = percentage(a === '' ? String(left) : a, 100);
          return 'value' in p && p.value !== left ? { error: `the weights must total 100: enter ${left}` } : p;
        })
      : await prompt.ask<number>(`  ${v} % of "${audience.name}" (0-${left})> `, (a) => percentage(a, left));
    // Rounded so that 33.3 then 66.7 reads as 66.7, not 66.69999999999999.
    left = Math.round((left - weight) * 1e6) / 1e6;
    routes.push({ variation_name: v, weight, shadow: false });
  }
  // A shadow gets copies, never live traffic: only a variation with 0 % here can be one.
  const idle = routes.filter((r) => r.weight === 0).map((r) => r.variation_name);
  if (idle.length === 0) {
    prompt.say(`  (no shadow: every variation takes live traffic in "${audience.name}"; a variation given 0 % can be its shadow)\n`);
    return { id: audience.id, routes };
  }
  const shadow = await prompt.ask<string>(`  shadow variation for "${audience.name}" (${idle.join(', ')}; empty for none)> `, (a) => {
    if (a === '' || idle.includes(a)) return { value: a };
    if (variations.includes(a)) return { error: `"${a}" takes live traffic in "${audience.name}", so it cannot be its shadow: enter one of ${idle.join(', ')}, or nothing` };
    return { error: `there is no variation "${a}": enter one of ${idle.join(', ')}, or nothing` };
  });
  if (shadow === '') return { id: audience.id, routes };
  const share = await prompt.ask(`  % of "${audience.name}" copied to ${shadow}> `, (a) => percentage(a, 100));
  const kept = routes.filter((r) => r.variation_name !== shadow);
  return { id: audience.id, routes: [...kept, { variation_name: shadow, weight: share, shadow: true }] };
}
