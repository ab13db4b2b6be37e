// The real helm binary, for rendering and linting deploy/helm/platform in tests. No helm comes
// with Debian, and the npm packages named after helm download it at install time (this project's
// machines reach only the npm registry and Debian). @aws-cdk/asset-kubectl-v20 (AWS's CDK asset
// package, cdklabs/awscdk-asset-kubectl, with no dependencies) ships helm itself: the official
// linux-amd64 build of helm v3.8.1 inside lib/layer.zip, in the npm tarball. The first call takes
// helm/helm out of that zip (zlib alone: no unzip on the machine is needed) into
// node_modules/.cache, and later calls reuse it. The chart also renders the same with helm 4.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { parseAllDocuments, stringify } from 'yaml';
import { ROOT, tempDir } from './paths.js';

const run = promisify(execFile);

export const CHART_DIR = path.join(ROOT, 'deploy/helm/platform');
const PACKAGE = '@aws-cdk/asset-kubectl-v20';

/** The zip's entry NAME, inflated. Only what a Lambda layer zip uses: stored or deflated, no zip64. */
function unzipEntry(zip: Buffer, name: string): Buffer {
  // The end-of-central-directory record is in the last 22 bytes plus a comment of up to 64 KiB.
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error(`${PACKAGE}: layer.zip has no end of central directory`);
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries; n++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`${PACKAGE}: layer.zip central directory is damaged`);
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localHeader = zip.readUInt32LE(at + 42);
    const entryName = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + extraLength + commentLength;
    if (entryName !== name) continue;
    if (zip.readUInt32LE(localHeader) !== 0x04034b50) throw new Error(`${PACKAGE}: ${name} has no local header`);
    const start = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
    const data = zip.subarray(start, start + compressedSize);
    const out = method === 0 ? Buffer.from(data) : method === 8 ? zlib.inflateRawSync(data) : null;
    if (out === null) throw new Error(`${PACKAGE}: ${name} uses zip method ${method}`);
    if (out.length !== size) throw new Error(`${PACKAGE}: ${name} inflated to ${out.length} bytes, expected ${size}`);
    return out;
  }
  throw new Error(`${PACKAGE}: layer.zip holds no ${name}`);
}

let cached: string | undefined;

/** Path of the helm binary, taken out of the package's layer.zip on first use. */
export function helmBinary(): string {
  if (cached !== undefined) return cached;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`${PACKAGE} ships helm for linux-x64 only, not ${process.platform}-${process.arch}`);
  }
  const require = createRequire(import.meta.url);
  const pkgDir = path.dirname(require.resolve(`${PACKAGE}/package.json`));
  const version = (JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string }).version;
  const bin = path.join(ROOT, 'node_modules/.cache/platform-helm', version, 'helm');
  if (!fs.existsSync(bin)) {
    const helm = unzipEntry(fs.readFileSync(path.join(pkgDir, 'lib/layer.zip')), 'helm/helm');
    fs.mkdirSync(path.dirname(bin), { recursive: true });
    // Written aside and renamed, so that a concurrent first call never runs a half-written file.
    const partial = `${bin}.${process.pid}.partial`;
    fs.writeFileSync(partial, helm, { mode: 0o755 });
    fs.renameSync(partial, bin);
  }
  cached = bin;
  return bin;
}

/** helm with HOME and its config/cache/data dirs in a temp dir: nothing of the user's is read. */
async function helm(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const home = tempDir('platform-helm-home-');
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_DATA_HOME: path.join(home, 'data'),
    // Never a cluster: `helm template` and `helm lint` render on the client alone.
    KUBECONFIG: path.join(home, 'no-kubeconfig'),
  };
  try {
    return await run(helmBinary(), args, { env, maxBuffer: 64 * 1024 * 1024 });
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** A values file for helm, written from an object. */
function valuesFile(values: object): string {
  const file = path.join(tempDir('platform-helm-values-'), 'values.yaml');
  fs.writeFileSync(file, stringify(values));
  return file;
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RenderOptions {
  release?: string;
  namespace?: string;
}

/** `helm template` of the chart with VALUES over values.yaml: every manifest, parsed. */
export async function helmTemplate(values: object, opts: RenderOptions = {}): Promise<Manifest[]> {
  const file = valuesFile(values);
  try {
    const { stdout } = await helm(['template', opts.release ?? 'rel', CHART_DIR, '--namespace', opts.namespace ?? 'serving', '--values', file]);
    const manifests: Manifest[] = [];
    for (const doc of parseAllDocuments(stdout)) {
      if (doc.errors.length > 0) throw new Error(`helm template printed YAML that does not parse: ${doc.errors[0]!.message}`);
      const value = doc.toJS() as Manifest | null;
      if (value !== null) manifests.push(value);
    }
    return manifests;
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}

/** `helm template` that must fail: its error message (helm's stderr). */
export async function helmTemplateError(values: object): Promise<string> {
  try {
    await helmTemplate(values);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr;
    if (stderr !== undefined) return stderr;
    throw err;
  }
  throw new Error('helm template succeeded, but a failure was expected');
}

/** `helm lint --strict` of the chart with VALUES: its output; throws when the chart fails lint. */
export async function helmLint(values: object): Promise<string> {
  const file = valuesFile(values);
  try {
    const { stdout } = await helm(['lint', '--strict', CHART_DIR, '--values', file]);
    return stdout;
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}

/** helm's own version line. */
export async function helmVersion(): Promise<string> {
  return (await helm(['version', '--short'])).stdout.trim();
}
