// Small pieces every page uses: loading an API answer, showing a refusal, empty states, status
// pills and number formats.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` now and on reload(); keeps the last answer on screen while a reload runs. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const abort = new AbortController();
    setLoading(true);
    loadRef.current(abort.signal).then(
      (value) => {
        if (abort.signal.aborted) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (err: unknown) => {
        if (abort.signal.aborted) return;
        setError(err);
        setLoading(false);
      },
    );
    return () => abort.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** A refusal, in words; announced to screen readers. */
export function ErrorNote({ error, id }: { error: unknown; id?: string }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="error" role="alert" id={id}>
      {messageOf(error)}
    </p>
  );
}

/** The message of `err` when it names `param` (the host's 400s name the field at fault). */
export function fieldError(err: unknown, ...params: string[]): string | undefined {
  return err instanceof ApiError && err.param !== null && params.includes(err.param) ? err.message : undefined;
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children}
    </div>
  );
}

const STATUS_CLASS: Record<string, string> = {
  LIVE: 'ok',
  PENDING: 'busy',
  DEPLOYING: 'busy',
  FAILED: 'bad',
  SUPERSEDED: 'muted',
};

export function Status({ status, label }: { status: string; label?: string }) {
  return <span class={`pill ${STATUS_CLASS[status] ?? 'muted'}`}>{label ?? status}</span>;
}

/** A command to copy, on a line of its own (it scrolls sideways rather than breaking). */
export function Cmd({ children }: { children: string }) {
  return (
    <pre class="cmd">
      <code>{children}</code>
    </pre>
  );
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1 tabIndex={-1}>{title}</h1>
      {children ? <div class="actions">{children}</div> : null}
    </div>
  );
}

/** 1536 -> "1.5 KiB". */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** Milliseconds since the epoch as a local date and time, to the minute. */
export function when(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "applied on 2/3 replicas", as the CLI says it. */
export const appliedOn = (r: { applied: number; total: number }) => `applied on ${r.applied}/${r.total} replica${r.total === 1 ? '' : 's'}`;

/** A number for a person: up to 4 significant digits. */
export function num(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (x !== 0 && Math.abs(x) < 1e-3) return x.toExponential(2);
  return String(Number(x.toPrecision(4)));
}
