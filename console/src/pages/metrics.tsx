// Metrics: a model's figures as charts that update live. Every few seconds the page asks
// GET /api/v1/models/<id>/metrics (the whole cluster's last 5 minutes) and adds the answer as one
// point per series: for a library model SPEC.md's four figures (requests per minute, output
// tokens per second, TTFT and TPOT at p50 and p99), for a realtime model each variation's request
// rate, latency and errors. KV-cache use and the queue come from GET /metrics (Prometheus text,
// per replica). The host keeps no history: the series start when the page is first opened and
// last while the tab is open. uPlot (charts.tsx) is loaded on demand.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, apiResponse, seg } from '../api';
import type { LatencySummary, LibraryMetrics, Model, RealtimeMetrics } from '../types';
import { Cmd, Empty, ErrorNote, messageOf, num, PageHeader, plural, useLoad } from '../ui';
import { navigate } from '../router';
import type { TimeChartProps } from '../charts';
import './metrics.css';

type ChartsModule = typeof import('../charts');

/** How often the page asks for new figures. */
export const POLL_MS = 3000;
/** Points kept per model: 30 minutes at one every 3 s. */
const KEEP = 600;

/** One replica's engine figures from /metrics; null where it has none for the model. */
interface EngineFigures {
  kvCacheUse: number | null;
  waiting: number | null;
  running: number | null;
  replica: string | null;
}

interface LibraryPoint {
  t: number;
  kind: 'library';
  m: LibraryMetrics;
  engine: EngineFigures | null;
  engineError: string | null;
}

interface RealtimePoint {
  t: number;
  kind: 'realtime';
  m: RealtimeMetrics;
}

type Point = LibraryPoint | RealtimePoint;

/** The series of each model, kept while the tab is open (leaving the page does not lose them). */
const history = new Map<string, Point[]>();

let chartsModule: Promise<ChartsModule> | undefined;
/** The model shown last, for a visit to #/metrics without one. */
let lastViewed: string | undefined;

/** A gauge of /metrics for one model: `name{...model="id"...} value`. */
function gauge(text: string, name: string, modelId: string): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    const close = line.indexOf('}');
    const labels = line.slice(name.length + 1, close);
    if (!/(^|,)model="([^"\\]|\\.)*"/.test(labels)) continue;
    const model = /(?:^|,)model="((?:[^"\\]|\\.)*)"/.exec(labels)?.[1]?.replace(/\\(.)/g, '$1');
    if (model !== modelId) continue;
    const value = Number(line.slice(close + 1).trim().split(/\s+/)[0]);
    return Number.isFinite(value) ? value : null;
  }
  return null;
}

async function engineFigures(modelId: string, signal: AbortSignal): Promise<EngineFigures> {
  const res = await apiResponse('GET', '/metrics', { signal });
  const text = await res.text();
  const kv = gauge(text, 'platform:kv_cache_usage_perc', modelId);
  return {
    kvCacheUse: kv === null ? null : kv * 100,
    waiting: gauge(text, 'platform:num_requests_waiting', modelId),
    running: gauge(text, 'platform:num_requests_running', modelId),
    replica: res.headers.get('x-replica-id'),
  };
}

async function poll(model: Model, signal: AbortSignal): Promise<Point> {
  const url = `/api/v1/models/${seg(model.model_id)}/metrics`;
  if (model.kind === 'library') {
    const [m, engine] = await Promise.all([
      api<LibraryMetrics>('GET', url, { signal }),
      engineFigures(model.model_id, signal).then(
        (e) => ({ e, error: null }),
        (err: unknown) => {
          if ((err as Error).name === 'AbortError') throw err;
          return { e: null, error: messageOf(err) };
        },
      ),
    ]);
    return { t: Date.now() / 1000, kind: 'library', m, engine: engine.e, engineError: engine.error };
  }
  return { t: Date.now() / 1000, kind: 'realtime', m: await api<RealtimeMetrics>('GET', url, { signal }) };
}

