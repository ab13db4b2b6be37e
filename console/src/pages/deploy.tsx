// The deploy dialog: SPEC.md's five steps, as `platform models deploy realtime --interactive` walks
// them. (1) A build of the model; (2) a new variation name, or an existing variation to replace;
// (3) the Traffic Control tab: every audience in order, one row per variation with a weight and a
// shadow toggle, and a live sum that must read 100; (4) the fallback variation, from a list;
// (5) a diff of what changes, then confirm. It sends the same body as the CLI's deployment file,
// POST /api/v1/models/<id>/deployments, and follows the deployment PENDING -> DEPLOYING -> LIVE
// (or FAILED with the reason) at GET /api/v1/deployments/<id>. The host's 400s name the field at
// fault (param); the dialog goes back to that step and shows the message beside the field.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, seg } from '../api';
import { navigate } from '../router';
import type { Audience, Build, Deployment, Model, ModelDetails } from '../types';
import { Empty, ErrorNote, PageHeader, Status, messageOf, useLoad, when } from '../ui';
import './deploy.css';

type Step = 1 | 2 | 3 | 4 | 5;
type InstanceType = 'cpu' | 'cuda';
type Traffic = Deployment['traffic'];

const STEPS: Array<{ n: Step; label: string }> = [
  { n: 1, label: 'Build' },
  { n: 2, label: 'Variation' },
  { n: 3, label: 'Traffic Control' },
  { n: 4, label: 'Fallback' },
  { n: 5, label: 'Review and confirm' },
];

/** The key of the new variation's rows while its name is still being typed. */
const NEW_KEY = '\u0000new';

interface RouteDraft {
  weight: string;
  shadow: boolean;
}

interface AudienceDraft {
  id: string;
  attached: boolean;
  routes: Record<string, RouteDraft>;
}

interface DialogData {
  details: ModelDetails;
  builds: Build[];
  audiences: Audience[];
}

interface RouteBody {
  variation_name: string;
  weight: number;
  shadow: boolean;
}

interface DeployBody {
  build_id: string;
  variation_name: string;
  instance_type: InstanceType;
  audiences?: Array<{ id: string; routes: RouteBody[]; fallback_variation: string }>;
}

interface Problem {
  step: Step;
  text: string;
}

export function DeployDialogPage({ modelId, buildId }: { modelId?: string; buildId?: string }) {
  if (!modelId) return <ChooseModel />;
  return <DeployDialog key={`${modelId}/${buildId ?? ''}`} modelId={modelId} buildId={buildId} />;
}

