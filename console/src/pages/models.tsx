// Models: every model, realtime and library. A realtime model shows its live deployment (each
// variation with its build and instance type, each audience's routes with weights and shadows,
// the fallback), a deployment in progress, its builds, and on how many replicas the live
// deployment is applied; a library model shows its file, status, instance and licence.
import { useEffect } from 'preact/hooks';
import { api, seg } from '../api';
import type { Audience, Build, Deployment, LibraryDeployment, Model, ModelDetails } from '../types';
import { appliedOn, bytes, Cmd, Empty, ErrorNote, PageHeader, plural, Status, useLoad, when } from '../ui';

interface RealtimeView {
  kind: 'realtime';
  model: Model;
  details: ModelDetails;
  builds: Build[];
}

interface LibraryView {
  kind: 'library';
  model: Model;
  deployment: LibraryDeployment | null;
  error?: unknown;
}

type ModelView = RealtimeView | LibraryView;

interface ModelsData {
  models: ModelView[];
  audiences: Map<string, string>;
}

async function loadModels(signal: AbortSignal): Promise<ModelsData> {
  const { models } = await api<{ models: Model[] }>('GET', '/api/v1/models', { signal });
  const views = await Promise.all(
    models.map(async (model): Promise<ModelView> => {
      const id = seg(model.model_id);
      if (model.kind === 'library') {
        try {
          const deployment = await api<LibraryDeployment>('GET', `/api/v1/library/deployments/${id}`, { signal });
          return { kind: 'library', model, deployment };
        } catch (error) {
          return { kind: 'library', model, deployment: null, error };
        }
      }
      const [details, { builds }] = await Promise.all([
        api<ModelDetails>('GET', `/api/v1/models/${id}`, { signal }),
        api<{ builds: Build[] }>('GET', `/api/v1/models/${id}/builds`, { signal }),
      ]);
      return { kind: 'realtime', model, details, builds };
    }),
  );
  // The traffic names audiences by id; their names make the routes readable.
  const routed = views.some((v) => v.kind === 'realtime' && (v.details.live_deployment?.traffic.audiences.length ?? 0) > 0);
  const audiences = new Map<string, string>();
  if (routed) {
    for (const a of (await api<{ audiences: Audience[] }>('GET', '/api/v1/audiences', { signal })).audiences) audiences.set(a.id, a.name);
  }
  return { models: views, audiences };
}

const BUSY = new Set(['PENDING', 'DEPLOYING']);

function busy(v: ModelView): boolean {
  if (v.kind === 'library') return v.deployment !== null && (BUSY.has(v.deployment.status) || v.deployment.pending_instance_type !== null);
  return v.details.deployment_in_progress !== null;
}

