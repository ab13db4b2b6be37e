// Audiences: the list with each audience's conditions in words, and create from the same
// YAML/JSON file as `platform audiences create --from-file` (api_version: v1, spec.audiences).
import { useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import type { Audience } from '../types';
import { Empty, ErrorNote, PageHeader, plural, useLoad, when } from '../ui';

const EXAMPLE = `api_version: v1
spec:
  audiences:
    - name: new-york-young
      description: Young users in New York
      conditions:
        unary:
          - key: location
            operator: UNARY_OPERATOR_TYPE_EXACT_MATCH
            operand: new-york
        binary:
          - key: age
            operator: BINARY_OPERATOR_TYPE_RANGE_MATCH
            first_operand: 18
            second_operand: 30
`;

const UNARY_WORDS: Record<string, string> = {
  UNARY_OPERATOR_TYPE_EXACT_MATCH: 'is',
  UNARY_OPERATOR_TYPE_SAFE_REGEX_MATCH: 'matches the regular expression',
  UNARY_OPERATOR_TYPE_PRESENT_MATCH: 'is present',
  UNARY_OPERATOR_TYPE_PREFIX_MATCH: 'starts with',
  UNARY_OPERATOR_TYPE_SUFFIX_MATCH: 'ends with',
  UNARY_OPERATOR_TYPE_CONTAINS_MATCH: 'contains',
};

function Conditions({ a }: { a: Audience }) {
  const { unary, binary } = a.conditions;
  if (unary.length + binary.length === 0) return <span class="hint">no conditions: every request</span>;
  return (
    <ul class="plain conditions">
      {unary.map((c, i) => (
        <li key={`u${i}`}>
          header <code>{c.key}</code> {UNARY_WORDS[c.operator] ?? c.operator}
          {c.operand !== undefined ? (
            <>
              {' '}
              <code>{c.operand}</code>
            </>
          ) : null}
        </li>
      ))}
      {binary.map((c, i) => (
        <li key={`b${i}`}>
          header <code>{c.key}</code> is an integer from {c.first_operand} to below {c.second_operand}
        </li>
      ))}
    </ul>
  );
}

/** The text as YAML (JSON is YAML too); the reader is loaded only when this page parses. */
async function parseFile(text: string): Promise<unknown> {
  const { parseDocument } = await import('yaml');
  const doc = parseDocument(text);
  const error = doc.errors[0];
  if (error) {
    const pos = error.linePos?.[0];
    const where = pos ? `line ${pos.line}, column ${pos.col}` : 'unknown position';
    throw new ApiError(400, 'invalid_argument', `YAML syntax error at ${where}: ${error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`, 'file');
  }
  return doc.toJS();
}

export function AudiencesPage() {
  const { data, error, loading, reload } = useLoad((signal) => api<{ audiences: Audience[] }>('GET', '/api/v1/audiences', { signal }), []);
  const [text, setText] = useState(EXAMPLE);
  const [createError, setCreateError] = useState<unknown>(undefined);
  const [created, setCreated] = useState<Audience[] | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setCreateError(undefined);
    setCreated(undefined);
    try {
      const body = await parseFile(text);
      const res = await api<{ audiences: Audience[] }>('POST', '/api/v1/audiences', { json: body });
      setCreated(res.audiences);
      reload();
    } catch (err) {
      setCreateError(err);
    } finally {
      setBusy(false);
    }
  };

  const loadFile = async (e: Event) => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (f) setText(await f.text());
  };

  const audiences = data?.audiences ?? [];
  return (
    <section>
      <PageHeader title="Audiences">
        <button type="button" class="secondary" onClick={reload} aria-busy={loading}>
          Refresh
        </button>
      </PageHeader>
      <p class="lead">An audience is a set of request-header conditions; a deployment routes each audience's traffic to variations by weight.</p>
      <ErrorNote error={error} />
      {data && audiences.length === 0 ? (
        <Empty title="No audiences yet.">
          <p>Create one below. An audience without conditions matches every request: the usual first one, for a canary.</p>
        </Empty>
      ) : null}
      {audiences.length > 0 ? (
        <ul class="cards" aria-label="Audiences">
          {audiences.map((a) => (
            <li class="card" key={a.id} aria-labelledby={`aud-${a.id}`}>
              <div class="card-head">
                <h2 id={`aud-${a.id}`} class="h3">
                  {a.name}
                </h2>
                <code class="meta">{a.id}</code>
              </div>
              {a.description ? <p class="meta">{a.description}</p> : null}
              <Conditions a={a} />
              <p class="meta">created {when(a.created_at)}</p>
            </li>
          ))}
        </ul>
      ) : null}
      <form class="card form" onSubmit={create} aria-labelledby="create-title">
        <h2 id="create-title">Create audiences</h2>
        <div class="field">
          <label for="aud-file">Audience file</label>
          <textarea
            id="aud-file"
            class="mono"
            rows={17}
            wrap="off"
            spellcheck={false}
            value={text}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
            aria-describedby="aud-file-help"
            aria-invalid={createError ? true : undefined}
          />
          <p class="help" id="aud-file-help">
            The audience file of <code>platform audiences create --from-file</code>, in YAML or JSON. All its audiences are created, or none.
          </p>
        </div>
        <div class="field">
          <label for="aud-upload">Or load a file</label>
          <input id="aud-upload" type="file" accept=".yaml,.yml,.json,application/json,text/yaml" onChange={loadFile} />
        </div>
        <ErrorNote error={createError} />
        {created ? (
          <p class="notice success" role="status">
            Created {plural(created.length, 'audience')}: {created.map((a) => `${a.name} (${a.id})`).join(', ')}.
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create'}
        </button>
      </form>
    </section>
  );
}
