// platform library list | deploy | deployments | undeploy, and platform models set-instance-type (library and
// realtime models alike: the model's kind picks the route).
import type { Command } from 'commander';
import { clientFromEnv, type PlatformClient } from '../http-client.js';
import { isInstanceType } from '../../native/surface.js';
import { CliError, usageError } from '../errors.js';
import { createProgress } from '../progress.js';
import { formatTable } from '../table.js';
import { waitForDeployment } from './models.js';
import { SPECULATIVE_SETTING } from '../../llm/library/speculative.js';

interface CatalogJson {
  models: Array<{ name: string; file: string; size_bytes: number; architecture: string; parameters: number; quantization: string; context_length: number | null; license: string | null; license_link: string | null; serves?: 'chat' | 'embeddings'; unsupported?: string | null }>;
  problems: Array<{ file: string; error: string }>;
}

/** A library deployment as /api/v1/library/deployments answers it (the fields the CLI reads). */
export interface LibraryDeploymentJson {
  model_id: string;
  /** The deployment's name: unique, immutable; by default the file name without .gguf. */
  name: string;
  file: string;
  /** The file's general.name (null when it has none; absent from older hosts). */
  general_name?: string | null;
  license: string | null;
  instance_type: string;
  threads: number | null;
  /** Speculative decoding: "ngram:<k>", or null (absent from older hosts). */
  speculative?: string | null;
  /** The draft model of "draft:<k>" (absent from older hosts). */
  draft_model?: string | null;
  /** On how many replicas it runs; null: every replica. */
  placement: number | null;
  /** GET of one deployment: of the replicas it is placed on, how many have it loaded. */
  replicas?: { applied: number; total: number };
  pending_instance_type: string | null;
  last_instance_error: string | null;
  status: string;
  reason: string | null;
}

const STEPS: Record<string, number> = { PENDING: 0.1, DEPLOYING: 0.5, LIVE: 1, FAILED: 1 };

function human(n: number, unit: string, base = 1000): string {
  const prefixes = ['', 'K', 'M', 'G', 'T'];
  let i = 0;
  while (n >= base && i < prefixes.length - 1) {
    n /= base;
    i++;
  }
  return `${n.toFixed(n < 10 && i > 0 ? 1 : 0)}${prefixes[i]}${unit}`;
}

function positive(option: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw usageError(`${option} must be a positive integer`);
  return Number(value);
}

const threads = (value: string | undefined) => positive('--threads', value);