export function ModelsPage() {
  const { data, error, loading, reload } = useLoad(loadModels, []);
  // While something is deploying, follow it.
  const following = data?.models.some(busy) ?? false;
  useEffect(() => {
    if (!following) return;
    const timer = setInterval(reload, 2000);
    return () => clearInterval(timer);
  }, [following, reload]);

  const realtime = data?.models.filter((m): m is RealtimeView => m.kind === 'realtime') ?? [];
  const library = data?.models.filter((m): m is LibraryView => m.kind === 'library') ?? [];
  return (
    <section aria-labelledby="models-title">
      <PageHeader title="Models">
        <button type="button" class="secondary" onClick={reload} aria-busy={loading}>
          Refresh
        </button>
      </PageHeader>
      <ErrorNote error={error} />
      {data && data.models.length === 0 ? (
        <Empty title="No models yet.">
          <p>
            For a realtime model, <a href="#/builds">upload an ONNX build</a>: the upload page creates the model too. Then deploy it with
          </p>
          <Cmd>platform models deploy realtime --model-id &lt;id&gt; --build-id &lt;build&gt; --wait</Cmd>
          <p>
            For an LLM, put GGUF files in the host's <code>MODELS_DIR</code> and deploy one with
          </p>
          <Cmd>platform library deploy &lt;file&gt; --model-id &lt;id&gt; --wait</Cmd>
        </Empty>
      ) : null}
      {realtime.length > 0 ? (
        <>
          <h2>Realtime models</h2>
          <ul class="cards" aria-label="Realtime models">
            {realtime.map((v) => (
              <RealtimeCard key={v.model.model_id} view={v} audiences={data!.audiences} />
            ))}
          </ul>
        </>
      ) : null}
      {library.length > 0 ? (
        <>
          <h2>Library models</h2>
          <ul class="cards" aria-label="Library models">
            {library.map((v) => (
              <LibraryCard key={v.model.model_id} view={v} />
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}

function ProgressLine({ d }: { d: Deployment }) {
  const what = d.action === 'undeploy' ? `undeploy of ${d.variation_name}` : `deploy of ${d.variation_name}`;
  return (
    <p class="progress-line">
      <Status status={d.status} /> {what} ({d.deployment_id}), since {when(d.updated_at)}
      {d.reason ? <span class="reason">: {d.reason}</span> : null}
    </p>
  );
}

function RealtimeCard({ view, audiences }: { view: RealtimeView; audiences: Map<string, string> }) {
  const { model, details, builds } = view;
  const live = details.live_deployment;
  const titleId = `model-${model.model_id}`;
  const variations = live ? Object.entries(live.traffic.variations) : [];
  const servedBy = (buildId: string) =>
    variations
      .filter(([, b]) => b === buildId)
      .map(([name]) => name)
      .join(', ');
  return (
    <li class="card model" aria-labelledby={titleId}>
      <div class="card-head">
        <h3 id={titleId}>{model.model_id}</h3>
        <span class="tag">realtime</span>
        {live ? <Status status="LIVE" /> : <Status status="NONE" label="not deployed" />}
        {live ? <span class="meta">{appliedOn(details.replicas)}</span> : null}
        {builds.length > 0 ? (
          <a class="deploy-link" style={{ marginLeft: 'auto' }} href={`#/deploy/${encodeURIComponent(model.model_id)}`}>
            Deploy a build of {model.model_id}
          </a>
        ) : null}
      </div>
      <p class="meta">
        project {model.project} · created {when(model.created_at)}
        {model.description ? ` · ${model.description}` : ''}
      </p>
      {details.deployment_in_progress ? <ProgressLine d={details.deployment_in_progress} /> : null}
      {live ? (
        <>
          <div class="table-wrap">
            <table class="stack">
              <caption>Variations of {model.model_id}</caption>
              <thead>
                <tr>
                  <th scope="col">Variation</th>
                  <th scope="col">Build</th>
                  <th scope="col">Instance type</th>
                  <th scope="col">Traffic</th>
                </tr>
              </thead>
              <tbody>
                {variations.map(([name, build]) => (
                  <tr key={name}>
                    <th scope="row">{name}</th>
                    <td data-label="Build">
                      <code>{build}</code>
                    </td>
                    <td data-label="Instance type">{live.traffic.instanceTypes?.[name] ?? 'cpu'}</td>
                    <td data-label="Traffic">
                      <TrafficOf variation={name} deployment={live} audiences={audiences} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p class="meta">
            Fallback variation: <strong>{live.traffic.fallbackVariation ?? 'none'}</strong> · live deployment {live.deployment_id} since{' '}
            {when(live.updated_at)}
          </p>
        </>
      ) : (
        <div class="hint">
          {builds.length > 0 ? (
            <>
              Nothing deployed. Deploy a build with
              <Cmd>{`platform models deploy realtime --model-id ${model.model_id} --build-id ${builds[0]!.build_id} --wait`}</Cmd>
            </>
          ) : (
            <>
              No build yet. <a href={`#/builds/${encodeURIComponent(model.model_id)}`}>Upload an ONNX build</a>.
            </>
          )}
        </div>
      )}
      {builds.length > 0 ? (
        <details class="builds">
          <summary>{plural(builds.length, 'build')}</summary>
          <div class="table-wrap">
            <table class="stack">
              <caption class="visually-hidden">Builds of {model.model_id}</caption>
              <thead>
                <tr>
                  <th scope="col">Build</th>
                  <th scope="col">Serves</th>
                  <th scope="col">Features</th>
                  <th scope="col">Outputs</th>
                  <th scope="col">Size</th>
                  <th scope="col">Uploaded</th>
                </tr>
              </thead>
              <tbody>
                {builds.map((b) => (
                  <tr key={b.build_id}>
                    <th scope="row">
                      <code>{b.build_id}</code>{' '}
                      <a href={`#/deploy/${encodeURIComponent(model.model_id)}/${encodeURIComponent(b.build_id)}`} aria-label={`Deploy build ${b.build_id}`}>
                        deploy
                      </a>
                    </th>
                    <td data-label="Serves">{servedBy(b.build_id) || '—'}</td>
                    <td data-label="Features">{b.features.map((f) => f.name).join(', ')}</td>
                    <td data-label="Outputs">{b.outputs.join(', ')}</td>
                    <td data-label="Size">{bytes(b.size_bytes)}</td>
                    <td data-label="Uploaded">{when(b.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      ) : null}
    </li>
  );
}

/** "everyone: 90 %", "everyone: 5 % shadow copy", one line per audience that routes to it. */
function TrafficOf({ variation, deployment, audiences }: { variation: string; deployment: Deployment; audiences: Map<string, string> }) {
  const lines = deployment.traffic.audiences.flatMap((a) =>
    a.routes
      .filter((r) => r.variation_name === variation)
      .map((r) => ({ audience: audiences.get(a.id) ?? a.id, weight: r.weight, shadow: r.shadow })),
  );
  if (lines.length === 0) {
    return <span>{deployment.traffic.fallbackVariation === variation ? 'fallback (all traffic no audience takes)' : 'no route'}</span>;
  }
  return (
    <ul class="plain">
      {lines.map((l, i) => (
        <li key={i}>
          {l.audience}: {l.weight} %{l.shadow ? <span class="tag shadow">shadow copy</span> : null}
        </li>
      ))}
    </ul>
  );
}

function LibraryCard({ view }: { view: LibraryView }) {
  const { model, deployment: d } = view;
  const titleId = `model-${model.model_id}`;
  return (
    <li class="card model" aria-labelledby={titleId}>
      <div class="card-head">
        <h3 id={titleId}>{model.model_id}</h3>
        <span class="tag">library</span>
        {d ? <Status status={d.status} /> : null}
        {d?.replicas ? <span class="meta">{appliedOn(d.replicas)}</span> : null}
      </div>
      <ErrorNote error={view.error} />
      {d ? (
        <>
          {d.reason ? <p class="reason">{d.reason}</p> : null}
          <dl class="fields">
            <dt>File</dt>
            <dd>
              <code>{d.file}</code> ({d.name})
            </dd>
            <dt>Instance type</dt>
            <dd>
              {d.instance_type}
              {d.threads !== null ? `, ${plural(d.threads, 'thread')}` : ''}
              {d.pending_instance_type ? ` (switching to ${d.pending_instance_type})` : ''}
            </dd>
            {d.last_instance_error ? (
              <>
                <dt>Last switch failed</dt>
                <dd class="reason">{d.last_instance_error}</dd>
              </>
            ) : null}
            <dt>Placement</dt>
            <dd>{d.placement === null ? 'every replica' : plural(d.placement, 'replica')}</dd>
            <dt>Licence</dt>
            <dd>
              {d.license_link ? (
                <a href={d.license_link} target="_blank" rel="noreferrer noopener">
                  {d.license ?? d.license_link}
                </a>
              ) : (
                (d.license ?? 'not stated in the file')
              )}
            </dd>
            <dt>Deployed</dt>
            <dd>{when(d.created_at)}</dd>
          </dl>
        </>
      ) : null}
    </li>
  );
}
