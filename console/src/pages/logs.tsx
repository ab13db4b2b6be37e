// The request log of a realtime model, per variation: GET /api/v1/models/<id>/logs, as
// `platform models logs` reads it (newest first, by variation, paged with `before`). Each predict
// request is a row with its variation, audience, status and latency. A request whose audience drew
// a shadow copy is logged twice under one request id, the caller's answer and the shadow's, both
// with their bodies: those pairs are shown side by side, main answer and shadow answer, for review.
import { useEffect, useState } from 'preact/hooks';
import { api, seg } from '../api';
import { navigate } from '../router';
import type { Audience, Build, Model, ModelDetails } from '../types';
import { Cmd, Empty, ErrorNote, PageHeader, num, plural, useLoad } from '../ui';
import './deploy.css';
import './logs.css';

/** One line of GET /api/v1/models/<id>/logs. */
interface LogEntry {
  id: number;
  ts: number;
  request_id: string;
  variation: string;
  audience_id: string | null;
  shadow: boolean;
  status: number;
  latency_ms: number;
  error: string | null;
  /** Kept for shadow pairs only (both sides). */
  request: string | null;
  response: string | null;
}

interface Pair {
  requestId: string;
  main: LogEntry | undefined;
  shadow: LogEntry | undefined;
}

const PAGE = 100;
/** Pairs shown before "Show all": the newest few, so that the table of requests stays in reach. */
const SHOWN_PAIRS = 5;
const ALL = '';

export function RequestLogPage({ modelId, variation }: { modelId?: string; variation?: string }) {
  const models = useLoad((signal) => api<{ models: Model[] }>('GET', '/api/v1/models', { signal }), []);
  const realtime = models.data?.models.filter((m) => m.kind === 'realtime') ?? [];
  const selected = modelId ?? realtime[0]?.model_id;
  return (
    <section class="dd">
      <PageHeader title="Request log" />
      <p class="lead">
        The predict requests of a realtime model, newest first, per variation. When an audience sends a shadow a copy of a request, the answer the caller got and
        the shadow's answer are kept side by side for review.
      </p>
      <ErrorNote error={models.error} />
      {models.data && realtime.length === 0 ? (
        <Empty title="No realtime models yet.">
          <p>
            <a href="#/builds">Upload an ONNX build</a>, <a href="#/deploy">deploy it</a>, then send predict requests: they appear here.
          </p>
        </Empty>
      ) : null}
      {selected ? <ModelLog key={selected} models={realtime} modelId={selected} variation={variation ?? ALL} /> : null}
    </section>
  );
}

interface LogData {
  details: ModelDetails;
  builds: Build[];
  audiences: Map<string, string>;
}

async function loadModel(modelId: string, signal: AbortSignal): Promise<LogData> {
  const id = seg(modelId);
  const [details, { builds }, { audiences }] = await Promise.all([
    api<ModelDetails>('GET', `/api/v1/models/${id}`, { signal }),
    api<{ builds: Build[] }>('GET', `/api/v1/models/${id}/builds`, { signal }),
    api<{ audiences: Audience[] }>('GET', '/api/v1/audiences', { signal }),
  ]);
  return { details, builds, audiences: new Map(audiences.map((a) => [a.id, a.name])) };
}

interface Page {
  entries: LogEntry[];
  /** Entries around them (every variation), where the other half of a shadow pair is found. */
  neighbours: LogEntry[];
  more: boolean;
}

async function loadPage(modelId: string, variation: string, before: number | undefined, signal: AbortSignal): Promise<Page> {
  const url = (q: Record<string, string>) => `/api/v1/models/${seg(modelId)}/logs?${new URLSearchParams(q)}`;
  const query: Record<string, string> = { limit: String(PAGE) };
  if (variation !== ALL) query.variation = variation;
  if (before !== undefined) query.before = String(before);
  const { logs } = await api<{ logs: LogEntry[] }>('GET', url(query), { signal });
  let neighbours: LogEntry[] = logs;
  if (variation !== ALL && logs.length > 0) {
    // A pair's halves are logged moments apart, under ids close to each other: the entries of
    // every variation around this page hold the other halves.
    const ids = logs.map((l) => l.id);
    const hi = Math.max(...ids) + 200;
    const lo = Math.max(1, Math.min(...ids) - 200);
    const around = await api<{ logs: LogEntry[] }>('GET', url({ limit: String(Math.min(10_000, hi - lo + 1)), before: String(hi + 1) }), { signal });
    neighbours = around.logs;
  }
  return { entries: logs, neighbours, more: logs.length === PAGE };
}

