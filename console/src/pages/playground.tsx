// Playground: chat with a live library model through the same OpenAI-compatible route as any
// client (POST /v1/chat/completions, stream: true). The answer is read as Server-Sent Events with
// fetch and a ReadableStream and shown token by token; each answer gets its time to first token
// and tokens per second, measured in this browser. Stop aborts the request, which cancels the
// generation on the host.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, apiResponse } from '../api';
import type { LibraryDeployment } from '../types';
import { Empty, ErrorNote, fieldError, messageOf, PageHeader, useLoad } from '../ui';
import { navigate } from '../router';
import './playground.css';

interface AnswerStats {
  /** Send to the first text, ms (this browser's clock). */
  ttftMs: number | null;
  /** Tokens after the first per second of generation; null with fewer than two tokens. */
  tokensPerSecond: number | null;
  /** The host's count (usage), or the text events received when the answer was stopped. */
  tokens: number;
  exact: boolean;
  totalMs: number;
  finish: string | null;
}

interface Turn {
  role: 'user' | 'assistant';
  content: string;
  model?: string;
  streaming?: boolean;
  /** Text events received: more than one means the answer arrived in pieces. */
  deltas?: number;
  stats?: AnswerStats;
  stopped?: boolean;
  error?: string;
}

async function loadLive(signal: AbortSignal): Promise<LibraryDeployment[]> {
  const { deployments } = await api<{ deployments: LibraryDeployment[] }>('GET', '/api/v1/library/deployments', { signal });
  return deployments.filter((d) => d.status === 'LIVE');
}

