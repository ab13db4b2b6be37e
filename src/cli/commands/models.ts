// platform models create | build | deploy realtime | list | get: realtime models through the
// host's management API.
import fs from 'node:fs';
import { Command } from 'commander';
import { clientFromEnv, type PlatformClient } from '../http-client.js';
import { CliError, usageError } from '../errors.js';
import { createProgress } from '../progress.js';
import { formatTable, isoTime } from '../table.js';

interface ModelJson {
  model_id: string;
  project: string;
  description: string;
  kind: string;
  created_at: number;
}

interface DeploymentJson {
  deployment_id: string;
  model_id: string;
  status: string;
  reason: string | null;
  variation_name: string;
  build_id: string;
}

const STEPS: Record<string, number> = { PENDING: 0.1, DEPLOYING: 0.5, LIVE: 1, FAILED: 1, SUPERSEDED: 1 };

/** Follows a deployment until it is LIVE (resolves) or FAILED (throws). */
export async function waitForDeployment(client: PlatformClient, id: string, pollMs = 200): Promise<DeploymentJson> {
  const progress = createProgress();
  for (;;) {
    const dep = await client.request<DeploymentJson>('GET', `/api/v1/deployments/${encodeURIComponent(id)}`);
    const label = `deployment ${dep.deployment_id} (${dep.model_id}/${dep.variation_name}): ${dep.status}`;
    if (dep.status === 'LIVE') {
      progress.done(label);
      return dep;
    }
    if (dep.status === 'FAILED' || dep.status === 'SUPERSEDED') {
      progress.done(label);
      throw new CliError(`deployment ${dep.deployment_id} ${dep.status}${dep.reason ? `: ${dep.reason}` : ''}`);
    }
    progress.update(STEPS[dep.status] ?? 0, label);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

function splitNames(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw usageError(`${flag} has an empty name; give comma-separated names`);
  return names.join(',');
}

export function registerModelCommands(program: Command): Command {
  const models = program.command('models').description('realtime models: builds, deployments, predict traffic');

  models
    .command('create')
    .description('create a realtime model')
    .requiredOption('--model-id <id>', 'the model id (lowercase letters, digits, "_" and "-")')
    .option('--project <project>', 'the project it belongs to', 'default')
    .option('--description <text>', 'a description')
    .action(async (opts: { modelId: string; project: string; description?: string }) => {
      const model = await clientFromEnv().request<ModelJson>('POST', '/api/v1/models', {
        body: { model_id: opts.modelId, project: opts.project, ...(opts.description !== undefined ? { description: opts.description } : {}) },
      });
      process.stdout.write(`${model.model_id}\n`);
    });

  models
    .command('build')
    .description('upload an ONNX file as a new build and print the build id')
    .requiredOption('--model-id <id>', 'the model')
    .requiredOption('--from-file <file>', 'the ONNX file')
    .option('--feature-names <names>', 'comma-separated feature names, in the model\'s input order')
    .option('--output-names <names>', 'comma-separated names for the model\'s outputs')
    .action(async (opts: { modelId: string; fromFile: string; featureNames?: string; outputNames?: string }) => {
      let bytes: Buffer;
      try {
        bytes = fs.readFileSync(opts.fromFile);
      } catch (err) {
        throw new CliError(`cannot read ${opts.fromFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const query = new URLSearchParams();
      const features = splitNames(opts.featureNames, '--feature-names');
      const outputs = splitNames(opts.outputNames, '--output-names');
      if (features !== undefined) query.set('feature_names', features);
      if (outputs !== undefined) query.set('output_names', outputs);
      const qs = query.size > 0 ? `?${query}` : '';
      const build = await clientFromEnv().request<{ build_id: string; features: Array<{ name: string }> }>(
        'POST',
        `/api/v1/models/${encodeURIComponent(opts.modelId)}/builds${qs}`,
        { bytes },
      );
      process.stdout.write(`${build.build_id}\n`);
      process.stderr.write(`features: ${build.features.map((f) => f.name).join(', ')}\n`);
    });

  const deploy = models.command('deploy').description('deploy a build');
  deploy
    .command('realtime')
    .description('deploy a build as a realtime variation (the first build becomes "default" with all traffic)')
    .option('--model-id <id>', 'the model')
    .option('--build-id <id>', 'the build to deploy')
    .option('--variation-name <name>', 'the variation to create or replace')
    .option('--wait', 'follow the deployment until it is live')
    .action(async (opts: { modelId?: string; buildId?: string; variationName?: string; wait?: boolean }) => {
      if (opts.modelId === undefined || opts.buildId === undefined) throw usageError('give --model-id and --build-id');
      const client = clientFromEnv();
      const dep = await client.request<DeploymentJson>('POST', `/api/v1/models/${encodeURIComponent(opts.modelId)}/deployments`, {
        body: { build_id: opts.buildId, ...(opts.variationName !== undefined ? { variation_name: opts.variationName } : {}) },
      });
      process.stdout.write(`${dep.deployment_id}\n`);
      if (opts.wait) await waitForDeployment(client, dep.deployment_id);
    });

  models
    .command('list')
    .description('list models')
    .option('--project <project>', 'only this project')
    .option('--json', 'print JSON')
    .action(async (opts: { project?: string; json?: boolean }) => {
      const qs = opts.project ? `?project=${encodeURIComponent(opts.project)}` : '';
      const { models: list } = await clientFromEnv().request<{ models: ModelJson[] }>('GET', `/api/v1/models${qs}`);
      if (opts.json) {
        process.stdout.write(JSON.stringify(list, null, 2) + '\n');
        return;
      }
      process.stdout.write(formatTable(['MODEL', 'PROJECT', 'KIND', 'CREATED', 'DESCRIPTION'], list.map((m) => [m.model_id, m.project, m.kind, isoTime(m.created_at), m.description])));
    });

  models
    .command('get')
    .description('show a model, its live deployment and any deployment in progress')
    .argument('<model-id>')
    .action(async (id: string) => {
      const info = await clientFromEnv().request<unknown>('GET', `/api/v1/models/${encodeURIComponent(id)}`);
      process.stdout.write(JSON.stringify(info, null, 2) + '\n');
    });

  return models;
}
