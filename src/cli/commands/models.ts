// platform models create | build | deploy realtime | undeploy | list | get | logs: realtime
// models through the host's management API (set-instance-type is in library.ts).
import fs from 'node:fs';
import { Command } from 'commander';
import { isInstanceType, type InstanceType } from '../../native/surface.js';
import { clientFromEnv, type PlatformClient } from '../http-client.js';
import { CliError, usageError } from '../errors.js';
import { createProgress } from '../progress.js';
import { formatTable, isoTime } from '../table.js';
import { readYamlFile } from '../yaml-file.js';
import { deployDialog } from './deploy-dialog.js';
import { formatModelDetails, type ModelDetailsJson } from './model-details.js';

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
  instance_type: string | null;
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

interface LogJson {
  ts: number;
  variation: string;
  audience_id: string | null;
  shadow: boolean;
  status: number;
  latency_ms: number;
  error: string | null;
}

interface DeployFile {
  model_id?: string;
  build_id?: string;
  /** batching: {max_batch_rows, max_wait_micros}, instance_type: cpu | cuda, for the deployed variation. */
  realtime?: { variation_name?: string; audiences?: unknown; batching?: unknown; instance_type?: string };
}

/** The deploy file's fields, with the type faults a server could not name the file for. */
function deployFile(raw: unknown, file: string, needsIds = true): DeployFile {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw usageError(`${file} must be a YAML mapping with model_id, build_id and realtime`);
  const f = raw as Record<string, unknown>;
  for (const key of needsIds ? ['model_id', 'build_id'] : []) {
    if (f[key] !== undefined && typeof f[key] !== 'string') throw usageError(`${file}: ${key} must be a string`);
  }
  if (f.realtime !== undefined && (typeof f.realtime !== 'object' || f.realtime === null)) throw usageError(`${file}: realtime must be a mapping`);
  const realtime = f.realtime as Record<string, unknown> | undefined;
  if (realtime?.variation_name !== undefined && typeof realtime.variation_name !== 'string') throw usageError(`${file}: realtime.variation_name must be a string`);
  if (realtime?.instance_type !== undefined && !isInstanceType(realtime.instance_type)) throw usageError(`${file}: realtime.instance_type must be cpu or cuda`);
  return f as DeployFile;
}