const ms = (v: number) => `${num(v)} ms`;
const fmtMs = (v: number | null) => (v === null ? '–' : `${v < 10 ? v.toFixed(2) : v.toFixed(1)} ms`);
const plain = (v: number) => num(v);

export function MetricsPage({ modelId }: { modelId?: string }) {
  const models = useLoad((signal) => api<{ models: Model[] }>('GET', '/api/v1/models', { signal }).then((r) => r.models), []);
  const list = models.data ?? [];
  // Without a model in the address: the one looked at last, else the first library model.
  const model =
    list.find((m) => m.model_id === (modelId ?? lastViewed)) ?? (modelId ? undefined : (list.find((m) => m.kind === 'library') ?? list[0]));
  if (model) lastViewed = model.model_id;
  const [paused, setPaused] = useState(false);
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState<unknown>(undefined);
  const [charts, setCharts] = useState<ChartsModule | undefined>(undefined);
  const [chartsError, setChartsError] = useState<unknown>(undefined);

  useEffect(() => {
    (chartsModule ??= import('../charts')).then(
      (m) => setCharts(() => m),
      (err: unknown) => {
        chartsModule = undefined;
        setChartsError(err);
      },
    );
  }, []);

  // Poll the chosen model's figures: at once, then every POLL_MS while not paused.
  useEffect(() => {
    if (!model) return;
    const id = model.model_id;
    setPoints(history.get(id) ?? []);
    setError(undefined);
    if (paused) return;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const p = await poll(model, abort.signal);
        const kept = [...(history.get(id) ?? []), p].slice(-KEEP);
        history.set(id, kept);
        setPoints(kept);
        setError(undefined);
      } catch (err) {
        if (abort.signal.aborted) return;
        setError(err);
      }
      if (!abort.signal.aborted) timer = setTimeout(tick, POLL_MS);
    };
    void tick();
    return () => {
      abort.abort();
      if (timer) clearTimeout(timer);
    };
  }, [model?.model_id, model?.kind, paused]);

  const last = points[points.length - 1];
  return (
    <section aria-labelledby="metrics-title" class="metrics">
      <PageHeader title="Metrics">
        {model ? (
          <button type="button" class="secondary" aria-pressed={paused} onClick={() => setPaused((p) => !p)}>
            {paused ? 'Resume updates' : 'Pause updates'}
          </button>
        ) : null}
      </PageHeader>
      <ErrorNote error={models.error} />
      {models.data && list.length === 0 ? (
        <Empty title="No models yet, so no figures.">
          <p>
            Deploy a GGUF file on the <a href="#/library">Library</a> page and chat with it in the <a href="#/playground">Playground</a>, or deploy a
            realtime model and send it predicts: their figures appear here as charts.
          </p>
        </Empty>
      ) : null}
      {modelId && models.data && !model ? (
        <p class="error" role="alert">
          There is no model {modelId}. <a href="#/metrics">Show the first model</a>.
        </p>
      ) : null}
      {model ? (
        <>
          <div class="row metrics-bar">
            <div class="field grow">
              <label for="metrics-model">Model</label>
              <select id="metrics-model" value={model.model_id} onChange={(e) => navigate('metrics', (e.target as HTMLSelectElement).value)}>
                {list.map((m) => (
                  <option key={m.model_id} value={m.model_id}>
                    {m.model_id} ({m.kind})
                  </option>
                ))}
              </select>
            </div>
            <p class="meta live-state" role="status" aria-live="polite">
              {paused ? 'Paused.' : `Updates every ${POLL_MS / 1000} s.`} {plural(points.length, 'point')}
              {last ? `, last at ${new Date(last.t * 1000).toLocaleTimeString()}` : ''}
              {last?.m.replicas && last.m.replicas.total > 1 ? ` · figures of ${last.m.replicas.answered} of ${last.m.replicas.total} replicas` : ''}
            </p>
          </div>
          <p class="help explain">
            Each point is the host's figure over the 5 minutes before it was read; the host keeps no older history, so the lines start when this page
            was first opened and last while the tab is open.
          </p>
          <ErrorNote error={error} />
          <ErrorNote error={chartsError} />
          {last?.kind === 'library' ? (
            <LibraryCharts points={points as LibraryPoint[]} charts={charts} modelId={model.model_id} />
          ) : last?.kind === 'realtime' ? (
            <RealtimeCharts points={points as RealtimePoint[]} charts={charts} modelId={model.model_id} />
          ) : !error ? (
            <p class="hint">Reading the first figures…</p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}

interface ChartSpec extends Omit<TimeChartProps, 'titleId'> {
  id: string;
  title: string;
  note?: string;
}

function Chart({ spec, charts }: { spec: ChartSpec; charts: ChartsModule | undefined }) {
  const titleId = `chart-${spec.id}`;
  const props: TimeChartProps = {
    titleId,
    yLabel: spec.yLabel,
    format: spec.format,
    series: spec.series,
    data: spec.data,
    ...(spec.minTop !== undefined ? { minTop: spec.minTop } : {}),
    ...(spec.maxTop !== undefined ? { maxTop: spec.maxTop } : {}),
  };
  const latest = spec.series.map((s, i) => {
    const col = spec.data[i + 1]!;
    const v = col[col.length - 1];
    return `${s.label} ${v === null || v === undefined ? 'no figure' : spec.format(v)}`;
  });
  return (
    <figure class="chart card" aria-labelledby={titleId} data-chart={spec.id} data-points={spec.data[0].length}>
      <figcaption id={titleId}>
        <span class="chart-title">{spec.title}</span>
        {spec.note ? <span class="sub">{spec.note}</span> : null}
      </figcaption>
      {charts ? <charts.TimeChart {...props} /> : <p class="hint chart-loading">Loading the chart…</p>}
      <p class="visually-hidden">Latest: {latest.join('; ')}.</p>
    </figure>
  );
}

const column = <P,>(points: P[], read: (p: P) => number | null) => points.map(read);

function LibraryCharts({ points, charts, modelId }: { points: LibraryPoint[]; charts: ChartsModule | undefined; modelId: string }) {
  const specs = useMemo((): ChartSpec[] => {
    const t = points.map((p) => p.t);
    const lat = (read: (m: LibraryMetrics) => LatencySummary, key: 'p50' | 'p99') => column(points, (p) => read(p.m)[key]);
    /** A latency figure's p50 (solid) and p99 (dashed). */
    const latencyChart = (id: string, title: string, read: (m: LibraryMetrics) => LatencySummary): ChartSpec => ({
      id,
      title,
      note: 'p50 and p99 of the requests finished in the last 5 minutes',
      yLabel: 'milliseconds',
      format: ms,
      series: [
        { label: 'p50', color: 0 },
        { label: 'p99', color: 1, dashed: true },
      ],
      data: [t, lat(read, 'p50'), lat(read, 'p99')],
    });
    const withEngine = points.some((p) => p.engine !== null);
    const out: ChartSpec[] = [
      {
        id: 'rpm',
        title: 'Requests per minute',
        note: 'average over the last 5 minutes',
        yLabel: 'requests / min',
        format: plain,
        series: [{ label: 'requests/min', color: 0 }],
        data: [t, column(points, (p) => p.m.throughput_rpm_5m)],
      },
      {
        id: 'tps',
        title: 'Output tokens per second',
        note: 'tokens generated in the last 5 minutes, per second',
        yLabel: 'tokens / s',
        format: plain,
        series: [{ label: 'tokens/s', color: 2 }],
        data: [t, column(points, (p) => p.m.token_throughput_tps)],
      },
      latencyChart('ttft', 'Time to first token', (m) => m.time_to_first_token_ms),
      latencyChart('tpot', 'Time per output token', (m) => m.time_per_output_token_ms),
    ];
    if (withEngine) {
      out.push(
        {
          id: 'kv',
          title: 'KV-cache use',
          note: 'share of KV-cache blocks in use now, on the replica that answered /metrics',
          yLabel: 'percent',
          format: (v) => `${num(v)} %`,
          series: [{ label: 'in use', color: 3 }],
          data: [t, column(points, (p) => p.engine?.kvCacheUse ?? null)],
          maxTop: 100,
        },
        {
          id: 'queue',
          title: 'Queue',
          note: 'requests waiting for admission and running now, on the replica that answered /metrics',
          yLabel: 'requests',
          format: plain,
          series: [
            { label: 'waiting', color: 1 },
            { label: 'running', color: 0, dashed: true },
          ],
          data: [t, column(points, (p) => p.engine?.waiting ?? null), column(points, (p) => p.engine?.running ?? null)],
        },
      );
    }
    return out;
  }, [points]);
  const last = points[points.length - 1]!;
  const m = last.m;
  return (
    <>
      <div class="charts">
        {specs.map((s) => (
          <Chart key={s.id} spec={s} charts={charts} />
        ))}
      </div>
      {last.engineError ? (
        <p class="notice">
          KV-cache use and the queue come from <code>GET /metrics</code>, which answered: {last.engineError}
        </p>
      ) : null}
      <div class="table-wrap">
        <table class="latest">
          <caption>Latest figures of {modelId} (last 5 minutes)</caption>
          <thead>
            <tr>
              <th scope="col">Figure</th>
              <th scope="col">Value</th>
            </tr>
          </thead>
          <tbody>
            <tr data-figure="requests">
              <th scope="row">Requests</th>
              <td class="num">{m.requests_5m}</td>
            </tr>
            <tr>
              <th scope="row">Requests per minute</th>
              <td class="num">{num(m.throughput_rpm_5m)}</td>
            </tr>
            <tr>
              <th scope="row">Output tokens per second</th>
              <td class="num">{num(m.token_throughput_tps)}</td>
            </tr>
            <LatencyRow name="Time to first token" s={m.time_to_first_token_ms} />
            <LatencyRow name="Time per output token" s={m.time_per_output_token_ms} />
            {last.engine ? (
              <>
                <tr>
                  <th scope="row">KV-cache use (this replica)</th>
                  <td class="num">{last.engine.kvCacheUse === null ? '–' : `${num(last.engine.kvCacheUse)} %`}</td>
                </tr>
                <tr>
                  <th scope="row">Waiting / running (this replica)</th>
                  <td class="num">
                    {last.engine.waiting ?? '–'} / {last.engine.running ?? '–'}
                  </td>
                </tr>
              </>
            ) : null}
          </tbody>
        </table>
      </div>
      {m.requests_5m === 0 ? (
        <p class="hint">
          No requests in the last 5 minutes. <a href={`#/playground/${encodeURIComponent(modelId)}`}>Chat with {modelId} in the Playground</a> and
          watch the lines move.
        </p>
      ) : null}
    </>
  );
}

function LatencyRow({ name, s }: { name: string; s: LatencySummary }) {
  return (
    <tr>
      <th scope="row">{name}</th>
      <td class="num latency">
        {s.p50 === null ? (
          'no requests finished'
        ) : (
          <>
            <span>p50 {fmtMs(s.p50)}</span> <span>p99 {fmtMs(s.p99)}</span> <span>mean {fmtMs(s.mean)}</span>
          </>
        )}
      </td>
    </tr>
  );
}

function RealtimeCharts({ points, charts, modelId }: { points: RealtimePoint[]; charts: ChartsModule | undefined; modelId: string }) {
  const specs = useMemo((): ChartSpec[] => {
    const t = points.map((p) => p.t);
    // Every variation seen in the series, shadow copies apart; a variation missing from a point
    // had no requests in that point's 5 minutes.
    const keys: Array<{ variation: string; shadow: boolean; label: string }> = [];
    for (const p of points) {
      for (const v of p.m.variations) {
        if (!keys.some((k) => k.variation === v.variation && k.shadow === v.shadow)) {
          keys.push({ variation: v.variation, shadow: v.shadow, label: v.shadow ? `${v.variation} (shadow)` : v.variation });
        }
      }
    }
    const find = (p: RealtimePoint, k: (typeof keys)[number]) => p.m.variations.find((v) => v.variation === k.variation && v.shadow === k.shadow);
    const perVariation = (read: (v: RealtimeMetrics['variations'][number]) => number | null, missing: number | null) =>
      keys.map((k) => column(points, (p) => {
        const v = find(p, k);
        return v ? read(v) : missing;
      }));
    return [
      {
        id: 'rate',
        title: 'Request rate per variation',
        note: 'average over the last 5 minutes; shadow copies apart',
        yLabel: 'requests / min',
        format: plain,
        series: keys.map((k, i) => ({ label: k.label, color: i, ...(k.shadow ? { dashed: true } : {}) })),
        data: [t, ...perVariation((v) => v.throughput_rpm_5m, 0)],
      },
      {
        id: 'latency',
        title: 'Latency per variation',
        note: 'p50 (solid) and p99 (dashed) over the last 5 minutes',
        yLabel: 'milliseconds',
        format: ms,
        series: keys.flatMap((k, i) => [
          { label: `${k.label} p50`, color: i },
          { label: `${k.label} p99`, color: i, dashed: true },
        ]),
        data: [
          t,
          ...keys.flatMap((k) => [
            column(points, (p) => find(p, k)?.latency_ms.p50 ?? null),
            column(points, (p) => find(p, k)?.latency_ms.p99 ?? null),
          ]),
        ],
      },
      {
        id: 'errors',
        title: 'Errors per variation',
        note: 'failed requests in the last 5 minutes',
        yLabel: 'errors',
        format: plain,
        series: keys.map((k, i) => ({ label: k.label, color: i, ...(k.shadow ? { dashed: true } : {}) })),
        data: [t, ...perVariation((v) => v.errors_5m, 0)],
      },
    ];
  }, [points]);
  const last = points[points.length - 1]!;
  if (specs[0]!.series.length === 0) {
    return (
      <Empty title={`No predict requests to ${modelId} in the last 5 minutes.`}>
        <p>Send some and the charts appear here, one line per variation:</p>
        <Cmd>{`curl -s ${location.origin}/v1/${modelId}/predict -H "Authorization: Bearer $TOKEN" \\
  -H 'Content-Type: application/json' -d '{"columns": [...], "index": [0], "data": [[...]]}'`}</Cmd>
      </Empty>
    );
  }
  return (
    <>
      <div class="charts">
        {specs.map((s) => (
          <Chart key={s.id} spec={s} charts={charts} />
        ))}
      </div>
      <div class="table-wrap">
        <table class="latest stack">
          <caption>Latest figures of {modelId} per variation (last 5 minutes)</caption>
          <thead>
            <tr>
              <th scope="col">Variation</th>
              <th scope="col">Requests</th>
              <th scope="col">Per minute</th>
              <th scope="col">Errors</th>
              <th scope="col">p50</th>
              <th scope="col">p99</th>
            </tr>
          </thead>
          <tbody>
            {last.m.variations.map((v) => (
              <tr key={`${v.variation}-${v.shadow}`}>
                <th scope="row">
                  {v.variation}
                  {v.shadow ? <span class="tag shadow">shadow copies</span> : null}
                </th>
                <td class="num" data-label="Requests">
                  {v.requests_5m}
                </td>
                <td class="num" data-label="Per minute">
                  {num(v.throughput_rpm_5m)}
                </td>
                <td class="num" data-label="Errors">
                  {v.errors_5m}
                </td>
                <td class="num" data-label="p50">
                  {fmtMs(v.latency_ms.p50)}
                </td>
                <td class="num" data-label="p99">
                  {fmtMs(v.latency_ms.p99)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
