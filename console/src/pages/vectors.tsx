// Vectors: the collections with their dimension, metric, vector count and tenants; for one
// collection, a random sample, a search by a vector or by the id of a stored vector, and delete
// (after typing the name). Everything through /api/v1/vectors, as the CLI does.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, seg } from '../api';
import { navigate } from '../router';
import type { Collection, SearchResult, VectorRecord } from '../types';
import { Cmd, Empty, ErrorNote, fieldError, messageOf, num, PageHeader, plural, useLoad, when } from '../ui';

/** A message the list shows once, after a collection was deleted. */
let flash: string | undefined;

export function VectorsPage({ selected }: { selected: string | undefined }) {
  return selected === undefined ? <CollectionList /> : <CollectionPage key={selected} name={selected} />;
}

async function loadCollections(signal: AbortSignal): Promise<Collection[]> {
  const { collections } = await api<{ collections: Collection[] }>('GET', '/api/v1/vectors/collections', { signal });
  // The list has no index state; each collection's own answer has its tenant count.
  return Promise.all(
    collections.map((c) => api<Collection>('GET', `/api/v1/vectors/collections/${seg(c.name)}`, { signal }).catch(() => c)),
  );
}

function tenantsOf(c: Collection): string {
  if (!c.multi_tenant) return 'single tenant';
  return c.index ? plural(c.index.tenants, 'tenant') : 'multi-tenant';
}

