// deploy/helm/platform, rendered by the real helm (test/helpers/helm-cli.ts) with the values an
// operator would give, each manifest checked against the Kubernetes schemas (kubernetes-models,
// and @kubernetes-models/prometheus-operator for the ServiceMonitor), and the parts that must agree
// with each other and with the host checked together: names, labels and selectors, probes, the
// environment the host reads, the drain arithmetic, and the messages of bad values. The Dockerfile
// is checked against the chart (user, port, command); one test starts the real host to see the
// metric the HorizontalPodAutoscaler scales on.
import fs from 'node:fs';
import path from 'node:path';
import { Service, Secret, PersistentVolumeClaim, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { describe, expect, it } from 'vitest';
import { spawnHost } from './helpers/child-host.js';
import { CHART_DIR, helmLint, helmTemplate, helmTemplateError, helmVersion, type Manifest } from './helpers/helm-cli.js';
import { ROOT, tempDir } from './helpers/paths.js';

const DATABASE_URL = 'postgres://platform:pw@postgres.db.svc:5432/platform';
const TOKEN_SECRET = 'k'.repeat(40);
/** The values an install must give when the chart makes the Secret. */
const REQUIRED = { secrets: { databaseUrl: DATABASE_URL, tokenSecret: TOKEN_SECRET } };

/** Validates a manifest against its Kubernetes schema; throws for a kind the chart should not make. */
function validate(m: Manifest): void {
  const models: Record<string, new (data: never) => { validate(): void }> = {
    'apps/v1 Deployment': Deployment,
    'v1 Service': Service,
    'v1 Secret': Secret,
    'v1 PersistentVolumeClaim': PersistentVolumeClaim,
    'v1 ServiceAccount': ServiceAccount,
    'policy/v1 PodDisruptionBudget': PodDisruptionBudget,
    'autoscaling/v2 HorizontalPodAutoscaler': HorizontalPodAutoscaler,
    'monitoring.coreos.com/v1 ServiceMonitor': ServiceMonitor,
  };
  const Model = models[`${m.apiVersion} ${m.kind}`];
  if (Model === undefined) throw new Error(`the chart made an unexpected ${m.apiVersion} ${m.kind}`);
  new Model(m as never).validate();
}

/** Renders, validates every manifest, and indexes them by kind (one of each at most). */
async function render(values: object = REQUIRED, opts: { release?: string; namespace?: string } = {}) {
  const manifests = await helmTemplate(values, opts);
  const byKind = new Map<string, Manifest>();
  for (const m of manifests) {
    validate(m);
    expect(byKind.has(m.kind), `two ${m.kind}s`).toBe(false);
    byKind.set(m.kind, m);
    expect(m.metadata.namespace ?? opts.namespace ?? 'serving').toBe(opts.namespace ?? 'serving');
  }
  const deployment = byKind.get('Deployment') as (Manifest & { spec: DeploymentSpec }) | undefined;
  if (deployment === undefined) throw new Error('no Deployment rendered');
  const pod = deployment.spec.template.spec;
  const container = pod.containers.find((c) => c.name === 'platform');
  if (container === undefined) throw new Error('no container named platform');
  return { manifests, byKind, kinds: [...byKind.keys()].sort(), deployment, pod, container, get: (kind: string) => byKind.get(kind) as Manifest & { spec: any; data?: Record<string, string> } };
}

interface DeploymentSpec {
  replicas?: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: IPodSpec };
}

/** The container's environment as name -> value (or a description of where it comes from). */
function envOf(container: IContainer): Map<string, string> {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) {
    const from = e.valueFrom;
    const value = e.value ?? (from?.secretKeyRef ? `secret:${from.secretKeyRef.name}/${from.secretKeyRef.key}` : from?.fieldRef ? `field:${from.fieldRef.fieldPath}` : '?');
    expect(env.has(e.name), `${e.name} twice in env`).toBe(false);
    env.set(e.name, value);
  }
  return env;
}

