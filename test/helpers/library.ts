// Deploying a GGUF file of MODELS_DIR as a library model and waiting until it is LIVE (or not).
import type { Api } from './api.js';

export async function deployLibraryModel(api: Api, file: string, modelId: string, timeoutMs = 60_000): Promise<{ status: string; reason: string | null }> {
  const res = await api('POST', '/api/v1/library/deployments', { file, model_id: modelId });
  if (res.status !== 202) throw new Error(`deploying ${file}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const dep = await api<{ status: string; reason: string | null }>('GET', `/api/v1/library/deployments/${modelId}`);
    if (dep.body.status !== 'PENDING' && dep.body.status !== 'DEPLOYING') return dep.body;
    if (Date.now() > until) throw new Error(`library deployment ${modelId} still ${dep.body.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