/** The shadow pairs that the shown entries belong to, newest first. */
function pairsOf(entries: LogEntry[], neighbours: LogEntry[]): Pair[] {
  const byRequest = new Map<string, Pair>();
  const all = [...entries, ...neighbours];
  const paired = new Set(entries.filter((e) => e.shadow || e.request !== null).map((e) => e.request_id));
  for (const e of all) {
    if (!paired.has(e.request_id)) continue;
    const p = byRequest.get(e.request_id) ?? { requestId: e.request_id, main: undefined, shadow: undefined };
    if (e.shadow) p.shadow = e;
    else p.main = e;
    byRequest.set(e.request_id, p);
  }
  const at = (p: Pair) => (p.main ?? p.shadow)!.id;
  return [...byRequest.values()].sort((a, b) => at(b) - at(a));
}

function ModelLog({ models, modelId, variation }: { models: Model[]; modelId: string; variation: string }) {
  const info = useLoad((signal) => loadModel(modelId, signal), [modelId]);
  // The newest page (reloaded by the filters' submit and by follow), then the older ones asked for.
  const first = useLoad((signal) => loadPage(modelId, variation, undefined, signal), [modelId, variation]);
  const [olderPages, setOlderPages] = useState<Page[]>([]);
  const [olderError, setOlderError] = useState<unknown>(undefined);
  const [olderLoading, setOlderLoading] = useState(false);
  const [follow, setFollow] = useState(false);
  const [allPairs, setAllPairs] = useState(false);
  useEffect(() => {
    setOlderPages([]);
    setOlderError(undefined);
  }, [first.data]);
  const pages = first.data ? [first.data, ...olderPages] : [];
  const loading = first.loading || olderLoading;
  const error = first.error ?? olderError;
  const reload = first.reload;

  useEffect(() => {
    if (!follow) return;
    const timer = setInterval(reload, 5000);
    return () => clearInterval(timer);
  }, [follow, reload]);

  const older = async () => {
    const last = pages[pages.length - 1]?.entries.at(-1);
    if (!last) return;
    setOlderLoading(true);
    try {
      const p = await loadPage(modelId, variation, last.id, new AbortController().signal);
      setOlderPages((all) => [...all, p]);
      setOlderError(undefined);
    } catch (err) {
      setOlderError(err);
    } finally {
      setOlderLoading(false);
    }
  };

  const entries = pages.flatMap((p) => p.entries);
  const neighbours = pages.flatMap((p) => p.neighbours);
  const pairs = pairsOf(entries, neighbours);
  const live = info.data?.details.live_deployment?.traffic;
  const variations = [...new Set([...Object.keys(live?.variations ?? {}), ...entries.map((e) => e.variation), ...(variation !== ALL ? [variation] : [])])];
  const audienceName = (id: string | null) => (id === null ? 'none (fallback or named variation)' : (info.data?.audiences.get(id) ?? id));
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(`${e.variation}${e.shadow ? ' (shadow)' : ''}`, (counts.get(`${e.variation}${e.shadow ? ' (shadow)' : ''}`) ?? 0) + 1);
  const liveBuild = live ? info.data?.builds.find((b) => b.build_id === Object.values(live.variations)[0]) : undefined;
  const features = liveBuild?.features.map((f) => f.name) ?? ['feature_1', 'feature_2'];

  return (
    <>
      <form class="card log-filters" aria-label="Which requests" onSubmit={(e) => (e.preventDefault(), reload())}>
        <div class="row">
          <div class="field grow">
            <label for="log-model">Model</label>
            <select id="log-model" value={modelId} onChange={(e) => navigate('logs', (e.target as HTMLSelectElement).value)}>
              {models.map((m) => (
                <option key={m.model_id} value={m.model_id}>
                  {m.model_id}
                </option>
              ))}
            </select>
          </div>
          <div class="field grow">
            <label for="log-variation">Variation</label>
            <select
              id="log-variation"
              value={variation}
              onChange={(e) => {
                const v = (e.target as HTMLSelectElement).value;
                if (v === ALL) navigate('logs', modelId);
                else navigate('logs', modelId, v);
              }}
            >
              <option value={ALL}>All variations</option>
              {variations.map((v) => (
                <option key={v} value={v}>
                  {v}
                </option>
              ))}
            </select>
          </div>
          <label class="inline-check follow">
            <input type="checkbox" checked={follow} onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} /> Refresh every 5 s
          </label>
          <button type="submit" class="secondary" aria-busy={loading}>
            Refresh
          </button>
        </div>
      </form>
      <ErrorNote error={error ?? info.error} />
      {!loading && !error && entries.length === 0 ? (
        <Empty title={variation === ALL ? `No requests logged for ${modelId} yet.` : `No requests logged for ${modelId} / ${variation} yet.`}>
          {live ? (
            <>
              <p>Send a predict request with a token, then refresh:</p>
              <Cmd>{`curl -s ${location.origin}/v1/${modelId}/predict -H "Authorization: Bearer $TOKEN" \\\n  -H 'Content-Type: application/json' \\\n  -d '{"columns": ${JSON.stringify(features)}, "data": [[${features.map(() => '1').join(', ')}]]}'`}</Cmd>
            </>
          ) : (
            <p>
              {modelId} is not deployed: <a href={`#/deploy/${encodeURIComponent(modelId)}`}>deploy a build</a>, then send predict requests.
            </p>
          )}
        </Empty>
      ) : null}
      {entries.length > 0 ? (
        <>
          <p class="meta counts">
            {plural(entries.length, 'request')} shown:{' '}
            {[...counts.entries()].map(([v, n], i) => (
              <span key={v}>
                {i > 0 ? ' · ' : ''}
                {v} {n}
              </span>
            ))}
          </p>
          <h2 id="pairs-title">Shadow pairs ({pairs.length})</h2>
          {pairs.length === 0 ? (
            <Empty title="No shadow pairs among these requests.">
              <p>
                A shadow variation gets a copy of an audience's requests and its answer is kept beside the caller's. Turn on a variation's shadow toggle in the{' '}
                <a href={`#/deploy/${encodeURIComponent(modelId)}`}>deploy dialog's Traffic Control step</a>.
              </p>
            </Empty>
          ) : (
            <>
              <ul class="pairs" aria-labelledby="pairs-title">
                {(allPairs ? pairs : pairs.slice(0, SHOWN_PAIRS)).map((p) => (
                  <PairCard key={p.requestId} pair={p} audienceName={audienceName} />
                ))}
              </ul>
              {pairs.length > SHOWN_PAIRS ? (
                <button type="button" class="secondary more-pairs" onClick={() => setAllPairs((a) => !a)} aria-expanded={allPairs}>
                  {allPairs ? `Show the newest ${SHOWN_PAIRS} pairs only` : `Show all ${pairs.length} pairs`}
                </button>
              ) : null}
            </>
          )}
          <h2 id="requests-title">Requests</h2>
          <div class="table-wrap">
            <table class="stack log-table" aria-labelledby="requests-title">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Variation</th>
                  <th scope="col">Audience</th>
                  <th scope="col">Status</th>
                  <th scope="col">Latency</th>
                  <th scope="col">Request id</th>
                </tr>
              </thead>
              <tbody>
                {entries.map((e) => (
                  <tr key={e.id} class={e.status >= 400 ? 'failed' : undefined}>
                    <th scope="row">{clock(e.ts)}</th>
                    <td data-label="Variation">
                      {e.variation}
                      {e.shadow ? <span class="tag shadow">shadow copy</span> : null}
                    </td>
                    <td data-label="Audience">{audienceName(e.audience_id)}</td>
                    <td data-label="Status" class="num">
                      {e.status}
                      {e.error ? <span class="reason"> {e.error}</span> : null}
                    </td>
                    <td data-label="Latency" class="num">
                      {num(e.latency_ms)} ms
                    </td>
                    <td data-label="Request id">
                      {e.shadow || e.request !== null ? (
                        <a
                          href={`#pair-${e.request_id}`}
                          onClick={(ev) => {
                            ev.preventDefault();
                            setAllPairs(true);
                            setTimeout(() => jumpTo(`pair-${e.request_id}`));
                          }}
                        >
                          <code>{e.request_id}</code> (pair)
                        </a>
                      ) : (
                        <code>{e.request_id}</code>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {pages[pages.length - 1]?.more ? (
            <button type="button" class="secondary" onClick={older} disabled={loading}>
              Older requests
            </button>
          ) : (
            <p class="meta">That is the oldest request the log keeps.</p>
          )}
        </>
      ) : null}
    </>
  );
}

/** Scrolls to a pair and gives it the focus (the hash is the page's address, so no jump by hash). */
function jumpTo(id: string): void {
  const el = document.getElementById(id);
  el?.scrollIntoView({ block: 'start' });
  el?.focus();
}

function clock(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** A logged body, indented when it is JSON. */
function pretty(text: string | null): string {
  if (text === null) return '';
  try {
    const v: unknown = JSON.parse(text);
    const compact = JSON.stringify(v);
    return compact.length <= 60 ? compact : JSON.stringify(v, null, 2);
  } catch {
    return text;
  }
}

function verdict(p: Pair): { text: string; kind: string } {
  if (!p.main || !p.shadow) return { text: p.main ? "the shadow's answer is not in the log yet" : "the caller's answer is not in this page", kind: 'muted' };
  if (p.shadow.status !== 200) return { text: `the shadow failed (${p.shadow.status})`, kind: 'bad' };
  if (p.main.status !== 200) return { text: `the main answer failed (${p.main.status})`, kind: 'bad' };
  return pretty(p.main.response) === pretty(p.shadow.response) ? { text: 'same answer', kind: 'ok' } : { text: 'answers differ', kind: 'busy' };
}

function Side({ entry, role }: { entry: LogEntry | undefined; role: 'main' | 'shadow' }) {
  const title = role === 'main' ? 'Main answer' : 'Shadow answer';
  return (
    <section class={`side side-${role}`} aria-label={`${title}${entry ? `: ${entry.variation}` : ''}`}>
      <h4>
        {title}
        {entry ? (
          <>
            : <span class="side-variation">{entry.variation}</span>{' '}
            <span class="meta">
              {entry.status} · {num(entry.latency_ms)} ms
            </span>
          </>
        ) : null}
      </h4>
      {entry ? (
        entry.error ? (
          <p class="reason">{entry.error}</p>
        ) : (
          <pre class="body">
            <code>{pretty(entry.response)}</code>
          </pre>
        )
      ) : (
        <p class="meta">Not in the log {role === 'shadow' ? 'yet: a shadow runs after the caller has its answer' : 'page shown'}.</p>
      )}
    </section>
  );
}

function PairCard({ pair, audienceName }: { pair: Pair; audienceName: (id: string | null) => string }) {
  const first = (pair.main ?? pair.shadow)!;
  const v = verdict(pair);
  const request = pair.main?.request ?? pair.shadow?.request ?? null;
  return (
    <li class="card pair" id={`pair-${pair.requestId}`} tabIndex={-1} aria-labelledby={`pair-${pair.requestId}-title`}>
      <div class="card-head">
        <h3 id={`pair-${pair.requestId}-title`} class="pair-title">
          <code>{pair.requestId}</code>
        </h3>
        <span class={`pill ${v.kind}`}>{v.text}</span>
        <span class="meta">
          {clock(first.ts)} · audience {audienceName(first.audience_id)}
        </span>
      </div>
      <div class="pair-request">
        <h4>Request</h4>
        <pre class="body">
          <code>{pretty(request)}</code>
        </pre>
      </div>
      <div class="sides">
        <Side entry={pair.main} role="main" />
        <Side entry={pair.shadow} role="shadow" />
      </div>
    </li>
  );
}