/** --instance-type, checked; undefined when not given. */
export function parseInstanceType(value: string | undefined): InstanceType | undefined {
  if (value === undefined) return undefined;
  if (!isInstanceType(value)) throw usageError(`--instance-type must be cpu or cuda, got "${value}"`);
  return value;
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
    .description('deploy a build as a realtime variation, from a deployment file or (first build) from flags')
    .option('--from-file <file>', 'deploy.yaml: model_id, build_id, realtime.{variation_name, audiences}')
    .option('--model-id <id>', 'the model (without a file)')
    .option('--build-id <id>', 'the build to deploy (without a file)')
    .option('--variation-name <name>', 'the variation to create or replace; overrides the file\'s')
    .option('--instance-type <type>', 'where the variation runs: cpu (default) or cuda (GPU 0); overrides the file\'s realtime.instance_type')
    .option('--interactive', 'walk through the five steps of the deployment dialog (needs --model-id)')
    .option('--wait', 'follow the deployment until it is live')
    .action(async (opts: { fromFile?: string; modelId?: string; buildId?: string; variationName?: string; instanceType?: string; interactive?: boolean; wait?: boolean }) => {
      let instanceType = parseInstanceType(opts.instanceType);
      if (opts.interactive) {
        if (opts.modelId === undefined) throw usageError('--interactive needs --model-id');
        const client = clientFromEnv();
        const file = await deployDialog(client, opts.modelId);
        if (!file) {
          process.stderr.write('not deployed\n');
          return;
        }
        const dep = await client.request<DeploymentJson>('POST', `/api/v1/models/${encodeURIComponent(file.model_id)}/deployments`, {
          body: {
            build_id: file.build_id,
            variation_name: file.realtime.variation_name,
            ...(file.realtime.audiences.length > 0 ? { audiences: file.realtime.audiences } : {}),
            ...(instanceType !== undefined ? { instance_type: instanceType } : {}),
          },
        });
        process.stdout.write(`${dep.deployment_id}\n`);
        if (opts.wait) await waitForDeployment(client, dep.deployment_id);
        return;
      }
      let modelId = opts.modelId;
      let buildId = opts.buildId;
      let variation = opts.variationName;
      let audiences: unknown;
      let batching: unknown;
      if (opts.fromFile !== undefined) {
        const file = deployFile(readYamlFile(opts.fromFile), opts.fromFile);
        modelId ??= file.model_id;
        buildId ??= file.build_id;
        // Rule 1: the command line's variation name replaces the file's.
        variation ??= file.realtime?.variation_name;
        audiences = file.realtime?.audiences;
        batching = file.realtime?.batching;
        instanceType ??= file.realtime?.instance_type as InstanceType | undefined;
      }
      if (modelId === undefined || buildId === undefined) throw usageError('give --from-file, or --model-id and --build-id');
      const client = clientFromEnv();
      const dep = await client.request<DeploymentJson>('POST', `/api/v1/models/${encodeURIComponent(modelId)}/deployments`, {
        body: {
          build_id: buildId,
          ...(variation !== undefined ? { variation_name: variation } : {}),
          ...(audiences !== undefined ? { audiences } : {}),
          ...(batching !== undefined ? { batching } : {}),
          ...(instanceType !== undefined ? { instance_type: instanceType } : {}),
        },
      });
      process.stdout.write(`${dep.deployment_id}\n`);
      if (opts.wait) await waitForDeployment(client, dep.deployment_id);
    });

  models
    .command('undeploy')
    .description('remove a variation; a file gives the remaining traffic when the variation had some')
    .requiredOption('--model-id <id>', 'the model')
    .requiredOption('--variation-name <name>', 'the variation to remove')
    .option('--from-file <file>', 'remaining.yaml: realtime.audiences for the variations that stay')
    .option('--wait', 'follow the change until it is live')
    .action(async (opts: { modelId: string; variationName: string; fromFile?: string; wait?: boolean }) => {
      const audiences = opts.fromFile === undefined ? undefined : deployFile(readYamlFile(opts.fromFile), opts.fromFile, false).realtime?.audiences;
      const client = clientFromEnv();
      const dep = await client.request<DeploymentJson>('POST', `/api/v1/models/${encodeURIComponent(opts.modelId)}/undeploy`, {
        body: { variation_name: opts.variationName, ...(audiences !== undefined ? { audiences } : {}) },
      });
      process.stdout.write(`${dep.deployment_id}\n`);
      if (opts.wait) await waitForDeployment(client, dep.deployment_id);
    });

  models
    .command('logs')
    .description('recent predict requests: variation, audience, status, latency; bodies of shadow pairs')
    .argument('<model-id>')
    .option('--variation <name>', 'only this variation')
    .option('--shadow', 'only shadow copies')
    .option('--limit <n>', 'how many, newest first', '50')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { variation?: string; shadow?: boolean; limit: string; json?: boolean }) => {
      if (!/^\d+$/.test(opts.limit)) throw usageError('--limit must be a positive integer');
      const query = new URLSearchParams({ limit: opts.limit });
      if (opts.variation) query.set('variation', opts.variation);
      if (opts.shadow) query.set('shadow', 'true');
      const { logs } = await clientFromEnv().request<{ logs: LogJson[] }>('GET', `/api/v1/models/${encodeURIComponent(id)}/logs?${query}`);
      if (opts.json) {
        process.stdout.write(JSON.stringify(logs, null, 2) + '\n');
        return;
      }
      const rows = logs.map((l) => [isoTime(l.ts), l.variation + (l.shadow ? ' (shadow)' : ''), l.audience_id ?? '-', String(l.status), l.latency_ms.toFixed(2), l.error ?? '']);
      process.stdout.write(formatTable(['TIME', 'VARIATION', 'AUDIENCE', 'STATUS', 'LATENCY MS', 'ERROR'], rows));
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
    .option('--json', 'print JSON: {model, live_deployment, deployment_in_progress}')
    .action(async (id: string, opts: { json?: boolean }) => {
      const client = clientFromEnv();
      const info = await client.request<ModelDetailsJson>('GET', `/api/v1/models/${encodeURIComponent(id)}`);
      process.stdout.write(opts.json ? JSON.stringify(info, null, 2) + '\n' : await formatModelDetails(client, info));
    });

  return models;
}