/** The events of an SSE body, one `data:` payload at a time. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).replace(/^ /, ''))
          .join('\n');
        if (data !== '') yield data;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

const fmtMs = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

export function PlaygroundPage({ modelId }: { modelId?: string }) {
  const live = useLoad(loadLive, []);
  const models = live.data ?? [];
  const model = modelId && models.some((m) => m.model_id === modelId) ? modelId : models[0]?.model_id;
  const [temperature, setTemperature] = useState(0.7);
  const [maxTokens, setMaxTokens] = useState('128');
  const [system, setSystem] = useState('');
  const [draft, setDraft] = useState('');
  const [turns, setTurns] = useState<Turn[]>([]);
  const [streaming, setStreaming] = useState(false);
  const [formError, setFormError] = useState<unknown>(undefined);
  const abort = useRef<AbortController | null>(null);
  const log = useRef<HTMLOListElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);

  // Leaving the page stops a generation in flight.
  useEffect(() => () => abort.current?.abort(), []);
  // The newest text stays in view.
  useEffect(() => {
    const el = log.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [turns]);

  const maxTokensNumber = Number(maxTokens);
  const maxTokensBad = maxTokens.trim() === '' || !Number.isInteger(maxTokensNumber) || maxTokensNumber < 1;
  const maxTokensError = fieldError(formError, 'max_tokens') ?? (maxTokensBad ? 'Max tokens is a whole number from 1.' : undefined);
  const temperatureError = fieldError(formError, 'temperature');

  async function send(e?: Event) {
    e?.preventDefault();
    const text = draft.trim();
    if (!model || text === '' || streaming || maxTokensBad) return;
    const history: Turn[] = [...turns.filter((t) => !t.error && t.content !== ''), { role: 'user', content: text }];
    const messages = [...(system.trim() ? [{ role: 'system', content: system.trim() }] : []), ...history.map((t) => ({ role: t.role, content: t.content }))];
    const controller = new AbortController();
    abort.current = controller;
    setDraft('');
    setFormError(undefined);
    setStreaming(true);
    const answer: Turn = { role: 'assistant', content: '', model, streaming: true, deltas: 0 };
    const shown = [...turns, { role: 'user' as const, content: text }];
    const update = (patch: Partial<Turn>) => {
      Object.assign(answer, patch);
      setTurns([...shown, { ...answer }]);
    };
    update({});
    const started = performance.now();
    let first: number | null = null;
    let last = started;
    let usageTokens: number | null = null;
    let finish: string | null = null;
    const stats = (): AnswerStats => {
      const tokens = usageTokens ?? answer.deltas ?? 0;
      const generating = first !== null ? last - first : 0;
      return {
        ttftMs: first === null ? null : first - started,
        tokensPerSecond: first !== null && tokens > 1 && generating > 0 ? ((tokens - 1) * 1000) / generating : null,
        tokens,
        exact: usageTokens !== null,
        totalMs: last - started,
        finish,
      };
    };
    try {
      const res = await apiResponse('POST', '/v1/chat/completions', {
        json: {
          model,
          messages,
          temperature,
          max_tokens: maxTokensNumber,
          stream: true,
          stream_options: { include_usage: true },
        },
        signal: controller.signal,
      });
      if (!res.body) throw new Error('the answer has no body to stream');
      for await (const data of sseData(res.body)) {
        if (data === '[DONE]') break;
        const chunk = JSON.parse(data) as {
          error?: { message?: string };
          choices?: Array<{ delta?: { content?: string }; finish_reason?: string | null }>;
          usage?: { completion_tokens?: number } | null;
        };
        if (chunk.error) throw new Error(chunk.error.message ?? 'the generation failed');
        const choice = chunk.choices?.[0];
        const piece = choice?.delta?.content ?? '';
        if (piece !== '') {
          const now = performance.now();
          if (first === null) first = now;
          last = now;
          update({ content: answer.content + piece, deltas: (answer.deltas ?? 0) + 1 });
        }
        if (choice?.finish_reason) finish = choice.finish_reason;
        if (chunk.usage && typeof chunk.usage.completion_tokens === 'number') usageTokens = chunk.usage.completion_tokens;
      }
      update({ streaming: false, stats: stats() });
    } catch (err) {
      if ((err as Error).name === 'AbortError') {
        update({ streaming: false, stopped: true, stats: stats() });
      } else if (err instanceof ApiError && err.param && ['max_tokens', 'temperature', 'messages'].includes(err.param) && answer.content === '') {
        // A refusal of a setting: shown beside the setting; the message goes back in the box.
        setFormError(err);
        setTurns(turns);
        setDraft(text);
      } else {
        update({ streaming: false, error: messageOf(err), stats: answer.content ? stats() : undefined });
      }
    } finally {
      abort.current = null;
      setStreaming(false);
      input.current?.focus();
    }
  }

  function stop() {
    abort.current?.abort();
  }

  if (live.error) {
    return (
      <section aria-labelledby="playground-title">
        <PageHeader title="Playground" />
        <ErrorNote error={live.error} />
      </section>
    );
  }

  return (
    <section aria-labelledby="playground-title" class="playground">
      <PageHeader title="Playground">
        <button type="button" class="secondary" onClick={live.reload} aria-busy={live.loading}>
          Refresh
        </button>
      </PageHeader>
      {live.data && models.length === 0 ? (
        <Empty title="No library model is live.">
          <p>
            Deploy a GGUF file on the <a href="#/library">Library</a> page, then come back to chat with it. If the library is empty, put GGUF files in
            the host's <code>MODELS_DIR</code> first.
          </p>
        </Empty>
      ) : null}
      {model ? (
        <>
          <div class="settings row">
            <div class="field grow">
              <label for="pg-model">Model</label>
              <select
                id="pg-model"
                value={model}
                disabled={streaming}
                onChange={(e) => {
                  navigate('playground', (e.target as HTMLSelectElement).value);
                  setTurns([]);
                }}
              >
                {models.map((m) => (
                  <option key={m.model_id} value={m.model_id}>
                    {m.model_id} ({m.name}, {m.instance_type})
                  </option>
                ))}
              </select>
            </div>
            <div class="field temperature">
              <label for="pg-temperature">
                Temperature <output for="pg-temperature">{temperature.toFixed(2)}</output>
              </label>
              <input
                id="pg-temperature"
                type="range"
                min={0}
                max={2}
                step={0.05}
                value={temperature}
                onInput={(e) => setTemperature(Number((e.target as HTMLInputElement).value))}
                aria-invalid={temperatureError ? 'true' : undefined}
                aria-describedby={temperatureError ? 'pg-temperature-error' : 'pg-temperature-help'}
              />
              {temperatureError ? (
                <p class="error" id="pg-temperature-error" role="alert">
                  {temperatureError}
                </p>
              ) : (
                <p class="help" id="pg-temperature-help">
                  0: always the likeliest token.
                </p>
              )}
            </div>
            <div class="field small">
              <label for="pg-max-tokens">Max tokens</label>
              <input
                id="pg-max-tokens"
                type="number"
                min={1}
                max={32768}
                inputMode="numeric"
                value={maxTokens}
                onInput={(e) => setMaxTokens((e.target as HTMLInputElement).value)}
                aria-invalid={maxTokensError ? 'true' : undefined}
                aria-describedby={maxTokensError ? 'pg-max-tokens-error' : 'pg-max-tokens-help'}
              />
              {maxTokensError ? (
                <p class="error" id="pg-max-tokens-error" role="alert">
                  {maxTokensError}
                </p>
              ) : (
                <p class="help" id="pg-max-tokens-help">
                  Per answer.
                </p>
              )}
            </div>
          </div>
          <div class="field">
            <label for="pg-system">System prompt (optional)</label>
            <textarea id="pg-system" rows={2} value={system} onInput={(e) => setSystem((e.target as HTMLTextAreaElement).value)} />
          </div>
          <ol class="chat" ref={log} aria-label={`Conversation with ${model}`}>
            {turns.length === 0 ? (
              <li class="chat-empty">
                Send a message to start. The answer streams in token by token, with its time to first token (TTFT) and tokens per second below it.
              </li>
            ) : null}
            {turns.map((t, i) => (
              <li key={i} class={`turn ${t.role}`}>
                <span class="who">{t.role === 'user' ? 'You' : t.model}</span>
                <div class="bubble" data-deltas={t.deltas} aria-busy={t.streaming ? 'true' : undefined}>
                  {t.content}
                  {t.streaming ? <span class="caret" aria-hidden="true" /> : null}
                  {t.role === 'assistant' && !t.streaming && t.content === '' && !t.error ? <em class="hint">(no text)</em> : null}
                </div>
                {t.role === 'assistant' ? <AnswerMeta turn={t} /> : null}
              </li>
            ))}
          </ol>
          <form class="composer" onSubmit={send}>
            <div class="field grow">
              <label for="pg-message">Message</label>
              <textarea
                id="pg-message"
                ref={input}
                rows={3}
                value={draft}
                placeholder="Tell me a story"
                aria-describedby="pg-message-help"
                onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                    e.preventDefault();
                    void send();
                  } else if (e.key === 'Escape' && streaming) {
                    e.preventDefault();
                    stop();
                  }
                }}
              />
              <p class="help" id="pg-message-help">
                Enter sends, Shift+Enter starts a new line, Escape stops the answer.
              </p>
            </div>
            <div class="composer-actions">
              <button type="submit" disabled={streaming || draft.trim() === '' || maxTokensBad}>
                Send
              </button>
              <button type="button" class="danger" onClick={stop} disabled={!streaming}>
                Stop
              </button>
              <button type="button" class="secondary" onClick={() => setTurns([])} disabled={streaming || turns.length === 0}>
                Clear
              </button>
            </div>
          </form>
          <ErrorNote error={formError && !fieldError(formError, 'max_tokens', 'temperature') ? formError : undefined} />
        </>
      ) : null}
    </section>
  );
}

function AnswerMeta({ turn }: { turn: Turn }) {
  const s = turn.stats;
  if (turn.streaming) {
    return (
      <p class="answer-meta" aria-hidden="true">
        streaming…
      </p>
    );
  }
  return (
    <>
      {turn.error ? (
        <p class="error" role="alert">
          {turn.error}
        </p>
      ) : null}
      {s ? (
        <p class="answer-meta" role="status">
          <span class="stat" data-stat="ttft">
            TTFT <strong>{s.ttftMs === null ? '–' : fmtMs(s.ttftMs)}</strong>
          </span>
          <span class="stat" data-stat="tps">
            <strong>{s.tokensPerSecond === null ? '–' : s.tokensPerSecond.toFixed(1)}</strong> tok/s
          </span>
          <span class="stat">
            {s.exact ? '' : '≈ '}
            {s.tokens} token{s.tokens === 1 ? '' : 's'} in {fmtMs(s.totalMs)}
          </span>
          {turn.stopped ? <span class="stat stopped">stopped</span> : s.finish ? <span class="stat">finish: {s.finish}</span> : null}
        </p>
      ) : null}
    </>
  );
}