function expectSubset(selector: Record<string, string>, labels: Record<string, string> | undefined, what: string): void {
  expect(Object.keys(selector).length, `${what}: an empty selector`).toBeGreaterThan(0);
  for (const [k, v] of Object.entries(selector)) expect(labels?.[k], `${what}: label ${k}`).toBe(v);
}

describe('deploy/helm/platform', () => {
  it('is rendered by the real helm', async () => {
    expect(await helmVersion()).toMatch(/^v3\.\d+\.\d+/);
  });

  it('passes helm lint --strict', async () => {
    const out = await helmLint(REQUIRED);
    expect(out).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(out).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it('renders the defaults: 3 replicas, a Service, a Secret, a models claim and a PodDisruptionBudget that agree', async () => {
    const r = await render(REQUIRED, { release: 'prod', namespace: 'serving' });
    expect(r.kinds).toEqual(['Deployment', 'PersistentVolumeClaim', 'PodDisruptionBudget', 'Secret', 'Service']);
    const { deployment, pod, container } = r;
    expect(deployment.metadata.name).toBe('prod-platform');
    expect(deployment.spec.replicas).toBe(3);

    // One set of selector labels: the Deployment's selector picks its own pods, and the Service
    // and the PodDisruptionBudget pick the same pods.
    const podLabels = deployment.spec.template.metadata.labels;
    expectSubset(deployment.spec.selector.matchLabels, podLabels, 'Deployment selector');
    const service = r.get('Service');
    expectSubset(service.spec.selector, podLabels, 'Service selector');
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    expect(service.spec.type).toBe('ClusterIP');
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    const pdb = r.get('PodDisruptionBudget');
    expectSubset(pdb.spec.selector.matchLabels, podLabels, 'PodDisruptionBudget selector');
    expect(pdb.spec).toMatchObject({ maxUnavailable: 1 });
    expect(pdb.spec.minAvailable).toBeUndefined();
    for (const m of r.manifests) expect(m.metadata.labels).toMatchObject({ 'app.kubernetes.io/instance': 'prod', 'app.kubernetes.io/managed-by': 'Helm' });

    // The container port http, and the probes on it: liveness and start-up on /healthz, readiness
    // on /readyz (503 while draining and before the first routing snapshot).
    expect(container.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // Generous: library models may take minutes to load.
    const startup = container.startupProbe!;
    expect(startup.failureThreshold! * startup.periodSeconds!).toBeGreaterThanOrEqual(300);

    // The environment: secrets from the chart's Secret, the replica's identity from the downward API.
    const env = envOf(container);
    expect(Object.fromEntries(env)).toEqual({
      HOST: '0.0.0.0',
      PORT: '8080',
      DATA_DIR: '/var/lib/platform',
      MODELS_DIR: '/models',
      DATABASE_URL: 'secret:prod-platform/DATABASE_URL',
      PLATFORM_TOKEN_SECRET: 'secret:prod-platform/PLATFORM_TOKEN_SECRET',
      POD_IP: 'field:status.podIP',
      REPLICA_ID: 'field:metadata.name',
      REPLICA_ADDRESS: 'http://$(POD_IP):8080',
      DRAIN_DELAY_SECONDS: '10',
      SHUTDOWN_TIMEOUT_SECONDS: '30',
      METRICS_PUBLIC: '0',
      LOG_LEVEL: 'info',
    });
    // $(POD_IP) expands only to a variable defined before it.
    const names = [...env.keys()];
    expect(names.indexOf('POD_IP')).toBeLessThan(names.indexOf('REPLICA_ADDRESS'));

    // The Secret the chart made holds both keys the env refers to.
    const secret = r.get('Secret');
    expect(secret.metadata.name).toBe('prod-platform');
    const decoded = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    expect(decoded).toEqual({ DATABASE_URL, PLATFORM_TOKEN_SECRET: TOKEN_SECRET });
    // Replicas restart when it changes.
    expect(deployment.spec.template.metadata.annotations?.['checksum/secret']).toMatch(/^[0-9a-f]{64}$/);

    // DATA_DIR on an emptyDir, MODELS_DIR on the chart's claim, read-only; /tmp writable beside a
    // read-only root.
    const mounts = Object.fromEntries((container.volumeMounts ?? []).map((m) => [m.mountPath, m]));
    expect(mounts['/var/lib/platform']?.readOnly).toBeUndefined();
    expect(mounts['/models']?.readOnly).toBe(true);
    expect(mounts['/tmp']).toBeDefined();
    const volumes = Object.fromEntries((pod.volumes ?? []).map((v) => [v.name, v]));
    expect(volumes[mounts['/var/lib/platform']!.name]?.emptyDir).toEqual({});
    const claim = r.get('PersistentVolumeClaim');
    expect(volumes[mounts['/models']!.name]?.persistentVolumeClaim).toEqual({ claimName: claim.metadata.name, readOnly: true });
    expect(claim.spec.accessModes).toEqual(['ReadWriteMany']);
    expect(claim.spec.resources.requests.storage).toBe('50Gi');
    expect(claim.spec.storageClassName).toBeUndefined();
    expect(claim.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');

    // No GPU, non-root, replicas preferably on different nodes.
    expect(container.resources?.limits?.['nvidia.com/gpu']).toBeUndefined();
    expect(container.resources?.requests).toEqual({ cpu: '1', memory: '2Gi' });
    expect(pod.tolerations).toBeUndefined();
    expect(pod.nodeSelector).toBeUndefined();
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001 });
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    const anti = pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution;
    expect(anti).toHaveLength(1);
    expect(anti![0]!.podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
    expectSubset(anti![0]!.podAffinityTerm.labelSelector!.matchLabels!, podLabels, 'anti-affinity');
    expect(pod.serviceAccountName).toBeUndefined();
    expect(pod.automountServiceAccountToken).toBe(false);

    // The image defaults to the chart's appVersion.
    const chart = parseDocument(fs.readFileSync(path.join(CHART_DIR, 'Chart.yaml'), 'utf8')).toJS() as { apiVersion: string; appVersion: string };
    expect(chart.apiVersion).toBe('v2');
    expect(container.image).toBe(`ghcr.io/example/model-serving-platform:${chart.appVersion}`);
  });

  it('gives every environment variable a name the host reads (src/config.ts)', async () => {
    const { container } = await render();
    // src/config.ts reads the whole environment, each variable as env.NAME or by its name in quotes.
    const config = fs.readFileSync(path.join(ROOT, 'src/config.ts'), 'utf8');
    const names = [...envOf(container).keys()].filter((name) => name !== 'POD_IP'); // POD_IP: only for $(POD_IP)
    expect(names.length).toBe(12);
    for (const name of names) {
      expect(new RegExp(`env\\.${name}\\b|'${name}'`).test(config), `src/config.ts never reads ${name}`).toBe(true);
    }
  });

  it('asks for GPUs and passes the GPU node selector and tolerations through when gpu > 0', async () => {
    const own = { key: 'dedicated', operator: 'Equal', value: 'serving', effect: 'NoSchedule' };
    const values = {
      ...REQUIRED,
      gpu: 2,
      tolerations: [own],
      nodeSelector: { pool: 'serving' },
      gpuNodeSelector: { 'nvidia.com/gpu.present': 'true' },
      gpuTolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    };
    const { pod, container } = await render(values);
    expect(container.resources?.limits).toEqual({ memory: '8Gi', 'nvidia.com/gpu': 2 });
    expect(pod.tolerations).toEqual([own, { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(pod.nodeSelector).toEqual({ pool: 'serving', 'nvidia.com/gpu.present': 'true' });

    // gpu: 0 leaves the GPU settings out, and keeps the pod's own.
    const cpu = await render({ ...values, gpu: 0 });
    expect(cpu.container.resources?.limits).toEqual({ memory: '8Gi' });
    expect(cpu.pod.tolerations).toEqual([own]);
    expect(cpu.pod.nodeSelector).toEqual({ pool: 'serving' });
  });

  it('uses an existing Secret and an existing claim, and makes neither', async () => {
    const r = await render({
      secrets: { existingSecret: 'platform-credentials', databaseUrlKey: 'url', tokenSecretKey: 'token' },
      models: { existingClaim: 'gguf-library', readOnly: false },
    });
    expect(r.kinds).toEqual(['Deployment', 'PodDisruptionBudget', 'Service']);
    const env = envOf(r.container);
    expect(env.get('DATABASE_URL')).toBe('secret:platform-credentials/url');
    expect(env.get('PLATFORM_TOKEN_SECRET')).toBe('secret:platform-credentials/token');
    expect(r.deployment.spec.template.metadata.annotations).toBeUndefined();
    const models = r.pod.volumes?.find((v) => v.persistentVolumeClaim !== undefined);
    expect(models?.persistentVolumeClaim).toEqual({ claimName: 'gguf-library', readOnly: false });
    expect(r.container.volumeMounts?.find((m) => m.mountPath === '/models')?.readOnly).toBe(false);
  });

  it('with autoscaling on, makes an HPA on platform_requests_in_flight for the Deployment, which leaves out replicas', async () => {
    const r = await render({ ...REQUIRED, autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 12, targetRequestsInFlight: '6' } });
    expect(r.kinds).toContain('HorizontalPodAutoscaler');
    expect('replicas' in r.deployment.spec).toBe(false);
    const hpa = r.get('HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: r.deployment.metadata.name });
    expect(hpa.spec.minReplicas).toBe(2);
    expect(hpa.spec.maxReplicas).toBe(12);
    expect(hpa.spec.metrics).toEqual([
      { type: 'Pods', pods: { metric: { name: 'platform_requests_in_flight' }, target: { type: 'AverageValue', averageValue: '6' } } },
    ]);
    // The PodDisruptionBudget still covers the autoscaled pods.
    expectSubset(r.get('PodDisruptionBudget').spec.selector.matchLabels, r.deployment.spec.template.metadata.labels, 'PodDisruptionBudget selector');
  });

  it('with the ServiceMonitor on, scrapes /metrics on the Service port http, served without a token', async () => {
    const r = await render({ ...REQUIRED, serviceMonitor: { enabled: true, interval: '15s', labels: { release: 'kube-prometheus-stack' } } }, { namespace: 'ml' });
    const monitor = r.get('ServiceMonitor');
    const service = r.get('Service');
    expect(monitor.metadata.labels?.release).toBe('kube-prometheus-stack');
    expectSubset(monitor.spec.selector.matchLabels, service.metadata.labels, 'ServiceMonitor selector');
    expect(monitor.spec.namespaceSelector).toEqual({ matchNames: ['ml'] });
    expect(monitor.spec.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '15s', scrapeTimeout: '10s' }]);
    expect(service.spec.ports.map((p: { name: string }) => p.name)).toContain('http');
    expect(envOf(r.container).get('METRICS_PUBLIC')).toBe('1');
  });

  it('computes terminationGracePeriodSeconds as preStop + drain delay + shutdown timeout + margin', async () => {
    const defaults = await render();
    expect(defaults.pod.terminationGracePeriodSeconds).toBe(5 + 10 + 30 + 5);
    expect(defaults.container.lifecycle?.preStop?.exec?.command).toEqual(['/bin/sleep', '5']);

    const r = await render({ ...REQUIRED, drain: { preStopSleepSeconds: 7, delaySeconds: 20, timeoutSeconds: 95, marginSeconds: 3 } });
    expect(r.pod.terminationGracePeriodSeconds).toBe(7 + 20 + 95 + 3);
    expect(r.container.lifecycle?.preStop?.exec?.command).toEqual(['/bin/sleep', '7']);
    const env = envOf(r.container);
    expect(env.get('DRAIN_DELAY_SECONDS')).toBe('20');
    expect(env.get('SHUTDOWN_TIMEOUT_SECONDS')).toBe('95');

    // No preStop sleep: no hook, and the grace period is the rest.
    const noHook = await render({ ...REQUIRED, drain: { preStopSleepSeconds: 0, delaySeconds: 4, timeoutSeconds: 60, marginSeconds: 2 } });
    expect(noHook.container.lifecycle).toBeUndefined();
    expect(noHook.pod.terminationGracePeriodSeconds).toBe(4 + 60 + 2);
  });

  it('passes the other values through: port, log level, extraEnv, service account, hard anti-affinity, storage class', async () => {
    const r = await render({
      ...REQUIRED,
      port: 9090,
      logLevel: 'debug',
      extraEnv: [{ name: 'PLATFORM_THREADS', value: '4' }],
      serviceAccount: { create: true },
      podAntiAffinity: 'hard',
      models: { persistence: { accessMode: 'ReadOnlyMany', size: '200Gi', storageClass: 'filestore' } },
      image: { repository: 'registry.example/platform', tag: '1.2.3' },
      replicaCount: 5,
    });
    expect(r.kinds).toContain('ServiceAccount');
    expect(r.pod.serviceAccountName).toBe(r.get('ServiceAccount').metadata.name);
    const env = envOf(r.container);
    expect(env.get('PORT')).toBe('9090');
    expect(env.get('REPLICA_ADDRESS')).toBe('http://$(POD_IP):9090');
    expect(env.get('LOG_LEVEL')).toBe('debug');
    expect(env.get('PLATFORM_THREADS')).toBe('4');
    expect(r.container.ports?.[0]?.containerPort).toBe(9090);
    expect(r.container.image).toBe('registry.example/platform:1.2.3');
    expect(r.deployment.spec.replicas).toBe(5);
    expect(r.pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.[0]?.topologyKey).toBe('kubernetes.io/hostname');
    const claim = r.get('PersistentVolumeClaim');
    expect(claim.spec).toMatchObject({ accessModes: ['ReadOnlyMany'], storageClassName: 'filestore', resources: { requests: { storage: '200Gi' } } });
  });

  describe('refuses bad values with a message naming them', () => {
    const cases: Array<[string, object, RegExp]> = [
      ['no token secret', { secrets: { databaseUrl: DATABASE_URL } }, /secrets\.tokenSecret is required: 32 bytes or more/],
      ['a token secret of 31 bytes', { secrets: { databaseUrl: DATABASE_URL, tokenSecret: 'k'.repeat(31) } }, /secrets\.tokenSecret must be at least 32 bytes long, got 31/],
      // Bytes, as the host counts them (Buffer.byteLength): 10 euro signs are 30 bytes.
      ['a token secret of 10 characters, 30 bytes', { secrets: { databaseUrl: DATABASE_URL, tokenSecret: '€'.repeat(10) } }, /at least 32 bytes long, got 30/],
      ['no database URL', { secrets: { tokenSecret: TOKEN_SECRET } }, /secrets\.databaseUrl is required/],
      ['a database URL that is not PostgreSQL', { secrets: { databaseUrl: 'mysql://db/x', tokenSecret: TOKEN_SECRET } }, /secrets\.databaseUrl must be a PostgreSQL URL/],
      ['a negative gpu', { ...REQUIRED, gpu: -1 }, /gpu must be a whole number from 0 to 64, got -1/],
      ['a fractional gpu', { ...REQUIRED, gpu: 1.5 }, /gpu must be a whole number from 0 to 64, got 1\.5/],
      ['a gpu that is not a number', { ...REQUIRED, gpu: 'two' }, /gpu must be a whole number from 0 to 64, got two/],
      ['a shutdown timeout of 0', { ...REQUIRED, drain: { timeoutSeconds: 0 } }, /drain\.timeoutSeconds must be a whole number from 1 to 3600, got 0/],
      ['a negative drain delay', { ...REQUIRED, drain: { delaySeconds: -5 } }, /drain\.delaySeconds must be a whole number/],
      ['a models claim only one node can mount', { ...REQUIRED, models: { persistence: { accessMode: 'ReadWriteOnce' } } }, /models\.persistence\.accessMode must be ReadWriteMany or ReadOnlyMany/],
      ['more minReplicas than maxReplicas', { ...REQUIRED, autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 } }, /autoscaling\.minReplicas \(5\) must not be above autoscaling\.maxReplicas \(2\)/],
      ['an unknown log level', { ...REQUIRED, logLevel: 'verbose' }, /logLevel must be one of fatal, error, warn, info, debug, trace, silent; got "verbose"/],
      ['an unknown anti-affinity', { ...REQUIRED, podAntiAffinity: 'always' }, /podAntiAffinity must be soft, hard or empty/],
    ];
    for (const [what, values, message] of cases) {
      it(what, async () => {
        expect(await helmTemplateError(values)).toMatch(message);
      });
    }

    it('accepts a token secret of exactly 32 bytes, multi-byte characters counted as bytes', async () => {
      await render({ secrets: { databaseUrl: DATABASE_URL, tokenSecret: 'k'.repeat(32) } });
      await render({ secrets: { databaseUrl: DATABASE_URL, tokenSecret: '€'.repeat(11) } }); // 33 bytes
    });
  });

  it('comments every value in values.yaml, and says the HPA needs prometheus-adapter there and in NOTES', () => {
    const text = fs.readFileSync(path.join(CHART_DIR, 'values.yaml'), 'utf8');
    const doc = parseDocument(text);
    const uncommented: string[] = [];
    // A key is commented when a comment line is right above it (the first key of a map may
    // have it on the map, or on the pair that holds the map).
    const visit = (node: Node | null | undefined, prefix: string, inheritedComment: boolean): void => {
      if (!isMap(node)) return;
      node.items.forEach((pair, i) => {
        const key = isScalar(pair.key) ? String(pair.key.value) : '?';
        const commented = Boolean(isScalar(pair.key) && pair.key.commentBefore) || (i === 0 && (inheritedComment || Boolean(node.commentBefore)));
        if (!commented) uncommented.push(prefix + key);
        if (!isSeq(pair.value)) visit(pair.value as Node, `${prefix}${key}.`, false);
      });
    };
    visit(doc.contents, '', Boolean(doc.commentBefore));
    expect(uncommented).toEqual([]);
    expect(text).toMatch(/prometheus-adapter/);
    expect(fs.readFileSync(path.join(CHART_DIR, 'templates/NOTES.txt'), 'utf8')).toMatch(/prometheus-adapter/);
  });

  it('matches the Dockerfile: the non-root uid, the port, the command, the preStop sleep', () => {
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm AS build$/m);
    expect(dockerfile).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim AS runtime$/m);
    expect(dockerfile).toMatch(/^ARG NODE_VERSION=20$/m);
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    expect(dockerfile).toMatch(/^EXPOSE 8080$/m);
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/server\/main\.js"\]$/m);
    expect(dockerfile).toMatch(/npm ci[\s\S]*npm run build[\s\S]*npm prune --omit=dev/);
    // Every path the build stage copies from the context is let in by .dockerignore.
    const allowed = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    expect(copied.length).toBeGreaterThan(0);
    for (const p of copied) expect(allowed, `.dockerignore leaves out ${p}`).toContain(p);
    for (const p of allowed) expect(fs.existsSync(path.join(ROOT, p)), `${p} is missing`).toBe(true);
  });
});

describe('the host behind the chart', () => {
  it('exports the HPA metric on /metrics (METRICS_PUBLIC=1) and exits 0 on SIGTERM', async () => {
    const dataDir = tempDir();
    const host = await spawnHost({ METRICS_PUBLIC: '1', DATA_DIR: dataDir, DRAIN_DELAY_SECONDS: '0' });
    try {
      const res = await fetch(`${host.url}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toMatch(/^# TYPE platform_requests_in_flight gauge$/m);
      // The scrape itself is a request in flight while /metrics is collected.
      expect(text).toMatch(/^platform_requests_in_flight \d+$/m);
      expect((await fetch(`${host.url}/readyz`)).status).toBe(200);
    } finally {
      host.proc.kill('SIGTERM');
    }
    expect(await host.exited).toBe(0);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
});