/** Without a model in the address: which one to deploy. */
function ChooseModel() {
  const { data, error } = useLoad((signal) => api<{ models: Model[] }>('GET', '/api/v1/models', { signal }), []);
  const realtime = data?.models.filter((m) => m.kind === 'realtime') ?? [];
  const [choice, setChoice] = useState<string | undefined>(undefined);
  const selected = choice ?? realtime[0]?.model_id;
  return (
    <section class="dd">
      <PageHeader title="Deploy" />
      <p class="lead">Deploy a build of a realtime model as a variation, and set how each audience's traffic is split between the variations.</p>
      <ErrorNote error={error} />
      {data && realtime.length === 0 ? (
        <Empty title="No realtime models yet.">
          <p>
            <a href="#/builds">Upload an ONNX build</a> first: the upload page creates the model too. Then come back here to deploy it.
          </p>
        </Empty>
      ) : null}
      {realtime.length > 0 ? (
        <form
          class="card form narrow"
          aria-labelledby="deploy-choose-title"
          onSubmit={(e) => {
            e.preventDefault();
            if (selected) navigate('deploy', selected);
          }}
        >
          <h2 id="deploy-choose-title">Which model?</h2>
          <div class="field">
            <label for="deploy-model">Model</label>
            <select id="deploy-model" value={selected} onChange={(e) => setChoice((e.target as HTMLSelectElement).value)}>
              {realtime.map((m) => (
                <option key={m.model_id} value={m.model_id}>
                  {m.model_id}
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Choose a build</button>
        </form>
      ) : null}
    </section>
  );
}

async function loadDialog(modelId: string, signal: AbortSignal): Promise<DialogData> {
  const id = seg(modelId);
  const [details, { builds }, { audiences }] = await Promise.all([
    api<ModelDetails>('GET', `/api/v1/models/${id}`, { signal }),
    api<{ builds: Build[] }>('GET', `/api/v1/models/${id}/builds`, { signal }),
    api<{ audiences: Audience[] }>('GET', '/api/v1/audiences', { signal }),
  ]);
  return { details, builds, audiences };
}

function DeployDialog({ modelId, buildId }: { modelId: string; buildId?: string }) {
  const { data, error, reload } = useLoad((signal) => loadDialog(modelId, signal), [modelId]);
  const [round, setRound] = useState(0);
  const title = `Deploy ${modelId}`;
  if (!data) {
    return (
      <section class="dd">
        <PageHeader title={title} />
        <ErrorNote error={error} />
        {!error ? <p class="hint">Loading the model, its builds and the audiences…</p> : null}
      </section>
    );
  }
  const { details, builds } = data;
  if (details.model.kind !== 'realtime') {
    return (
      <section class="dd">
        <PageHeader title={title} />
        <Empty title={`${modelId} is a library model.`}>
          <p>Library models are deployed from their GGUF file, not from builds; see the Models page.</p>
        </Empty>
      </section>
    );
  }
  if (builds.length === 0) {
    return (
      <section class="dd">
        <PageHeader title={title} />
        <Empty title={`${modelId} has no build yet.`}>
          <p>
            <a href={`#/builds/${encodeURIComponent(modelId)}`}>Upload an ONNX build</a> of it, then deploy that build here.
          </p>
        </Empty>
      </section>
    );
  }
  return (
    <Wizard
      // A new round, or new live traffic after a reload: the dialog starts again from it.
      key={`${round}/${details.live_deployment?.deployment_id ?? ''}/${details.deployment_in_progress?.deployment_id ?? ''}`}
      title={title}
      modelId={modelId}
      data={data}
      initialBuild={buildId}
      onAgain={() => {
        reload();
        setRound((r) => r + 1);
      }}
    />
  );
}

/** The audiences in the order the dialog shows them: the live routing order, then the others. */
function initialDrafts(audiences: Audience[], live: Traffic | undefined, keys: string[]): AudienceDraft[] {
  const liveAudiences = live?.audiences ?? [];
  const ordered = [...liveAudiences.map((a) => a.id), ...audiences.map((a) => a.id).filter((id) => !liveAudiences.some((l) => l.id === id))];
  return ordered.map((id) => {
    const routed = liveAudiences.find((l) => l.id === id);
    const routes: Record<string, RouteDraft> = {};
    for (const k of keys) {
      const r = routed?.routes.find((x) => x.variation_name === k);
      routes[k] = { weight: String(r?.weight ?? 0), shadow: r?.shadow ?? false };
    }
    return { id, attached: routed !== undefined, routes };
  });
}

/** "90", "12.5": a weight from 0 to 100, or undefined. */
function weightOf(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) && n >= 0 && n <= 100 ? n : undefined;
}

/** 33.3 + 66.7 reads 100, not 100.00000000000001. */
const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

function sumOf(draft: AudienceDraft, keys: string[]): { sum: number; invalid: boolean; shadows: string[] } {
  let sum = 0;
  let invalid = false;
  const shadows: string[] = [];
  for (const k of keys) {
    const r = draft.routes[k] ?? { weight: '0', shadow: false };
    const w = weightOf(r.weight);
    if (w === undefined) invalid = true;
    if (r.shadow) shadows.push(k);
    else sum += w ?? 0;
  }
  return { sum: round6(sum), invalid, shadows };
}

/** Which step and which field a refusal of the host is about, from the param it names. */
function placeOf(err: unknown, attachedIds: string[]): { step: Step; audience?: string; field: string } {
  const param = err instanceof ApiError ? err.param : null;
  if (param === 'build_id') return { step: 1, field: 'deploy-build' };
  if (param === 'variation_name') return { step: 2, field: 'deploy-variation' };
  if (param === 'instance_type') return { step: 2, field: 'deploy-instance' };
  if (param) {
    const m = /^realtime\.audiences(?:\[(\d+)\])?(?:\.(\w+))?/.exec(param);
    if (m) {
      if (m[2] === 'fallback_variation') return { step: 4, field: 'deploy-fallback' };
      const audience = m[1] !== undefined ? attachedIds[Number(m[1])] : undefined;
      return { step: 3, audience, field: audience ? `aud-${audience}` : 'traffic-title' };
    }
  }
  return { step: 5, field: 'deploy-confirm' };
}

interface WizardProps {
  title: string;
  modelId: string;
  data: DialogData;
  initialBuild: string | undefined;
  onAgain: () => void;
}

function Wizard({ title, modelId, data, initialBuild, onAgain }: WizardProps) {
  const live = data.details.live_deployment?.traffic;
  const existing = Object.keys(live?.variations ?? {});
  const newest = [...data.builds].sort((a, b) => b.created_at - a.created_at)[0]!;
  const audienceName = new Map(data.audiences.map((a) => [a.id, a.name]));

  const [step, setStep] = useState<Step>(1);
  // A step is flagged only once it has been seen: no red marks on steps not reached yet.
  const [seen, setSeen] = useState<Set<Step>>(() => new Set([1]));
  const [build, setBuild] = useState(data.builds.some((b) => b.build_id === initialBuild) ? initialBuild! : newest.build_id);
  const [mode, setMode] = useState<'new' | 'existing'>('new');
  const [newName, setNewName] = useState(existing.length === 0 ? 'default' : '');
  const [replaced, setReplaced] = useState(existing[0] ?? '');
  const [instance, setInstance] = useState<InstanceType>('cpu');
  const [drafts, setDrafts] = useState<AudienceDraft[]>(() => initialDrafts(data.audiences, live, [...existing, NEW_KEY]));
  const [fallbackKey, setFallbackKey] = useState(live?.fallbackVariation ?? NEW_KEY);
  const [submitError, setSubmitError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const [deployment, setDeployment] = useState<Deployment | undefined>(undefined);
  const [focusId, setFocusId] = useState<string | undefined>(undefined);
  const panel = useRef<HTMLDivElement>(null);
  const firstStep = useRef(true);

  // A new step: its heading takes the focus (or the field a refusal is about).
  useEffect(() => {
    if (firstStep.current) {
      firstStep.current = false;
      return;
    }
    const target = focusId ? document.getElementById(focusId) : panel.current?.querySelector<HTMLElement>('h2');
    target?.focus();
    setFocusId(undefined);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [step, submitError]);

  const keys = mode === 'new' ? [...existing, NEW_KEY] : existing;
  const chosenKey = mode === 'new' ? NEW_KEY : replaced;
  const chosenName = mode === 'new' ? newName.trim() : replaced;
  const nameOf = (k: string) => (k === NEW_KEY ? chosenName || 'the new variation' : k);
  const attached = drafts.filter((d) => d.attached);
  const fallback = keys.includes(fallbackKey) ? fallbackKey : keys.length === 1 ? keys[0]! : undefined;
  const audienceLabel = (id: string) => audienceName.get(id) ?? id;

  // Problems the dialog sees before the host does: they keep confirm disabled.
  const problems: Problem[] = [];
  if (mode === 'new' && chosenName === '') problems.push({ step: 2, text: 'Enter a name for the new variation.' });
  if (mode === 'new' && existing.includes(chosenName)) {
    problems.push({ step: 2, text: `"${chosenName}" exists already: choose "Replace an existing variation" to deploy this build under it.` });
  }
  for (const d of attached) {
    const { sum, invalid, shadows } = sumOf(d, keys);
    if (invalid) problems.push({ step: 3, text: `${audienceLabel(d.id)}: each weight is a number from 0 to 100.` });
    else if (sum !== 100) problems.push({ step: 3, text: `${audienceLabel(d.id)}: the weights total ${sum} %; they must total 100 %.` });
    if (shadows.length > 1) problems.push({ step: 3, text: `${audienceLabel(d.id)}: ${shadows.map(nameOf).join(' and ')} are both shadows; an audience has at most one.` });
  }
  if (keys.length > 1 && attached.length === 0) {
    problems.push({ step: 3, text: `Route at least one audience: with ${keys.length} variations, the traffic must say which variation takes what.` });
  }
  if (attached.length > 0 && fallback === undefined) problems.push({ step: 4, text: 'Choose the fallback variation.' });

  const body: DeployBody = {
    build_id: build,
    variation_name: chosenName,
    instance_type: instance,
    ...(attached.length > 0
      ? {
          audiences: attached.map((d) => ({
            id: d.id,
            routes: keys.map((k) => ({ variation_name: nameOf(k), weight: weightOf(d.routes[k]?.weight ?? '0') ?? 0, shadow: d.routes[k]?.shadow ?? false })),
            fallback_variation: fallback !== undefined ? nameOf(fallback) : '',
          })),
        }
      : {}),
  };

  const place = submitError !== undefined ? placeOf(submitError, attached.map((d) => d.id)) : undefined;
  const errorAt = (field: string) => (place?.field === field ? messageOf(submitError) : undefined);

  const go = (n: Step) => {
    setSeen((s) => new Set([...s, n]));
    setStep(n);
  };
  const flagged = (n: Step) => problems.some((p) => p.step === n) && (seen.has(n) || seen.has(5));

  const updateDraft = (id: string, change: (d: AudienceDraft) => AudienceDraft) => setDrafts((all) => all.map((d) => (d.id === id ? change(d) : d)));
  const setRoute = (id: string, key: string, route: Partial<RouteDraft>) =>
    updateDraft(id, (d) => ({ ...d, routes: { ...d.routes, [key]: { ...(d.routes[key] ?? { weight: '0', shadow: false }), ...route } } }));
  const move = (index: number, by: -1 | 1) =>
    setDrafts((all) => {
      const next = [...all];
      const [d] = next.splice(index, 1);
      next.splice(index + by, 0, d!);
      return next;
    });

  const confirm = async () => {
    setBusy(true);
    setSubmitError(undefined);
    try {
      setDeployment(await api<Deployment>('POST', `/api/v1/models/${seg(modelId)}/deployments`, { json: body }));
    } catch (err) {
      const where = placeOf(err, attached.map((d) => d.id));
      setFocusId(where.field);
      setSubmitError(err);
      go(where.step);
    } finally {
      setBusy(false);
    }
  };

  if (deployment) {
    return (
      <section class="dd">
        <PageHeader title={title} />
        <Progress
          initial={deployment}
          modelId={modelId}
          onBack={() => {
            setDeployment(undefined);
            setStep(5);
          }}
          onAgain={onAgain}
        />
      </section>
    );
  }

  const inProgress = data.details.deployment_in_progress;
  const build0 = data.builds.find((b) => b.build_id === build);
  return (
    <section class="dd">
      <PageHeader title={title}>
        <a class="button-link secondary" href={`#/models`}>
          Cancel
        </a>
      </PageHeader>
      {inProgress ? (
        <p class="notice" role="status">
          Deployment {inProgress.deployment_id} ({inProgress.variation_name}) is {inProgress.status}; the host refuses another until it ends.
        </p>
      ) : null}
      <nav aria-label="Steps of the deploy dialog" class="deploy-steps">
        <ol>
          {STEPS.map((s) => (
            <li key={s.n}>
              <button
                type="button"
                class={`step-button${s.n === step ? ' current' : ''}${flagged(s.n) ? ' flagged' : ''}`}
                aria-current={s.n === step ? 'step' : undefined}
                onClick={() => go(s.n)}
              >
                <span class="step-n" aria-hidden="true">
                  {s.n}
                </span>
                <span class="visually-hidden">Step {s.n}: </span>
                {s.label}
                {flagged(s.n) ? <span class="visually-hidden"> (needs attention)</span> : null}
              </button>
            </li>
          ))}
        </ol>
      </nav>
      <div class="card deploy-panel" ref={panel}>
        {step === 1 ? (
          <StepPanel n={1} title="Deploy next to a build" next={() => go(2)}>
            <fieldset class="build-list" aria-describedby={errorAt('deploy-build') ? 'deploy-build-error' : undefined}>
              <legend id="deploy-build" tabIndex={-1}>
                Build of {modelId}
              </legend>
              {[...data.builds]
                .sort((a, b) => b.created_at - a.created_at)
                .map((b) => {
                  const serves = Object.entries(live?.variations ?? {})
                    .filter(([, id]) => id === b.build_id)
                    .map(([v]) => v);
                  return (
                    <label class="build-option" key={b.build_id}>
                      <input type="radio" name="deploy-build" value={b.build_id} checked={b.build_id === build} onChange={() => setBuild(b.build_id)} />
                      <span>
                        <code>{b.build_id}</code>
                        <span class="sub">
                          uploaded {when(b.created_at)} · features {b.features.map((f) => f.name).join(', ')}
                          {serves.length > 0 ? ` · serves ${serves.join(', ')}` : ''}
                        </span>
                      </span>
                    </label>
                  );
                })}
            </fieldset>
            {errorAt('deploy-build') ? <FieldError id="deploy-build-error" text={errorAt('deploy-build')!} /> : null}
          </StepPanel>
        ) : null}

        {step === 2 ? (
          <StepPanel n={2} title="A new or an existing variation" back={() => go(1)} next={() => go(3)}>
            {existing.length > 0 ? (
              <fieldset class="choice">
                <legend>Variation</legend>
                <label>
                  <input type="radio" name="variation-mode" checked={mode === 'new'} onChange={() => setMode('new')} /> Create a new variation
                </label>
                <label>
                  <input
                    type="radio"
                    name="variation-mode"
                    checked={mode === 'existing'}
                    onChange={() => {
                      setMode('existing');
                      setInstance((live?.instanceTypes?.[replaced] as InstanceType | undefined) ?? 'cpu');
                    }}
                  />{' '}
                  Replace an existing variation
                </label>
              </fieldset>
            ) : (
              <p class="hint">This is the first deployment of {modelId}: its variation takes all the traffic. The usual name is "default".</p>
            )}
            {mode === 'new' ? (
              <div class="field narrow-field">
                <label for="deploy-variation">New variation name</label>
                <input
                  id="deploy-variation"
                  value={newName}
                  autocomplete="off"
                  spellcheck={false}
                  onInput={(e) => {
                    setNewName((e.target as HTMLInputElement).value);
                    if (place?.field === 'deploy-variation') setSubmitError(undefined);
                  }}
                  aria-invalid={errorAt('deploy-variation') ? true : undefined}
                  aria-describedby={`deploy-variation-help${errorAt('deploy-variation') ? ' deploy-variation-error' : ''}`}
                />
                <p class="help" id="deploy-variation-help">
                  At most 36 characters: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit.
                </p>
                {errorAt('deploy-variation') ? <FieldError id="deploy-variation-error" text={errorAt('deploy-variation')!} /> : null}
              </div>
            ) : (
              <div class="field narrow-field">
                <label for="deploy-variation">Variation to replace</label>
                <select
                  id="deploy-variation"
                  value={replaced}
                  onChange={(e) => {
                    const v = (e.target as HTMLSelectElement).value;
                    setReplaced(v);
                    setInstance((live?.instanceTypes?.[v] as InstanceType | undefined) ?? 'cpu');
                  }}
                  aria-describedby={errorAt('deploy-variation') ? 'deploy-variation-error' : undefined}
                >
                  {existing.map((v) => (
                    <option key={v} value={v}>
                      {v} (build {live?.variations[v]})
                    </option>
                  ))}
                </select>
                {errorAt('deploy-variation') ? <FieldError id="deploy-variation-error" text={errorAt('deploy-variation')!} /> : null}
              </div>
            )}
            <div class="field narrow-field">
              <label for="deploy-instance">Instance type</label>
              <select
                id="deploy-instance"
                value={instance}
                onChange={(e) => setInstance((e.target as HTMLSelectElement).value as InstanceType)}
                aria-describedby={`deploy-instance-help${errorAt('deploy-instance') ? ' deploy-instance-error' : ''}`}
              >
                <option value="cpu">cpu</option>
                <option value="cuda">cuda (GPU 0)</option>
              </select>
              <p class="help" id="deploy-instance-help">
                Where this variation runs; the others keep theirs.
              </p>
              {errorAt('deploy-instance') ? <FieldError id="deploy-instance-error" text={errorAt('deploy-instance')!} /> : null}
            </div>
            <StepProblems problems={problems} step={2} />
          </StepPanel>
        ) : null}

        {step === 3 ? (
          <StepPanel n={3} title="Traffic Control" back={() => go(2)} next={() => go(4)} titleId="traffic-title">
            <p class="lead">
              Audiences are tried in this order; the first whose conditions a request meets splits it by the weights below. A shadow gets a copy of that share
              of the audience's requests after the caller has its answer, and never answers anyone.
            </p>
            {place?.step === 3 && !place.audience ? <FieldError id="traffic-error" text={messageOf(submitError)} /> : null}
            {drafts.length === 0 ? (
              <Empty title="No audiences yet.">
                <p>
                  {keys.length > 1 ? 'A new variation next to the live ones needs an audience to route traffic to it. ' : ''}
                  <a href="#/audiences">Create an audience</a> (one without conditions matches every request), then come back.
                  {keys.length === 1 ? ` Without one, ${nameOf(keys[0]!)} takes all the traffic.` : ''}
                </p>
              </Empty>
            ) : null}
            {keys.length === 1 && attached.length === 0 && drafts.length > 0 ? (
              <p class="hint">
                No audience routed:{' '}
                {live && existing.includes(chosenKey) && (live.audiences.length ?? 0) > 0
                  ? 'the live routes stay as they are.'
                  : `${nameOf(keys[0]!)} takes all the traffic.`}
              </p>
            ) : null}
            <ol class="audience-list">
              {drafts.map((d, i) => (
                <AudienceRows
                  key={d.id}
                  draft={d}
                  index={i}
                  count={drafts.length}
                  audience={data.audiences.find((a) => a.id === d.id)}
                  keys={keys}
                  nameOf={nameOf}
                  chosenKey={chosenKey}
                  serverError={place?.step === 3 && place.audience === d.id ? messageOf(submitError) : undefined}
                  onAttach={(on) =>
                    updateDraft(d.id, (x) => {
                      // Routing an audience whose weights are all 0: the first variation takes it all.
                      const empty = keys.every((k) => (weightOf(x.routes[k]?.weight ?? '0') ?? 0) === 0);
                      const routes = { ...x.routes };
                      if (on && empty) routes[keys[0]!] = { weight: '100', shadow: false };
                      return { ...x, attached: on, routes };
                    })
                  }
                  onRoute={(k, r) => setRoute(d.id, k, r)}
                  onMove={(by) => move(i, by)}
                />
              ))}
            </ol>
          </StepPanel>
        ) : null}

        {step === 4 ? (
          <StepPanel n={4} title="Fallback variation" back={() => go(3)} next={() => go(5)}>
            <p class="lead">The fallback serves every request that matches no audience.</p>
            {attached.length === 0 ? (
              <p>
                {keys.length === 1 ? (
                  <>
                    The fallback is <strong>{live && existing.includes(chosenKey) && live.fallbackVariation ? live.fallbackVariation : nameOf(keys[0]!)}</strong>
                    {live && existing.includes(chosenKey) && live.audiences.length > 0 ? ', as it is now.' : ', the only variation.'}
                  </>
                ) : (
                  <>Route an audience in the Traffic Control step first.</>
                )}
              </p>
            ) : (
              <div class="field narrow-field">
                <label for="deploy-fallback">Fallback variation</label>
                <select
                  id="deploy-fallback"
                  value={fallback ?? ''}
                  onChange={(e) => setFallbackKey((e.target as HTMLSelectElement).value)}
                  aria-describedby={errorAt('deploy-fallback') ? 'deploy-fallback-error' : undefined}
                >
                  {fallback === undefined ? <option value="">Choose a variation…</option> : null}
                  {keys.map((k) => (
                    <option key={k} value={k}>
                      {nameOf(k)}
                      {k === chosenKey ? (mode === 'new' ? ' (new)' : ' (replaced)') : ''}
                    </option>
                  ))}
                </select>
                {errorAt('deploy-fallback') ? <FieldError id="deploy-fallback-error" text={errorAt('deploy-fallback')!} /> : null}
              </div>
            )}
            <StepProblems problems={problems} step={4} />
          </StepPanel>
        ) : null}

        {step === 5 ? (
          <StepPanel n={5} title="Review and confirm" back={() => go(4)}>
            <p>
              Deploy build <code>{build}</code>
              {build0 ? ` (uploaded ${when(build0.created_at)})` : ''} as{' '}
              {mode === 'new' ? (
                <>
                  the new variation <strong>{chosenName || '(no name yet)'}</strong>
                </>
              ) : (
                <>
                  a replacement for <strong>{chosenName}</strong>
                </>
              )}{' '}
              on {instance}.
            </p>
            <Diff live={live} body={body} modelId={modelId} audienceLabel={audienceLabel} />
            <details class="request-body">
              <summary>The request: POST /api/v1/models/{modelId}/deployments</summary>
              <pre class="cmd">
                <code>{JSON.stringify(body, null, 2)}</code>
              </pre>
            </details>
            {problems.length > 0 ? (
              <div class="problems" id="deploy-problems" role="alert">
                <p>Confirm is disabled until these are fixed:</p>
                <ul>
                  {problems.map((p, i) => (
                    <li key={i}>
                      <button type="button" class="link" onClick={() => go(p.step)}>
                        Step {p.step}
                      </button>
                      : {p.text}
                    </li>
                  ))}
                </ul>
              </div>
            ) : null}
            {place?.step === 5 ? <ErrorNote error={submitError} id="deploy-confirm-error" /> : null}
            <div class="step-actions">
              <button type="button" class="secondary" onClick={() => go(4)}>
                Back
              </button>
              <button
                type="button"
                id="deploy-confirm"
                disabled={problems.length > 0 || busy}
                aria-describedby={problems.length > 0 ? 'deploy-problems' : undefined}
                onClick={confirm}
              >
                {busy ? 'Deploying…' : 'Confirm deployment'}
              </button>
            </div>
          </StepPanel>
        ) : null}
      </div>
    </section>
  );
}

function FieldError({ id, text }: { id: string; text: string }) {
  return (
    <p class="error field-error" id={id} role="alert">
      {text}
    </p>
  );
}

function StepProblems({ problems, step }: { problems: Problem[]; step: Step }) {
  const mine = problems.filter((p) => p.step === step);
  if (mine.length === 0) return null;
  return (
    <ul class="plain step-problems">
      {mine.map((p, i) => (
        <li key={i} class="hint-bad">
          {p.text}
        </li>
      ))}
    </ul>
  );
}

function StepPanel(props: { n: Step; title: string; titleId?: string; back?: () => void; next?: () => void; children: ComponentChildren }) {
  return (
    <div class="step-panel">
      <h2 tabIndex={-1} id={props.titleId}>
        <span class="step-of">Step {props.n} of 5:</span> {props.title}
      </h2>
      {props.children}
      {props.next ? (
        <div class="step-actions">
          {props.back ? (
            <button type="button" class="secondary" onClick={props.back}>
              Back
            </button>
          ) : null}
          <button type="button" onClick={props.next}>
            Next: {STEPS[props.n]!.label}
          </button>
        </div>
      ) : null}
    </div>
  );
}

interface AudienceRowsProps {
  draft: AudienceDraft;
  index: number;
  count: number;
  audience: Audience | undefined;
  keys: string[];
  nameOf: (k: string) => string;
  chosenKey: string;
  serverError: string | undefined;
  onAttach: (on: boolean) => void;
  onRoute: (key: string, route: Partial<RouteDraft>) => void;
  onMove: (by: -1 | 1) => void;
}

const UNARY_WORDS: Record<string, string> = {
  UNARY_OPERATOR_TYPE_EXACT_MATCH: 'is',
  UNARY_OPERATOR_TYPE_SAFE_REGEX_MATCH: 'matches',
  UNARY_OPERATOR_TYPE_PRESENT_MATCH: 'is present',
  UNARY_OPERATOR_TYPE_PREFIX_MATCH: 'starts with',
  UNARY_OPERATOR_TYPE_SUFFIX_MATCH: 'ends with',
  UNARY_OPERATOR_TYPE_CONTAINS_MATCH: 'contains',
};

/** "header x-beta is present and x-country is DE", in short. */
function conditionsText(a: Audience | undefined): string {
  if (!a) return 'audience not found';
  const n = a.conditions.unary.length + a.conditions.binary.length;
  if (n === 0) return 'no conditions: every request';
  return 'header ' + [
    ...a.conditions.unary.map((c) => `${c.key} ${UNARY_WORDS[c.operator] ?? c.operator}${c.operand !== undefined ? ` ${c.operand}` : ''}`),
    ...a.conditions.binary.map((c) => `${c.key} from ${c.first_operand} to below ${c.second_operand}`),
  ].join(' and ');
}

function AudienceRows({ draft, index, count, audience, keys, nameOf, chosenKey, serverError, onAttach, onRoute, onMove }: AudienceRowsProps) {
  const name = audience?.name ?? draft.id;
  const { sum, invalid, shadows } = sumOf(draft, keys);
  const sumOk = !invalid && sum === 100;
  const shadowKey = shadows[0];
  const headId = `aud-${draft.id}`;
  return (
    <li class={`audience-block${draft.attached ? ' attached' : ''}`} aria-labelledby={`${headId}-name`}>
      <div class="audience-head">
        <span class="audience-pos" aria-hidden="true">
          {index + 1}
        </span>
        <div class="audience-title">
          <h3 id={`${headId}-name`}>{name}</h3>
          <span class="meta">{conditionsText(audience)}</span>
        </div>
        <label class="inline-check">
          <input type="checkbox" id={headId} checked={draft.attached} onChange={(e) => onAttach((e.target as HTMLInputElement).checked)} />
          Route {name}
        </label>
        <span class="move">
          <button type="button" class="secondary small" disabled={index === 0} onClick={() => onMove(-1)} aria-label={`Move ${name} up`}>
            ↑
          </button>
          <button type="button" class="secondary small" disabled={index === count - 1} onClick={() => onMove(1)} aria-label={`Move ${name} down`}>
            ↓
          </button>
        </span>
      </div>
      {draft.attached ? (
        <>
          <table class="routes">
            <caption class="visually-hidden">Routes of {name}</caption>
            <thead>
              <tr>
                <th scope="col">Variation</th>
                <th scope="col">Weight</th>
                <th scope="col">Shadow</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => {
                const r = draft.routes[k] ?? { weight: '0', shadow: false };
                const bad = weightOf(r.weight) === undefined;
                const v = nameOf(k);
                return (
                  <tr key={k} class={r.shadow ? 'is-shadow' : undefined}>
                    <th scope="row">
                      {v}
                      {k === chosenKey ? <span class="tag">{k === NEW_KEY ? 'new' : 'replaced'}</span> : null}
                    </th>
                    <td>
                      <span class="weight">
                        <input
                          type="number"
                          inputMode="decimal"
                          min={0}
                          max={100}
                          step="any"
                          value={r.weight}
                          aria-label={`Weight of ${v} in ${name} (%)`}
                          aria-invalid={bad ? true : undefined}
                          onInput={(e) => onRoute(k, { weight: (e.target as HTMLInputElement).value })}
                        />
                        <span aria-hidden="true">%</span>
                      </span>
                    </td>
                    <td>
                      <label class="inline-check">
                        <input type="checkbox" checked={r.shadow} onChange={(e) => onRoute(k, { shadow: (e.target as HTMLInputElement).checked })} />
                        <span class="visually-hidden">
                          {v} is a shadow in {name}
                        </span>
                        <span aria-hidden="true" class="shadow-word">
                          shadow
                        </span>
                      </label>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <p class={`sum ${sumOk ? 'sum-ok' : 'sum-bad'}`} aria-live="polite" id={`${headId}-sum`}>
            {invalid ? (
              `Each weight of ${name} is a number from 0 to 100.`
            ) : sumOk ? (
              <>Sum: 100 %</>
            ) : (
              <>
                Sum: {sum} %. The weights of {name} must total 100 % ({sum < 100 ? `${round6(100 - sum)} % to give` : `${round6(sum - 100)} % too many`}).
              </>
            )}
          </p>
          {shadows.length > 1 ? <p class="sum sum-bad">{shadows.map(nameOf).join(' and ')} are both shadows; one at most.</p> : null}
          {shadowKey !== undefined && shadows.length === 1 ? (
            <p class="meta">
              {nameOf(shadowKey)} gets a copy of {draft.routes[shadowKey]?.weight || 0} % of {name}'s requests; its answers go to the request log only.
            </p>
          ) : null}
          {serverError ? <FieldError id={`${headId}-error`} text={serverError} /> : null}
        </>
      ) : (
        <p class="meta">Not routed: its requests go to the next audience that matches, or the fallback.</p>
      )}
    </li>
  );
}

interface DiffRow {
  what: string;
  before: string;
  after: string;
}

function routeText(r: RouteBody | undefined): string {
  if (!r) return '—';
  return r.shadow ? `copy of ${r.weight} % (shadow)` : `${r.weight} %`;
}

/** What changes: the live traffic against the traffic this deployment makes live. */
function Diff({ live, body, modelId, audienceLabel }: { live: Traffic | undefined; body: DeployBody; modelId: string; audienceLabel: (id: string) => string }) {
  const beforeVars = live?.variations ?? {};
  const afterVars = { ...beforeVars, [body.variation_name]: body.build_id };
  const beforeTypes = live?.instanceTypes ?? {};
  const afterTypes = { ...beforeTypes, [body.variation_name]: body.instance_type };
  const keepRoutes = body.audiences === undefined && live !== undefined && body.variation_name in beforeVars;
  const beforeAud = live?.audiences ?? [];
  const afterAud = body.audiences ?? (keepRoutes ? beforeAud.map((a) => ({ ...a, fallback_variation: live?.fallbackVariation ?? '' })) : []);
  const beforeFallback = live?.fallbackVariation ?? null;
  const afterFallback = body.audiences?.[0]?.fallback_variation ?? (keepRoutes ? beforeFallback : body.variation_name);

  const rows: DiffRow[] = [];
  for (const v of Object.keys(afterVars)) {
    const b = beforeVars[v] ? `build ${beforeVars[v]} on ${beforeTypes[v] ?? 'cpu'}` : '—';
    const a = `build ${afterVars[v]} on ${afterTypes[v] ?? 'cpu'}`;
    rows.push({ what: `Variation ${v}`, before: b, after: a });
  }
  const ids = [...afterAud.map((a) => a.id), ...beforeAud.map((a) => a.id).filter((id) => !afterAud.some((a) => a.id === id))];
  for (const id of ids) {
    const b = beforeAud.find((a) => a.id === id);
    const a = afterAud.find((x) => x.id === id);
    const names = [...new Set([...(b?.routes ?? []).map((r) => r.variation_name), ...(a?.routes ?? []).map((r) => r.variation_name)])];
    if (!a) rows.push({ what: `Audience ${audienceLabel(id)}`, before: 'routed', after: 'not routed' });
    for (const v of names) {
      rows.push({
        what: `${audienceLabel(id)} → ${v}`,
        before: routeText(b?.routes.find((r) => r.variation_name === v)),
        after: routeText(a?.routes.find((r) => r.variation_name === v)),
      });
    }
  }
  const beforeOrder = beforeAud.map((a) => audienceLabel(a.id)).join(', ');
  const afterOrder = afterAud.map((a) => audienceLabel(a.id)).join(', ');
  if (beforeOrder !== afterOrder && afterAud.length > 1) rows.push({ what: 'Order of audiences', before: beforeOrder || '—', after: afterOrder });
  rows.push({ what: 'Fallback variation', before: beforeFallback ?? '—', after: afterFallback || '—' });

  const changed = rows.filter((r) => r.before !== r.after).length;
  return (
    <div class="diff">
      <p class="meta" aria-live="polite">
        {changed === 0 ? 'Nothing changes but the build.' : `${changed} of ${rows.length} lines change.`}
      </p>
      <div class="table-wrap">
        <table class="stack diff-table">
          <caption>What changes for {modelId}</caption>
          <thead>
            <tr>
              <th scope="col">What</th>
              <th scope="col">Now</th>
              <th scope="col">After</th>
              <th scope="col">Change</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => {
              const kind = r.before === r.after ? 'same' : r.before === '—' ? 'added' : r.after === '—' || r.after === 'not routed' ? 'removed' : 'changed';
              return (
                <tr key={i} class={`diff-${kind}`}>
                  <th scope="row">{r.what}</th>
                  <td data-label="Now">{r.before}</td>
                  <td data-label="After">{r.after}</td>
                  <td data-label="Change">
                    <span class={`change change-${kind}`}>{kind === 'same' ? 'unchanged' : kind}</span>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </div>
  );
}

const PHASES = ['PENDING', 'DEPLOYING', 'LIVE'] as const;

/** Follows the deployment until it is LIVE or FAILED. */
function Progress({ initial, modelId, onBack, onAgain }: { initial: Deployment; modelId: string; onBack: () => void; onAgain: () => void }) {
  const [d, setD] = useState(initial);
  const [error, setError] = useState<unknown>(undefined);
  const done = d.status === 'LIVE' || d.status === 'FAILED' || d.status === 'SUPERSEDED';
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  useEffect(() => {
    if (done) return;
    const abort = new AbortController();
    const timer = setTimeout(async () => {
      try {
        setD(await api<Deployment>('GET', `/api/v1/deployments/${seg(d.deployment_id)}`, { signal: abort.signal }));
        setError(undefined);
      } catch (err) {
        if ((err as Error).name !== 'AbortError') setError(err);
        // Try again on the next turn: the host may be busy.
        setD((x) => ({ ...x }));
      }
    }, 300);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [d, done]);
  const reached = d.status === 'FAILED' ? -1 : d.status === 'SUPERSEDED' ? 3 : PHASES.indexOf(d.status as (typeof PHASES)[number]);
  return (
    <div class="card dd-progress" data-status={d.status}>
      <h2 tabIndex={-1} ref={heading}>
        Deployment {d.deployment_id}
      </h2>
      <p class="meta">
        {d.variation_name} ← build <code>{d.build_id}</code> on {d.instance_type ?? 'cpu'}
      </p>
      <ol class="phases" aria-label="Progress">
        {PHASES.map((p, i) => {
          const failedHere = d.status === 'FAILED' && p === 'LIVE';
          const state = failedHere ? 'failed' : reached > i || (reached === i && p === 'LIVE') ? 'done' : reached === i ? 'now' : d.status === 'FAILED' ? 'done' : 'todo';
          return (
            <li key={p} class={`phase phase-${state}`}>
              <span class="phase-dot" aria-hidden="true" />
              {failedHere ? 'FAILED' : p}
              <span class="visually-hidden"> ({state === 'todo' ? 'to come' : state})</span>
            </li>
          );
        })}
      </ol>
      <p role="status" class="deploy-status">
        <Status status={d.status} /> {statusWords(d)}
      </p>
      {d.status === 'FAILED' ? (
        <p class="error" role="alert">
          FAILED: {d.reason ?? 'no reason given'}
        </p>
      ) : null}
      <ErrorNote error={error} />
      {done ? (
        <div class="step-actions">
          {d.status === 'FAILED' ? (
            <button type="button" onClick={onBack}>
              Back to the dialog
            </button>
          ) : null}
          <a class="button-link" href="#/models">
            See it on the Models page
          </a>
          <a class="button-link secondary" href={`#/logs/${encodeURIComponent(modelId)}`}>
            Request log
          </a>
          <button type="button" class="secondary" onClick={onAgain}>
            Deploy another build
          </button>
        </div>
      ) : null}
    </div>
  );
}

function statusWords(d: Deployment): string {
  switch (d.status) {
    case 'PENDING':
      return 'Waiting for its turn; the live deployment keeps serving.';
    case 'DEPLOYING':
      return 'Loading the build; the live deployment keeps serving.';
    case 'LIVE':
      return `Live since ${when(d.updated_at)}: the new traffic is in effect.`;
    case 'FAILED':
      return 'Nothing changed: the previous deployment still serves.';
    default:
      return 'A later deployment replaced this one before it went live.';
  }
}
