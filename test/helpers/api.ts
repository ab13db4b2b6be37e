// A small JSON client for integration tests against a host started on a free port.
import { expect } from 'vitest';

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export type Api = <T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<ApiResponse<T>>;

export function apiClient(baseUrl: string, token: string): Api {
  return async (method, path, body, headers = {}) => {
    const init: RequestInit = { method, headers: { authorization: `Bearer ${token}`, ...headers } };
    if (body instanceof Uint8Array) {
      init.body = body;
      (init.headers as Record<string, string>)['content-type'] ??= 'application/octet-stream';
    } else if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + path, init);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}

/** Polls a deployment until it leaves PENDING/DEPLOYING. */
export async function waitForDeployment(api: Api, id: string, timeoutMs = 20_000): Promise<{ status: string; reason: string | null }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await api<{ status: string; reason: string | null }>('GET', `/api/v1/deployments/${id}`);
    if (res.body.status !== 'PENDING' && res.body.status !== 'DEPLOYING') return res.body;
    if (Date.now() > until) throw new Error(`deployment ${id} still ${res.body.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The body of an answer that must have `status`; otherwise the assertion names the call and shows the body. */
export async function expectStatus<T = any>(api: Api, method: string, path: string, body?: unknown, status = 200): Promise<T> {
  const res = await api<T>(method, path, body);
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status);
  return res.body;
}