function CollectionList() {
  const { data, error, loading, reload } = useLoad(loadCollections, []);
  const [notice] = useState(() => {
    const n = flash;
    flash = undefined;
    return n;
  });
  return (
    <section>
      <PageHeader title="Vectors">
        <button type="button" class="secondary" onClick={reload} aria-busy={loading}>
          Refresh
        </button>
      </PageHeader>
      {notice ? (
        <p class="notice success" role="status">
          {notice}
        </p>
      ) : null}
      <ErrorNote error={error} />
      {data && data.length === 0 ? (
        <Empty title="No vector collections yet.">
          <p>Create one with</p>
          <Cmd>platform vectors collections create --name docs --dimension 384 --metric cosine</Cmd>
          <p>
            then upsert vectors with <code>POST /api/v1/vectors/upsert</code>; they appear here to sample and search.
          </p>
        </Empty>
      ) : null}
      {data && data.length > 0 ? (
        <div class="table-wrap">
          <table class="collections stack">
            <caption class="visually-hidden">Vector collections</caption>
            <thead>
              <tr>
                <th scope="col">Collection</th>
                <th scope="col">Dimension</th>
                <th scope="col">Metric</th>
                <th scope="col">Vectors</th>
                <th scope="col">Tenants</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {data.map((c) => (
                <tr key={c.name}>
                  <th scope="row">
                    <a href={`#/vectors/${encodeURIComponent(c.name)}`}>{c.name}</a>
                    {c.description ? <span class="sub">{c.description}</span> : null}
                  </th>
                  <td data-label="Dimension">{c.dimension}</td>
                  <td data-label="Metric">{c.metric}</td>
                  <td data-label="Vectors">{c.vector_count}</td>
                  <td data-label="Tenants">{tenantsOf(c)}</td>
                  <td data-label="Created">{when(c.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

/** "1, 2.5 3" or "[1, 2.5, 3]" -> numbers; a word that is not a number is named. */
export function parseVector(text: string): number[] {
  const trimmed = text.trim();
  if (trimmed === '') throw new Error('Enter the vector: numbers separated by commas or spaces.');
  const body = trimmed.startsWith('[') && trimmed.endsWith(']') ? trimmed.slice(1, -1) : trimmed;
  const words = body.split(/[\s,]+/).filter(Boolean);
  return words.map((w, i) => {
    const x = Number(w);
    if (w === '' || !Number.isFinite(x)) throw new Error(`Number ${i + 1} of the vector, "${w}", is not a number.`);
    return x;
  });
}

function parseFilter(text: string): Record<string, unknown> | undefined {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`The filter is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('The filter must be a JSON object, such as {"eq": {"color": "red"}}.');
  return value as Record<string, unknown>;
}

/** A distance to 4 significant digits; float32 rounding (5.96e-8 from a vector to itself) reads 0. */
const distance = (d: number) => (Math.abs(d) < 1e-6 ? '0' : num(d));

/** {"axis": 3, "title": "Doc"} -> "axis: 3, title: Doc". */
function props(p: Record<string, unknown> | undefined): string {
  const entries = Object.entries(p ?? {});
  if (entries.length === 0) return '—';
  return entries.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
}

function values(v: number[] | undefined): string {
  if (!v) return '';
  const shown = v.slice(0, 8).map(num).join(', ');
  return v.length > 8 ? `[${shown}, … ${v.length - 8} more]` : `[${shown}]`;
}

function CollectionPage({ name }: { name: string }) {
  const { data: c, error, reload } = useLoad((signal) => api<Collection>('GET', `/api/v1/vectors/collections/${seg(name)}`, { signal }), [name]);
  const [tenant, setTenant] = useState('');
  const [searchId, setSearchId] = useState<{ id: string; n: number } | undefined>(undefined);
  const [propertyNames, setPropertyNames] = useState('');
  const tenantBody: Record<string, string> = c?.multi_tenant && tenant.trim() !== '' ? { tenant_id: tenant.trim() } : {};
  return (
    <section>
      <p class="crumbs">
        <a href="#/vectors">← All collections</a>
      </p>
      <PageHeader title={`Collection ${name}`}>
        {c ? (
          <button type="button" class="secondary" onClick={reload}>
            Refresh
          </button>
        ) : null}
        {c ? <DeleteCollection collection={c} /> : null}
      </PageHeader>
      <ErrorNote error={error} />
      {c ? (
        <>
          <dl class="fields stats">
            <dt>Dimension</dt>
            <dd>{c.dimension}</dd>
            <dt>Metric</dt>
            <dd>{c.metric}</dd>
            <dt>Vectors</dt>
            <dd>{c.vector_count}</dd>
            <dt>Tenants</dt>
            <dd>{tenantsOf(c)}</dd>
            {c.index ? (
              <>
                <dt>Index</dt>
                <dd>
                  {c.index.indexed} indexed, {c.index.pending} pending, {c.index.tombstones} deleted{c.index.compacting ? ', compacting' : ''}
                </dd>
              </>
            ) : null}
            <dt>HNSW</dt>
            <dd>
              m {c.hnsw.m}, ef_construction {c.hnsw.ef_construction}, ef {c.hnsw.ef}
            </dd>
            {c.description ? (
              <>
                <dt>Description</dt>
                <dd>{c.description}</dd>
              </>
            ) : null}
          </dl>
          {c.multi_tenant ? (
            <div class="field tenant">
              <label for="tenant">Tenant</label>
              <input id="tenant" value={tenant} onInput={(e) => setTenant((e.target as HTMLInputElement).value)} aria-describedby="tenant-help" />
              <p class="help" id="tenant-help">
                This collection is multi-tenant: samples and searches see one tenant's vectors.
              </p>
            </div>
          ) : null}
          {c.vector_count === 0 ? (
            <Empty title="This collection has no vectors yet.">
              <p>
                Upsert some with <code>POST /api/v1/vectors/upsert</code> (<code>{`{"collection_name": "${c.name}", "vector": [{"id": "a", "values": [...]}]}`}</code>),
                then sample and search them here.
              </p>
            </Empty>
          ) : (
            <div class="two">
              <Sample
                collection={c}
                tenantBody={tenantBody}
                onSearchById={(id) => setSearchId({ id, n: Date.now() })}
                onPropertyNames={(names) => {
                  if (propertyNames.trim() === '' && names.length > 0) setPropertyNames(names.join(', '));
                }}
              />
              <Search collection={c} tenantBody={tenantBody} byId={searchId} propertyNames={propertyNames} setPropertyNames={setPropertyNames} />
            </div>
          )}
        </>
      ) : null}
    </section>
  );
}

interface SampleProps {
  collection: Collection;
  tenantBody: Record<string, string>;
  onSearchById: (id: string) => void;
  /** The property names the sampled vectors have. */
  onPropertyNames: (names: string[]) => void;
}

function Sample({ collection, tenantBody, onSearchById, onPropertyNames }: SampleProps) {
  const [count, setCount] = useState('10');
  const [rows, setRows] = useState<VectorRecord[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const res = await api<{ vectors: VectorRecord[] }>('POST', '/api/v1/vectors/sample', {
        json: { collection_name: collection.name, num_samples: Number(count), include_vector: true, ...tenantBody },
      });
      setRows(res.vectors);
      onPropertyNames([...new Set(res.vectors.flatMap((v) => Object.keys(v.properties ?? {})))]);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const countError = fieldError(error, 'num_samples');
  return (
    <div class="card panel">
      <h2 id="sample-title">Sample</h2>
      <form class="row" onSubmit={run} aria-labelledby="sample-title">
        <div class="field">
          <label for="sample-count">Number of samples</label>
          <input id="sample-count" type="number" min={1} max={1000} value={count} onInput={(e) => setCount((e.target as HTMLInputElement).value)} />
          {countError ? <p class="error">{countError}</p> : null}
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Sampling…' : 'Sample'}
        </button>
      </form>
      {!countError ? <ErrorNote error={error} /> : null}
      {rows && rows.length === 0 ? <p class="hint">No vectors{tenantBody.tenant_id ? ` for tenant ${tenantBody.tenant_id}` : ''}.</p> : null}
      {rows && rows.length > 0 ? (
        <div class="table-wrap">
          <table class="stack" aria-label="Sampled vectors">
            <thead>
              <tr>
                <th scope="col">Id</th>
                <th scope="col">Values</th>
                <th scope="col">Properties</th>
                <th scope="col">
                  <span class="visually-hidden">Action</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((v) => (
                <tr key={v.id}>
                  <th scope="row">
                    <code>{v.id}</code>
                  </th>
                  <td class="mono" data-label="Values">
                    {values(v.values)}
                  </td>
                  <td class="props" data-label="Properties">
                    {props(v.properties)}
                  </td>
                  <td>
                    <button type="button" class="link" onClick={() => onSearchById(v.id ?? '')} aria-label={`Search near ${v.id}`}>
                      Search near
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}

interface SearchProps {
  collection: Collection;
  tenantBody: Record<string, string>;
  byId: { id: string; n: number } | undefined;
  propertyNames: string;
  setPropertyNames: (names: string) => void;
}

function Search({ collection, tenantBody, byId, propertyNames, setPropertyNames }: SearchProps) {
  const [mode, setMode] = useState<'vector' | 'id'>('vector');
  const [vectorText, setVectorText] = useState('');
  const [id, setId] = useState('');
  const [max, setMax] = useState('10');
  const [filter, setFilter] = useState('');
  const [results, setResults] = useState<{ rows: SearchResult[]; what: string; withProperties: boolean } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const resultsRef = useRef<HTMLHeadingElement>(null);

  const search = async (how: 'vector' | 'id', idValue: string) => {
    setBusy(true);
    setError(undefined);
    try {
      let element: number[];
      let what: string;
      if (how === 'vector') {
        element = parseVector(vectorText);
        what = `the vector [${element.slice(0, 4).map(num).join(', ')}${element.length > 4 ? ', …' : ''}]`;
      } else {
        if (idValue.trim() === '') throw new Error('Enter the id of a stored vector.');
        const tenant = tenantBody.tenant_id ? `?tenant_id=${encodeURIComponent(tenantBody.tenant_id)}` : '';
        const { vector } = await api<{ vector: VectorRecord }>('GET', `/api/v1/vectors/collections/${seg(collection.name)}/${seg(idValue.trim())}${tenant}`);
        element = vector.values ?? [];
        what = `the stored vector ${idValue.trim()}`;
      }
      const names = propertyNames
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean);
      const parsedFilter = parseFilter(filter);
      const res = await api<{ search_results: SearchResult[] }>('POST', '/api/v1/vectors/search', {
        json: {
          collection_name: collection.name,
          reference_vector: { element },
          max_results: Number(max),
          include_distance: true,
          ...tenantBody,
          ...(names.length > 0 ? { properties: names } : {}),
          ...(parsedFilter ? { filter: parsedFilter } : {}),
        },
      });
      setResults({ rows: res.search_results, what, withProperties: names.length > 0 });
      requestAnimationFrame(() => resultsRef.current?.focus());
    } catch (err) {
      setError(err);
      setResults(undefined);
    } finally {
      setBusy(false);
    }
  };

  // "Search near" in the sample: search by that id at once.
  useEffect(() => {
    if (!byId) return;
    setMode('id');
    setId(byId.id);
    void search('id', byId.id);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [byId]);

  const vectorError = fieldError(error, 'reference_vector', 'reference_vector.element');
  const maxError = fieldError(error, 'max_results');
  const filterError = fieldError(error, 'filter') ?? (error instanceof Error && error.message.startsWith('The filter') ? error.message : undefined);
  const shownElsewhere = vectorError ?? maxError ?? filterError;
  return (
    <div class="card panel">
      <h2 id="search-title">Search</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void search(mode, id);
        }}
        aria-labelledby="search-title"
      >
        <fieldset class="choice">
          <legend>Search by</legend>
          <label>
            <input type="radio" name="search-mode" value="vector" checked={mode === 'vector'} onChange={() => setMode('vector')} /> a vector
          </label>
          <label>
            <input type="radio" name="search-mode" value="id" checked={mode === 'id'} onChange={() => setMode('id')} /> the id of a stored vector
          </label>
        </fieldset>
        {mode === 'vector' ? (
          <div class="field">
            <label for="search-vector">Reference vector ({collection.dimension} numbers)</label>
            <textarea
              id="search-vector"
              rows={3}
              class="mono"
              placeholder={Array.from({ length: Math.min(collection.dimension, 4) }, (_, i) => (i + 1) / 10).join(', ') + (collection.dimension > 4 ? ', …' : '')}
              value={vectorText}
              onInput={(e) => setVectorText((e.target as HTMLTextAreaElement).value)}
              aria-invalid={vectorError ? true : undefined}
            />
            {vectorError ? <p class="error">{vectorError}</p> : null}
          </div>
        ) : (
          <div class="field">
            <label for="search-id">Vector id</label>
            <input id="search-id" value={id} onInput={(e) => setId((e.target as HTMLInputElement).value)} />
          </div>
        )}
        <div class="row">
          <div class="field small">
            <label for="search-max">Max results</label>
            <input id="search-max" type="number" min={1} max={1000} value={max} onInput={(e) => setMax((e.target as HTMLInputElement).value)} />
            {maxError ? <p class="error">{maxError}</p> : null}
          </div>
          <div class="field grow">
            <label for="search-filter">Filter (optional JSON)</label>
            <input id="search-filter" class="mono" placeholder='{"eq": {"color": "red"}}' value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
            {filterError ? <p class="error">{filterError}</p> : null}
          </div>
        </div>
        <div class="field">
          <label for="search-properties">Properties to return (optional)</label>
          <input
            id="search-properties"
            spellcheck={false}
            placeholder="title, color"
            value={propertyNames}
            onInput={(e) => setPropertyNames((e.target as HTMLInputElement).value)}
            aria-describedby="search-properties-help"
          />
          <p class="help" id="search-properties-help">
            Comma-separated names: a search answers with the properties it is asked for. A sample fills in the names it finds.
          </p>
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Searching…' : 'Search'}
        </button>
      </form>
      {!shownElsewhere ? <ErrorNote error={error} /> : null}
      {results ? (
        <div class="results">
          <h3 tabIndex={-1} ref={resultsRef}>
            {plural(results.rows.length, 'result')} near {results.what}
          </h3>
          {results.rows.length > 0 ? (
            <div class="table-wrap">
              <table class="stack" aria-label="Search results">
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Id</th>
                    <th scope="col">Distance</th>
                    {results.withProperties ? <th scope="col">Properties</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {results.rows.map((r, i) => (
                    <tr key={r.id ?? i}>
                      <td class="rank" data-label="#">
                        {i + 1}
                      </td>
                      <th scope="row">
                        <code>{r.id}</code>
                      </th>
                      <td class="num" data-label="Distance">
                        {r.distance !== undefined ? distance(r.distance) : ''}
                      </td>
                      {results.withProperties ? (
                        <td class="props" data-label="Properties">
                          {props(r.properties)}
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}

function DeleteCollection({ collection }: { collection: Collection }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const confirm = async (e: Event) => {
    e.preventDefault();
    if (typed !== collection.name) return;
    setBusy(true);
    try {
      await api('DELETE', `/api/v1/vectors/collections/${seg(collection.name)}`);
      dialog.current?.close();
      flash = `Deleted the collection ${collection.name} and its ${plural(collection.vector_count, 'vector')}.`;
      navigate('vectors');
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        class="danger"
        onClick={() => {
          setTyped('');
          setError(undefined);
          dialog.current?.showModal();
        }}
      >
        Delete collection
      </button>
      <dialog ref={dialog} aria-labelledby="delete-title" aria-describedby="delete-what">
        <form onSubmit={confirm}>
          <h2 id="delete-title">Delete {collection.name}?</h2>
          <p id="delete-what">
            This removes the collection with its {plural(collection.vector_count, 'vector')} and index files, on every replica. It cannot be undone.
          </p>
          <div class="field">
            <label for="delete-confirm">Type the collection's name to confirm</label>
            <input id="delete-confirm" autocomplete="off" value={typed} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />
          </div>
          <ErrorNote error={error ? messageOf(error) : undefined} />
          <div class="actions">
            <button type="button" class="secondary" onClick={() => dialog.current?.close()}>
              Cancel
            </button>
            <button type="submit" class="danger" disabled={typed !== collection.name || busy}>
              {busy ? 'Deleting…' : 'Delete'}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}
