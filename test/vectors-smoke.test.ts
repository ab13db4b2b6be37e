import { it } from 'vitest';
import { listen, startInProcessHost, tokenFor } from './helpers/in-process-host.js';
import { apiClient } from './helpers/api.js';
it('smoke', async () => {
  const host = await listen(await startInProcessHost({ LOG_LEVEL: 'warn' }));
  const { token } = await tokenFor(host);
  const api = apiClient(host.url, token);
  let r = await api('POST', '/api/v1/vectors/collections', { name: 'docs', dimension: 128 });
  const bodies = [];
  for (let b = 0; b < 10; b++) bodies.push({ collection_name: 'docs', vector: Array.from({ length: 500 }, (_, i) => ({ id: `${b}-${i}`, values: Array.from({ length: 128 }, () => Math.random()) })) });
  let next = 0;
  const t0 = Date.now();
  await Promise.all([0, 1].map(async () => { while (next < bodies.length) { const b = bodies[next++]; const t = Date.now(); const res = await api('POST', '/api/v1/vectors/upsert', b); console.log(res.status, Date.now() - t, JSON.stringify(res.body).slice(0, 200)); } }));
  console.log('acked', Date.now() - t0);
  r = await api('POST', '/api/v1/vectors/search', { collection_name: 'docs', reference_vector: { element: bodies[0].vector[0].values } });
  console.log('searched', Date.now() - t0, JSON.stringify(r.body).slice(0, 200));
  await host.close();
  console.log(host.logs.join('').slice(-3000));
});
