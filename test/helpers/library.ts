// Library models on a real in-process host: deploying a GGUF file of MODELS_DIR and waiting until
// it is LIVE (or not), and a host started on a directory of test models, each deployed.
import { apiClient, type Api } from './api.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './in-process-host.js';
import { tempDir } from './paths.js';

export async function deployLibraryModel(api: Api, file: string, modelId: string, timeoutMs = 60_000): Promise<{ status: string; reason: string | null }> {
  const res = await api('POST', '/api/v1/library/deployments', { file, model_id: modelId });
  if (res.status !== 202) throw new Error(`deploying ${file}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return waitForDeployment(api, modelId, timeoutMs);
}

/** Polls a library deployment until it is no longer PENDING or DEPLOYING; its status and reason then. */
export async function waitForDeployment(api: Api, modelId: string, timeoutMs = 60_000): Promise<{ status: string; reason: string | null }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const dep = await api<{ status: string; reason: string | null }>('GET', `/api/v1/library/deployments/${modelId}`);
    if (dep.body.status !== 'PENDING' && dep.body.status !== 'DEPLOYING') return dep.body;
    if (Date.now() > until) throw new Error(`library deployment ${modelId} still ${dep.body.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A host whose MODELS_DIR holds the files `write` puts there (it returns model id -> file name),
 * each deployed under its model id and LIVE, and an admin token.
 */
export async function libraryHost(write: (modelsDir: string) => Record<string, string>, env: Record<string, string> = {}): Promise<{ host: TestHost; token: string }> {
  const modelsDir = tempDir();
  const models = write(modelsDir);
  const host = await listen(await startInProcessHost({ MODELS_DIR: modelsDir, ...env }));
  const { token } = await tokenFor(host);
  const api = apiClient(host.url, token);
  for (const [modelId, file] of Object.entries(models)) {
    const dep = await deployLibraryModel(api, file, modelId);
    if (dep.status !== 'LIVE') throw new Error(`${file} did not go LIVE: ${dep.reason}`);
  }
  return { host, token };
}
