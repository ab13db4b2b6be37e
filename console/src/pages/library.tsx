// Library: the GGUF catalogue of the host's MODELS_DIR (GET /api/v1/library) with size,
// quantization and licence; deploying a file as a library model (POST /api/v1/library/deployments,
// 202) with a progress bar that follows PENDING -> DEPLOYING -> LIVE or FAILED with the reason;
// and moving a live model to another instance type (PUT .../instance-type, 202), with the host's
// refusal beside the field.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { Catalog, CatalogEntry, LibraryDeployment } from '../types';
import { appliedOn, bytes, Cmd, Empty, ErrorNote, fieldError, PageHeader, plural, Status, useLoad, when } from '../ui';
import './library.css';

interface LibraryData {
  catalog: Catalog;
  deployments: LibraryDeployment[];
}

async function loadLibrary(signal: AbortSignal): Promise<LibraryData> {
  const [catalog, { deployments }] = await Promise.all([
    api<Catalog>('GET', '/api/v1/library', { signal }),
    api<{ deployments: LibraryDeployment[] }>('GET', '/api/v1/library/deployments', { signal }),
  ]);
  // One GET each for "applied on n/m replicas", which only the single-deployment answer has.
  const detailed = await Promise.all(
    deployments.map((d) => api<LibraryDeployment>('GET', `/api/v1/library/deployments/${seg(d.model_id)}`, { signal }).catch(() => d)),
  );
  return { catalog, deployments: detailed };
}

const BUSY = new Set(['PENDING', 'DEPLOYING']);
const STEPS = ['PENDING', 'DEPLOYING', 'LIVE'] as const;

/** "TinyLlama-1.1B.Q4_K_M" -> "tinyllama-1-1b-q4_k_m": a model id the host accepts. */
export function suggestModelId(name: string): string {
  const id = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .replace(/-+$/, '')
    .slice(0, 64);
  return id || 'llm';
}

/** 1_100_048_384 -> "1.1 B" parameters. */
function paramCount(n: number): string {
  if (n >= 1e9) return `${Number((n / 1e9).toPrecision(3))} B`;
  if (n >= 1e6) return `${Number((n / 1e6).toPrecision(3))} M`;
  if (n >= 1e3) return `${Number((n / 1e3).toPrecision(3))} K`;
  return String(n);
}

