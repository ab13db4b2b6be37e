// Build upload: an ONNX file from the browser, with its feature and output names, as a new build
// of a realtime model (created here first when it is new): POST /api/v1/models/<id>/builds with
// the raw bytes, as `platform models build` sends them. The host's 400s appear beside the field.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, seg } from '../api';
import type { Build, Model } from '../types';
import { bytes, Cmd, ErrorNote, fieldError, PageHeader, useLoad } from '../ui';

const NEW = '\u0000new';

/** "a, b ,c" -> "a,b,c"; an empty name is refused here, as the CLI does. */
function names(text: string, what: string): string | undefined {
  if (text.trim() === '') return undefined;
  const list = text.split(',').map((n) => n.trim());
  if (list.some((n) => n === '')) throw new ApiError(400, 'invalid_argument', `${what} has an empty name; give comma-separated names`, what === 'Feature names' ? 'feature_names' : 'output_names');
  return list.join(',');
}

export function BuildUploadPage({ modelId }: { modelId: string | undefined }) {
  const models = useLoad((signal) => api<{ models: Model[] }>('GET', '/api/v1/models', { signal }), []);
  const realtime = models.data?.models.filter((m) => m.kind === 'realtime') ?? [];
  const [choice, setChoice] = useState<string | undefined>(modelId);
  const [newId, setNewId] = useState('');
  const [description, setDescription] = useState('');
  const [file, setFile] = useState<File | undefined>(undefined);
  const [features, setFeatures] = useState('');
  const [outputs, setOutputs] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<Build | undefined>(undefined);
  const doneRef = useRef<HTMLHeadingElement>(null);

  // Until the user picks: the model in the address, else the first realtime model, else a new one.
  const selected = choice ?? (models.data ? (realtime[0]?.model_id ?? NEW) : undefined);
  useEffect(() => {
    if (done) doneRef.current?.focus();
  }, [done]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    try {
      const creating = selected === NEW;
      const id = creating ? newId.trim() : selected;
      if (!id) throw new ApiError(400, 'invalid_argument', creating ? 'Enter the new model id.' : 'Choose a model.', 'model_id');
      if (!file) throw new ApiError(400, 'invalid_argument', 'Choose the ONNX file to upload.', 'file');
      const query = new URLSearchParams();
      const f = names(features, 'Feature names');
      const o = names(outputs, 'Output names');
      if (f !== undefined) query.set('feature_names', f);
      if (o !== undefined) query.set('output_names', o);
      setBusy(true);
      if (creating) {
        await api<Model>('POST', '/api/v1/models', { json: { model_id: id, ...(description.trim() ? { description: description.trim() } : {}) } });
        setChoice(id);
        models.reload();
      }
      const qs = query.size > 0 ? `?${query}` : '';
      setDone(await api<Build>('POST', `/api/v1/models/${seg(id)}/builds${qs}`, { bytes: file }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  // The host names the field at fault: the file, or the names given for it.
  const modelError = fieldError(error, 'model_id', 'description');
  const featureError = fieldError(error, 'feature_names');
  const outputError = fieldError(error, 'output_names');
  const fileError = featureError || outputError ? undefined : fieldError(error, 'file');
  const elsewhere = !modelError && !fileError && !featureError && !outputError;
  return (
    <section>
      <PageHeader title="Build upload" />
      <p class="lead">
        Upload an ONNX file as a new build of a realtime model. Its input must be one float tensor of shape <code>[N, features]</code>, as
        skl2onnx, <code>torch.onnx.export</code> and tf2onnx write tabular models; the host checks every operator on upload.
      </p>
      <ErrorNote error={models.error} />
      <form class="card form narrow" onSubmit={submit} noValidate>
        <div class="field">
          <label for="build-model">Model</label>
          <select id="build-model" value={selected ?? ''} onChange={(e) => setChoice((e.target as HTMLSelectElement).value)} disabled={!models.data}>
            {realtime.map((m) => (
              <option key={m.model_id} value={m.model_id}>
                {m.model_id}
              </option>
            ))}
            <option value={NEW}>A new model…</option>
          </select>
        </div>
        {selected === NEW ? (
          <div class="row">
            <div class="field grow">
              <label for="build-new-id">New model id</label>
              <input
                id="build-new-id"
                value={newId}
                autocomplete="off"
                spellcheck={false}
                placeholder="fraud"
                onInput={(e) => setNewId((e.target as HTMLInputElement).value)}
                aria-invalid={modelError ? true : undefined}
                aria-describedby="build-new-id-help"
              />
              <p class="help" id="build-new-id-help">
                Lowercase letters, digits, "_" and "-"; at most 64.
              </p>
            </div>
            <div class="field grow">
              <label for="build-description">Description (optional)</label>
              <input id="build-description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
            </div>
          </div>
        ) : null}
        {modelError ? <p class="error">{modelError}</p> : null}
        <div class="field">
          <label for="build-file">ONNX file</label>
          <input
            id="build-file"
            type="file"
            accept=".onnx,application/octet-stream"
            onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0])}
            aria-invalid={fileError ? true : undefined}
          />
          {file ? <p class="help">{`${file.name}, ${bytes(file.size)}`}</p> : null}
          {fileError ? <p class="error">{fileError}</p> : null}
        </div>
        <NamesField
          id="build-features"
          label="Feature names (optional)"
          placeholder="amount, age, country"
          help="Comma-separated, in the order of the model's input columns. Predict requests name their columns with them."
          value={features}
          setValue={setFeatures}
          error={featureError}
        />
        <NamesField
          id="build-outputs"
          label="Output names (optional)"
          placeholder="score"
          help="Comma-separated names for the model's outputs, as the answers will carry them."
          value={outputs}
          setValue={setOutputs}
          error={outputError}
        />
        {elsewhere ? <ErrorNote error={error} /> : null}
        <button type="submit" disabled={busy || !models.data}>
          {busy ? 'Uploading…' : 'Upload build'}
        </button>
      </form>
      {done ? (
        <div class="card result narrow" role="status">
          <h2 tabIndex={-1} ref={doneRef}>
            Build <code>{done.build_id}</code> uploaded
          </h2>
          <dl class="fields">
            <dt>Model</dt>
            <dd>{done.model_id}</dd>
            <dt>Features</dt>
            <dd>{done.features.map((f) => `${f.name} (${f.type})`).join(', ')}</dd>
            <dt>Outputs</dt>
            <dd>{done.outputs.join(', ')}</dd>
            <dt>Operators</dt>
            <dd>{done.operators.join(', ')}</dd>
            <dt>Size</dt>
            <dd>{bytes(done.size_bytes)}</dd>
            <dt>SHA-256</dt>
            <dd class="mono break">{done.sha256}</dd>
          </dl>
          <p class="hint">Deploy it with</p>
          <Cmd>{`platform models deploy realtime --model-id ${done.model_id} --build-id ${done.build_id} --wait`}</Cmd>
          <p class="hint">
            then see it on <a href="#/models">Models</a>.
          </p>
        </div>
      ) : null}
    </section>
  );
}

/** A comma-separated list of names (features, outputs), with its help and the host's refusal. */
function NamesField(props: {
  id: string;
  label: string;
  placeholder: string;
  help: string;
  value: string;
  setValue: (value: string) => void;
  error: string | undefined;
}) {
  const { id, error } = props;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        value={props.value}
        spellcheck={false}
        placeholder={props.placeholder}
        onInput={(e) => props.setValue((e.target as HTMLInputElement).value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={`${id}-help`}
      />
      <p class="help" id={`${id}-help`}>
        {props.help}
      </p>
      {error ? <p class="error">{error}</p> : null}
    </div>
  );
}