async function follow(client: PlatformClient, modelId: string, done: (d: LibraryDeploymentJson) => boolean): Promise<LibraryDeploymentJson> {
  const progress = createProgress();
  for (;;) {
    const dep = await client.request<LibraryDeploymentJson>('GET', `/api/v1/library/deployments/${encodeURIComponent(modelId)}`);
    const label = `${dep.model_id} (${dep.name}): ${dep.status}${dep.pending_instance_type ? `, switching to ${dep.pending_instance_type}` : ''}`;
    if (dep.status === 'FAILED') {
      progress.done(label);
      throw new CliError(`${dep.model_id} failed to load: ${dep.reason}`);
    }
    if (dep.last_instance_error) {
      progress.done(label);
      throw new CliError(`the instance change of ${dep.model_id} failed: ${dep.last_instance_error}`);
    }
    if (done(dep)) {
      progress.done(label);
      return dep;
    }
    progress.update(STEPS[dep.status] ?? 0, label);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export function registerLibraryCommands(program: Command, models: Command): void {
  const library = program.command('library').description('open-source LLMs: the GGUF files in MODELS_DIR, deployed behind the OpenAI API');

  library
    .command('list')
    .description('the GGUF files in MODELS_DIR with name, size, architecture, parameters, quantization, context, licence and what they serve (chat or embeddings)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const res = await clientFromEnv().request<CatalogJson>('GET', '/api/v1/library');
      if (opts.json) {
        process.stdout.write(JSON.stringify(res, null, 2) + '\n');
        return;
      }
      const rows = res.models.map((m) => [
        m.name,
        m.file,
        human(m.size_bytes, 'B', 1024),
        m.architecture,
        human(m.parameters, ''),
        m.quantization,
        m.context_length === null ? '-' : String(m.context_length),
        [m.license, m.license_link].filter(Boolean).join(' ') || '-',
        m.unsupported ? 'cannot load (below)' : (m.serves ?? 'chat'),
      ]);
      process.stdout.write(formatTable(['NAME', 'FILE', 'SIZE', 'ARCH', 'PARAMS', 'QUANT', 'CONTEXT', 'LICENCE', 'SERVES'], rows));
      // Files the engine cannot load, and why, before anyone deploys them.
      for (const m of res.models) if (m.unsupported) process.stdout.write(`cannot load ${m.file}: ${m.unsupported}\n`);
      for (const p of res.problems) process.stderr.write(`skipped ${p.file}: ${p.error}\n`);
    });

  library
    .command('deploy')
    .description('load a library model under a model id')
    .argument('<name-or-file>', 'a file (or a name no other file shares) from "platform library list"')
    .requiredOption('--model-id <id>', 'the model id clients put in URLs and in the "model" field')
    .option('--name <name>', 'the deployment name, unique and immutable (default: the file name without .gguf)')
    .option('--instance-type <type>', 'cpu or cuda', 'cpu')
    .option('--threads <n>', 'CPU threads (default: all cores)')
    .option('--replicas <n>', 'run on this many replicas of the host (default: every replica); the others forward its requests')
    .option('--speculative <method:k>', 'speculative decoding: ngram:<k> verifies up to k tokens drafted from the request\'s own text per step, draft:<k> up to k drafted by --draft-model (k 1-16)')
    .option('--draft-model <file>', 'a smaller GGUF of MODELS_DIR with the same vocabulary that drafts (--speculative draft:4 unless given)')
    .option('--wait', 'follow the load until the model is live')
    .action(async (file: string, opts: { modelId: string; name?: string; instanceType: string; threads?: string; replicas?: string; speculative?: string; draftModel?: string; wait?: boolean }) => {
      if (!isInstanceType(opts.instanceType)) throw usageError('--instance-type must be cpu or cuda');
      if (opts.name !== undefined && opts.name.trim() === '') throw usageError('--name must not be empty');
      const client = clientFromEnv();
      const n = threads(opts.threads);
      const replicas = positive('--replicas', opts.replicas);
      if (opts.speculative !== undefined && !SPECULATIVE_SETTING.test(opts.speculative)) {
        throw usageError('--speculative must be ngram:<k> (prompt lookup) or draft:<k> (with --draft-model), k from 1 to 16');
      }
      const dep = await client.request<LibraryDeploymentJson>('POST', '/api/v1/library/deployments', {
        body: {
          file,
          ...(opts.name !== undefined ? { name: opts.name } : {}),
          model_id: opts.modelId,
          instance_type: opts.instanceType,
          ...(n !== undefined ? { threads: n } : {}),
          ...(replicas !== undefined ? { replicas } : {}),
          ...(opts.speculative !== undefined ? { speculative: opts.speculative } : {}),
          ...(opts.draftModel !== undefined ? { draft_model: opts.draftModel } : {}),
        },
      });
      process.stdout.write(`${dep.model_id}\n`);
      if (opts.wait) await follow(client, dep.model_id, (d) => d.status === 'LIVE');
    });

  library
    .command('deployments')
    .description('the library deployments: model id, name, file and its general.name, instance and status')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const res = await clientFromEnv().request<{ deployments: LibraryDeploymentJson[] }>('GET', '/api/v1/library/deployments');
      if (opts.json) {
        process.stdout.write(JSON.stringify(res, null, 2) + '\n');
        return;
      }
      const rows = res.deployments.map((d) => [
        d.model_id,
        d.name,
        d.file,
        d.general_name ?? '-',
        `${d.instance_type}${d.threads !== null ? `/${d.threads}` : ''}${d.speculative ? `, ${d.speculative}${d.draft_model ? ` (${d.draft_model})` : ''}` : ''}`,
        d.status + (d.reason ? `: ${d.reason}` : ''),
      ]);
      process.stdout.write(formatTable(['MODEL ID', 'NAME', 'FILE', 'GENERAL NAME', 'INSTANCE', 'STATUS'], rows));
    });

  library
    .command('undeploy')
    .description('unload a library model and free its memory')
    .argument('<model-id>')
    .action(async (id: string) => {
      await clientFromEnv().request('DELETE', `/api/v1/library/deployments/${encodeURIComponent(id)}`);
      process.stdout.write(`undeployed ${id}\n`);
    });

  models
    .command('set-instance-type')
    .description('move a live model to another instance type; traffic switches when the new one is ready')
    .argument('<model-id>')
    .argument('<type>', 'cpu or cuda')
    .option('--threads <n>', 'CPU threads of the new instance (library models only)')
    .option('--wait', 'follow the change until traffic has switched')
    .action(async (id: string, type: string, opts: { threads?: string; wait?: boolean }) => {
      if (!isInstanceType(type)) throw usageError('the instance type must be cpu or cuda');
      const client = clientFromEnv();
      const n = threads(opts.threads);
      const { model } = await client.request<{ model: { kind: string } }>('GET', `/api/v1/models/${encodeURIComponent(id)}`);
      if (model.kind === 'realtime') {
        if (n !== undefined) throw usageError(`--threads applies to library models only; "${id}" is a realtime model`);
        // A deployment of the live traffic with every variation on the new type.
        const dep = await client.request<{ deployment_id: string }>('PUT', `/api/v1/models/${encodeURIComponent(id)}/instance-type`, { body: { instance_type: type } });
        process.stdout.write(`${dep.deployment_id}\n`);
        if (opts.wait) await waitForDeployment(client, dep.deployment_id);
        return;
      }
      await client.request('PUT', `/api/v1/library/deployments/${encodeURIComponent(id)}/instance-type`, { body: { instance_type: type, ...(n !== undefined ? { threads: n } : {}) } });
      if (opts.wait) await follow(client, id, (d) => d.pending_instance_type === null && d.instance_type === type);
      process.stdout.write(`${id}: ${type}\n`);
    });
}
