// `platform models deploy realtime --interactive`: the five steps of SPEC.md's deployment dialog
// (pick a build; name a new variation or pick one to replace; attach variations to audiences with
// percentages; choose the fallback; confirm), with each answer checked as it is typed. The result
// is the same deployment file that --from-file takes, shown as YAML before it is sent.
import { stringify } from 'yaml';
import { variationNameProblem } from '../../models/names.js';
import { CliError } from '../errors.js';
import type { PlatformClient } from '../http-client.js';
import { Prompter, choice } from '../prompt.js';

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
  live_deployment: { traffic: { variations: Record<string, string>; audiences: Array<{ id: string; routes: Route[] }>; fallbackVariation: string | null } } | null;
}
interface Route {
  variation_name: string;
  weight: number;
  shadow: boolean;
}

export interface DeployFile {
  model_id: string;
  build_id: string;
  realtime: { variation_name: string; audiences: Array<{ id: string; routes: Route[]; fallback_variation?: string }> };
}

function percent(answer: string, max: number): { value: number } | { error: string } {
  const n = Number(answer);
  if (answer === '' || !Number.isFinite(n) || n < 0 || n > max) return { error: `enter a percentage from 0 to ${max}` };
  return { value: n };
}

export async function deployDialog(client: PlatformClient, modelId: string, prompt = new Prompter()): Promise<DeployFile | undefined> {
  try {
    const { builds } = await client.request<{ builds: BuildJson[] }>('GET', `/api/v1/models/${encodeURIComponent(modelId)}/builds`);
    if (builds.length === 0) throw new CliError(`model "${modelId}" has no builds; upload one with "platform models build"`);
    const model = await client.request<ModelInfo>('GET', `/api/v1/models/${encodeURIComponent(modelId)}`);
    const existing = Object.keys(model.live_deployment?.traffic.variations ?? {});

    // 1. The build.
    prompt.say(`Step 1 of 5: choose a build of "${modelId}"\n`);
    builds.forEach((b, i) => prompt.say(`  ${i + 1}) ${b.build_id}  ${new Date(b.created_at).toISOString()}  features: ${b.features.map((f) => f.name).join(', ')}\n`));
    const build = builds[await prompt.ask('build> ', (a) => choice(a, builds.length))]!;

    // 2. The variation: a new name, or an existing one to replace.
    prompt.say('Step 2 of 5: name a new variation, or enter an existing one to replace it\n');
    if (existing.length > 0) prompt.say(`  existing: ${existing.join(', ')}\n`);
    const variation = await prompt.ask<string>(`variation${existing.length === 0 ? ' [default]' : ''}> `, (a) => {
      const name = a === '' && existing.length === 0 ? 'default' : a;
      const problem = variationNameProblem(name);
      return problem ? { error: `"${name}" ${problem}` } : { value: name };
    });
    const variations = [...new Set([...existing, variation])];

    // 3. Audiences and their percentages.
    const { audiences } = await client.request<{ audiences: AudienceJson[] }>('GET', '/api/v1/audiences');
    const attached: DeployFile['realtime']['audiences'] = [];
    if (variations.length > 1 || audiences.length > 0) {
      prompt.say('Step 3 of 5: attach variations to audiences (an empty answer ends the list)\n');
      audiences.forEach((a, i) => prompt.say(`  ${i + 1}) ${a.id}  ${a.name}\n`));
      for (;;) {
        const remaining = audiences.filter((a) => !attached.some((x) => x.id === a.id));
        if (remaining.length === 0) break;
        const pick = await prompt.ask<number>('audience (number, or empty to finish)> ', (a) => {
          if (a === '') return { value: -1 };
          const c = choice(a, audiences.length);
          if ('value' in c && attached.some((x) => x.id === audiences[c.value]!.id)) return { error: 'that audience is attached already' };
          return c;
        });
        if (pick === -1) break;
        const audience = audiences[pick]!;
        const routes: Route[] = [];
        let left = 100;
        for (const [i, v] of variations.entries()) {
          const last = i === variations.length - 1;
          const weight = last
            ? await prompt.ask<number>(`  ${v} % of "${audience.name}" (must be ${left})> `, (a) => (Number(a) === left ? { value: left } : { error: `the weights must total 100: enter ${left}` }))
            : await prompt.ask<number>(`  ${v} % of "${audience.name}" (0-${left})> `, (a) => percent(a, left));
          left -= weight;
          routes.push({ variation_name: v, weight, shadow: false });
        }
        const shadow = await prompt.ask<string>(`  shadow variation for "${audience.name}" (name, or empty for none)> `, (a) =>
          a === '' || variations.includes(a) ? { value: a } : { error: `enter one of ${variations.join(', ')}, or nothing` },
        );
        if (shadow !== '') {
          const share = await prompt.ask(`  % of "${audience.name}" copied to ${shadow}> `, (a) => percent(a, 100));
          routes.splice(routes.findIndex((r) => r.variation_name === shadow), 1);
          routes.push({ variation_name: shadow, weight: share, shadow: true });
          const total = routes.filter((r) => !r.shadow).reduce((s, r) => s + r.weight, 0);
          if (total !== 100) throw new CliError(`a shadow variation takes no live traffic: the other routes of "${audience.name}" total ${total}, not 100; start again`);
        }
        attached.push({ id: audience.id, routes });
      }
    }

    // 4. The fallback.
    prompt.say('Step 4 of 5: choose the fallback variation (requests that match no audience)\n');
    variations.forEach((v, i) => prompt.say(`  ${i + 1}) ${v}\n`));
    const fallback = variations[await prompt.ask('fallback> ', (a) => choice(a, variations.length))]!;
    if (attached.length > 0) attached[0]!.fallback_variation = fallback;

    // 5. Confirm.
    const file: DeployFile = { model_id: modelId, build_id: build.build_id, realtime: { variation_name: variation, audiences: attached } };
    prompt.say(`Step 5 of 5: deploy this?\n---\n${stringify(file)}---\n`);
    const yes = await prompt.ask<boolean>('deploy? [y/N]> ', (a) => ({ value: /^y(es)?$/i.test(a) }));
    if (!yes) return undefined;
    if (attached.length === 0 && existing.length > 0 && !existing.includes(variation)) {
      throw new CliError('a new variation next to existing ones needs at least one audience to route traffic to it');
    }
    if (attached.length === 0 && fallback !== variation && existing.length === 0) {
      throw new CliError('the first variation is the fallback');
    }
    return file;
  } finally {
    prompt.close();
  }
}