export function LibraryPage() {
  const { data, error, loading, reload } = useLoad(loadLibrary, []);
  const [chosen, setChosen] = useState<CatalogEntry | undefined>(undefined);
  // The deployments made from this page: their progress bar stays once they are LIVE.
  const [followed, setFollowed] = useState<string[]>([]);
  const following = data?.deployments.some((d) => BUSY.has(d.status) || d.pending_instance_type !== null) ?? false;
  useEffect(() => {
    if (!following) return;
    const timer = setInterval(reload, 1000);
    return () => clearInterval(timer);
  }, [following, reload]);

  const deployedAs = (file: string) => data?.deployments.filter((d) => d.file === file).map((d) => d.model_id) ?? [];
  const catalog = data?.catalog;
  return (
    <section aria-labelledby="library-title" class="library">
      <PageHeader title="Library">
        <button type="button" class="secondary" onClick={reload} aria-busy={loading}>
          Refresh
        </button>
      </PageHeader>
      <p class="lead">
        The GGUF files in the host's <code>MODELS_DIR</code>. Deploy one as a library model to chat with it through the OpenAI-compatible API (
        <code>/v1/chat/completions</code>) or in the <a href="#/playground">Playground</a>.
      </p>
      <ErrorNote error={error} />
      {catalog && catalog.models.length === 0 ? (
        <Empty title="No GGUF files in MODELS_DIR.">
          <p>
            Put GGUF files in the host's <code>MODELS_DIR</code> (<code>./models</code> unless set otherwise), for example TinyLlama's{' '}
            <code>tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf</code>, then press Refresh:
          </p>
          <Cmd>cp ~/Downloads/tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf models/</Cmd>
          <p>Architectures llama (Llama 2/3, TinyLlama, Mistral) and qwen2 load; Q4_K_M and Q8_0 files among others.</p>
        </Empty>
      ) : null}
      {catalog && catalog.models.length > 0 ? (
        <div class="table-wrap">
          <table class="stack catalogue">
            <caption>GGUF catalogue ({plural(catalog.models.length, 'file')})</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Size</th>
                <th scope="col">Quantization</th>
                <th scope="col">Architecture</th>
                <th scope="col">Parameters</th>
                <th scope="col">Context</th>
                <th scope="col">Licence</th>
                <th scope="col">Deployed as</th>
                <th scope="col">
                  <span class="visually-hidden">Action</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {catalog.models.map((m) => {
                const as = deployedAs(m.file);
                return (
                  <tr key={m.file}>
                    <th scope="row">
                      {m.name}
                      <span class="sub mono">{m.file}</span>
                    </th>
                    <td data-label="Size" class="num">
                      {bytes(m.size_bytes)}
                    </td>
                    <td data-label="Quantization">
                      <code>{m.quantization}</code>
                    </td>
                    <td data-label="Architecture">
                      {m.architecture}
                      {m.serves === 'embeddings' ? <span class="sub">embeddings</span> : null}
                    </td>
                    <td data-label="Parameters" class="num">
                      {paramCount(m.parameters)}
                    </td>
                    <td data-label="Context" class="num">
                      {m.context_length === null ? 'unknown' : `${m.context_length} tokens`}
                    </td>
                    <td data-label="Licence">
                      <License name={m.license} link={m.license_link} />
                    </td>
                    <td data-label="Deployed as">{as.length > 0 ? as.join(', ') : <span class="hint">not deployed</span>}</td>
                    <td class="action">
                      {m.unsupported !== null ? (
                        <span class="hint">cannot load (below)</span>
                      ) : (
                        <button type="button" class="secondary" aria-label={`Deploy ${m.name}`} onClick={() => setChosen(m)}>
                          Deploy…
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
      {catalog && catalog.models.some((m) => m.unsupported !== null) ? (
        <div class="problems">
          <h2>Files the engine cannot load</h2>
          <ul>
            {catalog.models
              .filter((m) => m.unsupported !== null)
              .map((m) => (
                <li key={m.file}>
                  <code>{m.file}</code>: <span class="reason">{m.unsupported}</span>
                </li>
              ))}
          </ul>
        </div>
      ) : null}
      {catalog && catalog.problems.length > 0 ? (
        <div class="problems">
          <h2>Files that could not be read</h2>
          <ul>
            {catalog.problems.map((p) => (
              <li key={p.file}>
                <code>{p.file}</code>: <span class="reason">{p.error}</span>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {chosen ? (
        <DeployForm
          key={chosen.file}
          entry={chosen}
          taken={data?.deployments.map((d) => d.model_id) ?? []}
          onCancel={() => setChosen(undefined)}
          onDeployed={(dep) => {
            setChosen(undefined);
            setFollowed((f) => [...f.filter((id) => id !== dep.model_id), dep.model_id]);
            reload();
          }}
        />
      ) : null}
      <h2 id="deployed-title">Deployed library models</h2>
      {data && data.deployments.length === 0 ? (
        <p class="hint">
          None yet.
          {catalog && catalog.models.length > 0 ? (
            <>
              {' '}
              Press <strong>Deploy…</strong> on a file above, or run <code>platform library deploy &lt;file&gt; --model-id &lt;id&gt; --wait</code>.
            </>
          ) : null}
        </p>
      ) : null}
      {data && data.deployments.length > 0 ? (
        <ul class="cards" aria-labelledby="deployed-title">
          {data.deployments.map((d) => (
            <DeploymentCard key={d.model_id} dep={d} followed={followed.includes(d.model_id)} onChanged={reload} />
          ))}
        </ul>
      ) : null}
    </section>
  );
}

function License({ name, link }: { name: string | null; link: string | null }) {
  if (link) {
    return (
      <a href={link} target="_blank" rel="noopener noreferrer">
        {name ?? 'licence'}
        <span class="visually-hidden"> (opens in a new tab)</span>
      </a>
    );
  }
  return name ? <span>{name}</span> : <span class="hint">not stated in the file</span>;
}

function DeployForm({
  entry,
  taken,
  onCancel,
  onDeployed,
}: {
  entry: CatalogEntry;
  taken: string[];
  onCancel: () => void;
  onDeployed: (dep: LibraryDeployment) => void;
}) {
  const [modelId, setModelId] = useState(() => suggestModelId(entry.name));
  const [instanceType, setInstanceType] = useState('cpu');
  const [threads, setThreads] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const first = useRef<HTMLInputElement>(null);
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    form.current?.scrollIntoView({ block: 'nearest' });
    first.current?.focus();
  }, []);
  const idError = fieldError(error, 'model_id', 'name');
  const typeError = fieldError(error, 'instance_type');
  const threadsError = fieldError(error, 'threads');
  const other = error !== undefined && !idError && !typeError && !threadsError ? error : undefined;

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: Record<string, unknown> = { name: entry.file, model_id: modelId.trim(), instance_type: instanceType };
      if (threads.trim() !== '') body.threads = Number(threads);
      onDeployed(await api<LibraryDeployment>('POST', '/api/v1/library/deployments', { json: body }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="card form deploy-form" ref={form} onSubmit={submit} aria-labelledby="deploy-title" noValidate>
      <h2 id="deploy-title">Deploy {entry.name}</h2>
      <p class="meta">
        <code>{entry.file}</code> · {bytes(entry.size_bytes)} · {entry.quantization}
        {entry.chat_template ? ' · has a chat template' : ' · no chat template: plain turns'}
      </p>
      <div class="row">
        <div class="field grow">
          <label for="deploy-model-id">Model id</label>
          <input
            id="deploy-model-id"
            ref={first}
            value={modelId}
            onInput={(e) => setModelId((e.target as HTMLInputElement).value)}
            aria-invalid={idError ? 'true' : undefined}
            aria-describedby={idError ? 'deploy-model-id-error' : 'deploy-model-id-help'}
            autocomplete="off"
            spellcheck={false}
          />
          {idError ? (
            <p class="error" id="deploy-model-id-error" role="alert">
              {idError}
            </p>
          ) : (
            <p class="help" id="deploy-model-id-help">
              The name clients send as <code>model</code>: lowercase letters, digits, <code>-</code> and <code>_</code>.
              {taken.includes(modelId.trim()) ? ' This id is already deployed.' : ''}
            </p>
          )}
        </div>
        <InstanceFields
          typeId="deploy-instance-type"
          threadsId="deploy-threads"
          type={instanceType}
          setType={setInstanceType}
          threads={threads}
          setThreads={setThreads}
          typeError={typeError}
          threadsError={threadsError}
        />
      </div>
      {typeError ? (
        <p class="error" id="deploy-instance-type-error" role="alert">
          {typeError}
        </p>
      ) : null}
      {threadsError ? (
        <p class="error" id="deploy-threads-error" role="alert">
          {threadsError}
        </p>
      ) : null}
      <ErrorNote error={other} />
      <div class="actions">
        <button type="submit" disabled={busy || modelId.trim() === ''} aria-busy={busy}>
          {busy ? 'Deploying…' : 'Deploy'}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/**
 * The instance type and thread count, as the deploy form and a deployment's instance form ask
 * them; a field's error, shown by the form, has the field's id with "-error".
 */
function InstanceFields(props: {
  typeId: string;
  threadsId: string;
  type: string;
  setType: (type: string) => void;
  threads: string;
  setThreads: (threads: string) => void;
  typeError: string | undefined;
  threadsError: string | undefined;
}) {
  const { typeId, threadsId, typeError, threadsError } = props;
  return (
    <>
      <div class="field small">
        <label for={typeId}>Instance type</label>
        <select
          id={typeId}
          value={props.type}
          onChange={(e) => props.setType((e.target as HTMLSelectElement).value)}
          aria-invalid={typeError ? 'true' : undefined}
          aria-describedby={typeError ? `${typeId}-error` : undefined}
        >
          <option value="cpu">cpu</option>
          <option value="cuda">cuda</option>
        </select>
      </div>
      <div class="field small">
        <label for={threadsId}>Threads</label>
        <input
          id={threadsId}
          placeholder="default"
          type="number"
          min={1}
          max={1024}
          inputMode="numeric"
          value={props.threads}
          onInput={(e) => props.setThreads((e.target as HTMLInputElement).value)}
          aria-invalid={threadsError ? 'true' : undefined}
          aria-describedby={threadsError ? `${threadsId}-error` : undefined}
        />
      </div>
    </>
  );
}

/** The deploy's progress: three steps, the bar full at LIVE; FAILED shows the reason. */
function DeployProgress({ dep }: { dep: LibraryDeployment }) {
  const failed = dep.status === 'FAILED';
  const at = STEPS.indexOf(dep.status as (typeof STEPS)[number]);
  const value = failed ? 3 : at + 1;
  const words = failed ? `FAILED: ${dep.reason ?? 'no reason given'}` : `${dep.status} (step ${value} of 3)`;
  return (
    <div class={`deploy-progress${failed ? ' failed' : ''}${dep.status === 'LIVE' ? ' done' : ''}`}>
      <progress max={3} value={value} aria-label={`Deploy of ${dep.model_id}`} aria-valuetext={words} />
      <ol class="steps" aria-hidden="true">
        {STEPS.map((s, i) => (
          <li key={s} class={failed ? (i < 2 ? 'was' : 'bad') : i < value ? 'was' : ''}>
            {failed && i === 2 ? 'FAILED' : s}
          </li>
        ))}
      </ol>
      <p class="progress-words" role="status">
        {failed ? (
          <span class="reason">FAILED: {dep.reason ?? 'no reason given'}</span>
        ) : dep.status === 'LIVE' ? (
          <>
            LIVE: ready. <a href={`#/playground/${encodeURIComponent(dep.model_id)}`}>Chat with {dep.model_id} in the Playground</a>.
          </>
        ) : (
          <>{dep.status === 'PENDING' ? 'Waiting to load…' : 'Loading the weights…'}</>
        )}
      </p>
    </div>
  );
}

function DeploymentCard({ dep, followed, onChanged }: { dep: LibraryDeployment; followed: boolean; onChanged: () => void }) {
  const titleId = `library-${dep.model_id}`;
  const showProgress = followed || BUSY.has(dep.status) || dep.status === 'FAILED';
  return (
    <li class="card" aria-labelledby={titleId}>
      <div class="card-head">
        <h3 id={titleId}>{dep.model_id}</h3>
        <Status status={dep.status} />
        <span class="tag" title="instance type">
          {dep.instance_type}
          {dep.threads !== null ? `, ${plural(dep.threads, 'thread')}` : ''}
        </span>
        {dep.replicas && dep.status === 'LIVE' ? <span class="meta">{appliedOn(dep.replicas)}</span> : null}
        {dep.placement !== null ? <span class="meta">placed on {plural(dep.placement, 'replica')}</span> : null}
      </div>
      <p class="meta">
        {dep.name} · <code>{dep.file}</code> · licence <License name={dep.license} link={dep.license_link} /> · deployed {when(dep.created_at)}
      </p>
      {showProgress ? <DeployProgress dep={dep} /> : null}
      {dep.status === 'LIVE' ? <InstanceForm dep={dep} onChanged={onChanged} /> : null}
      {dep.status === 'LIVE' ? (
        <p class="links">
          <a href={`#/playground/${encodeURIComponent(dep.model_id)}`}>Playground</a>
          <a href={`#/metrics/${encodeURIComponent(dep.model_id)}`}>Metrics</a>
        </p>
      ) : null}
    </li>
  );
}

function InstanceForm({ dep, onChanged }: { dep: LibraryDeployment; onChanged: () => void }) {
  const id = dep.model_id;
  const [type, setType] = useState(dep.instance_type);
  const [threads, setThreads] = useState(dep.threads === null ? '' : String(dep.threads));
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const typeError = fieldError(error, 'instance_type');
  const threadsError = fieldError(error, 'threads');
  const other = error !== undefined && !typeError && !threadsError ? error : undefined;
  const switching = dep.pending_instance_type;
  const unchanged = type === dep.instance_type && threads.trim() === (dep.threads === null ? '' : String(dep.threads));
  const typeId = `instance-type-${id}`;
  const threadsId = `instance-threads-${id}`;

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: Record<string, unknown> = { instance_type: type };
      if (threads.trim() !== '') body.threads = Number(threads);
      await api<LibraryDeployment>('PUT', `/api/v1/library/deployments/${seg(id)}/instance-type`, { json: body });
      onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="instance-form" onSubmit={submit} aria-label={`Instance type of ${id}`} noValidate>
      <div class="row">
        <InstanceFields
          typeId={typeId}
          threadsId={threadsId}
          type={type}
          setType={setType}
          threads={threads}
          setThreads={setThreads}
          typeError={typeError}
          threadsError={threadsError}
        />
        <button type="submit" class="secondary" disabled={busy || switching !== null || unchanged} aria-busy={busy}>
          Change instance type<span class="visually-hidden"> of {id}</span>
        </button>
        {typeError ? (
          <p class="error field-error" id={`${typeId}-error`} role="alert">
            {typeError}
          </p>
        ) : null}
        {threadsError ? (
          <p class="error field-error" id={`${threadsId}-error`} role="alert">
            {threadsError}
          </p>
        ) : null}
      </div>
      <ErrorNote error={other} />
      {switching ? (
        <div class="switching" role="status">
          <progress aria-label={`Moving ${id} to ${switching}`} />
          <span>
            Moving to <strong>{switching}</strong>: the new instance loads while the old one keeps answering, then traffic switches.
          </span>
        </div>
      ) : null}
      {!switching && dep.last_instance_error ? (
        <p class="error" role="alert">
          The last instance change failed: {dep.last_instance_error}
        </p>
      ) : null}
    </form>
  );
}
