// The tabular executor on CUDA device 0 (instance type cuda): MLPs at batches 1, 63 and 4096
// against onnxruntime-node and the CPU path, the crossover threshold, the per-node device GEMM, and
// a realtime deployment with instance_type cuda. Skipped unless this host has the CUDA build of
// the addon and a device (npm run build:cuda on a GPU machine).
//
// Tolerance: |gpu - reference| <= 1e-4 * |reference| + 2e-5. The device kernel is f32 with f32
// accumulation; it differs from the CPU's gemm_f32 and from onnxruntime only in summation order
// (and expf / tanhf against the C library), i.e. a few ulps of the sums of |a * b| (K <= 256 here,
// values of order 1). Below the crossover the CPU path runs and results are bit-identical.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cudaUnavailableReason } from '../src/native/cuda-availability.js';
import { compileTabularModel, type TabularModel } from '../src/tabular/executor/index.js';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { rng } from './helpers/random.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { attr, ModelBuilder } from './helpers/onnx-builder.js';
import { normalized, randomFloats } from './helpers/tabular-data.js';

const unavailable = cudaUnavailableReason();
const BATCHES = [1, 63, 4096];
const RTOL = 1e-4;
const ATOL = 2e-5;

function weights(n: number, seed: number, scale: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => (r() - 0.5) * 2 * scale);
}

/** PyTorch style: Gemm (transB 1, bias C) + Relu, Gemm + Tanh, Gemm + Sigmoid. */
function gemmMlp(sizes: readonly number[]): Uint8Array {
  const b = new ModelBuilder({ opsets: { '': 13 } }).input('x', 'float', ['N', sizes[0]!]);
  const acts = ['Relu', 'Tanh', 'Sigmoid'];
  let prev = 'x';
  for (let l = 0; l + 1 < sizes.length; l++) {
    const [k, n] = [sizes[l]!, sizes[l + 1]!];
    b.initializer(`W${l}`, 'float', [n, k], weights(n * k, 10 + l, Math.sqrt(3 / k)));
    b.initializer(`B${l}`, 'float', [n], weights(n, 20 + l, 0.1));
    b.node('Gemm', [prev, `W${l}`, `B${l}`], [`h${l}`], { transB: 1, alpha: attr.float(l === 0 ? 1 : 0.5), beta: attr.float(1) }, { name: `dense${l}` });
    b.node(acts[l % acts.length]!, [`h${l}`], [`a${l}`], {}, { name: `act${l}` });
    prev = `a${l}`;
  }
  return b.node('Identity', [prev], ['y'], {}, { name: 'out' }).output('y', 'float', ['N', sizes.at(-1)!]).toBytes();
}

/** sklearn / Keras style: MatMul + Add (bias) + Relu, ..., MatMul + Add; then Softmax on the CPU. */
function matmulMlp(sizes: readonly number[]): Uint8Array {
  const b = new ModelBuilder({ opsets: { '': 13 } }).input('x', 'float', ['N', sizes[0]!]);
  let prev = 'x';
  const last = sizes.length - 2;
  for (let l = 0; l <= last; l++) {
    const [k, n] = [sizes[l]!, sizes[l + 1]!];
    b.initializer(`W${l}`, 'float', [k, n], weights(k * n, 30 + l, Math.sqrt(3 / k)));
    b.initializer(`B${l}`, 'float', [1, n], weights(n, 40 + l, 0.1));
    b.node('MatMul', [prev, `W${l}`], [`m${l}`], {}, { name: `matmul${l}` });
    b.node('Add', [`B${l}`, `m${l}`], [`z${l}`], {}, { name: `bias${l}` });
    if (l < last) b.node('Relu', [`z${l}`], [`a${l}`], {}, { name: `relu${l}` });
    prev = l < last ? `a${l}` : `z${l}`;
  }
  return b.node('Softmax', [prev], ['y'], { axis: 1 }, { name: 'softmax' }).output('y', 'float', ['N', sizes.at(-1)!]).toBytes();
}

/** A Gemm the graph cannot chain (B is a graph input, transA 1): the per-node device GEMM. */
function dynamicGemm(k: number, n: number): Uint8Array {
  return new ModelBuilder({ opsets: { '': 13 } })
    .input('xt', 'float', [k, 'N'])
    .input('w', 'float', [k, n])
    .initializer('C', 'float', [1, n], weights(n, 50, 1))
    .node('Gemm', ['xt', 'w', 'C'], ['y'], { transA: 1, alpha: attr.float(0.75), beta: attr.float(2) }, { name: 'dyn' })
    .output('y', 'float', ['N', n])
    .toBytes();
}

function expectClose(actual: Float32Array, expected: Float32Array, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  let worst = 0;
  let at = -1;
  for (let i = 0; i < actual.length; i++) {
    const excess = Math.abs(actual[i]! - expected[i]!) - (RTOL * Math.abs(expected[i]!) + ATOL);
    if (!(excess <= worst)) {
      worst = excess;
      at = i;
    }
  }
  expect(at, `${what}: element ${at} is ${actual[at]} but the reference is ${expected[at]}`).toBe(-1);
}

// onnxruntime-node when installed (it is a devDependency, too big to carry to a GPU machine that
// has no registry: there the CPU path, itself checked against onnxruntime elsewhere, is the reference).
type Ort = typeof import('onnxruntime-node');
const ort: Ort | null = await import('onnxruntime-node').then((m) => ((m as { default?: Ort }).default ?? m) as Ort, () => null);

async function ortRun(bytes: Uint8Array, feeds: Record<string, { data: Float32Array; dims: number[] }>): Promise<Float32Array | null> {
  if (ort === null) return null;
  const session = await ort.InferenceSession.create(bytes);
  try {
    const tensors = Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, new ort.Tensor('float32', v.data, v.dims)]));
    const out = await session.run(tensors);
    return out[session.outputNames[0]!]!.data as Float32Array;
  } finally {
    await session.release();
  }
}

describe.skipIf(unavailable !== null)('tabular models on CUDA', () => {
  const models: TabularModel[] = [];
  const compile = (bytes: Uint8Array, options: Parameters<typeof compileTabularModel>[1] = {}) => {
    const m = compileTabularModel(normalized(bytes), options);
    models.push(m);
    return m;
  };
  afterAll(() => {
    for (const m of models) m.dispose();
  });

  for (const [name, build, sizes] of [
    ['Gemm + Relu/Tanh/Sigmoid MLP 64-256-256-1', gemmMlp, [64, 256, 256, 1]],
    ['MatMul + Add + Relu MLP 32-128-64-10 with Softmax', matmulMlp, [32, 128, 64, 10]],
  ] as const) {
    it(`${name}: matches onnxruntime and the CPU at batches ${BATCHES.join(', ')}`, async () => {
      const bytes = build(sizes);
      const cpu = compile(bytes);
      const always = compile(bytes, { device: 'cuda', cudaMinRows: 0 });
      const crossover = compile(bytes, { device: 'cuda', cudaMinRows: 64 });
      const info = always.describe();
      expect(info.device).toBe('cuda');
      expect(info.deviceLayers).toBe(sizes.length - 1);
      expect(info.deviceBytes).toBeGreaterThan(0);
      expect(crossover.describe().cudaMinRows).toBe(64);
      for (const rows of BATCHES) {
        const data = randomFloats(rows * sizes[0], rows + 1);
        const input = [{ name: 'x', dims: [rows, sizes[0]], data }];
        const reference = await ortRun(bytes, { x: { data, dims: [rows, sizes[0]] } });
        const onCpu = cpu.runSync(input)[0]!.data as Float32Array;
        const onGpu = (await always.run(input))[0]!.data as Float32Array;
        if (reference) expectClose(onGpu, reference, `device, ${rows} rows, against onnxruntime`);
        expectClose(onGpu, onCpu, `device, ${rows} rows, against the CPU path`);
        // Below the crossover the CPU path runs: bit-identical to the CPU model.
        const mixed = crossover.runSync(input)[0]!.data as Float32Array;
        if (rows < 64) expect(mixed).toEqual(onCpu);
        else expectClose(mixed, onCpu, `crossover model, ${rows} rows`);
      }
    });
  }

  it('runs a Gemm it cannot chain (transA, B an input) on the device, per node', async () => {
    const [k, n] = [96, 80];
    const bytes = dynamicGemm(k, n);
    const cpu = compile(bytes);
    const gpu = compile(bytes, { device: 'cuda', cudaMinRows: 0 });
    expect(gpu.describe().deviceLayers).toBe(0);
    for (const rows of BATCHES) {
      const xt = randomFloats(k * rows, 7 + rows);
      const w = randomFloats(k * n, 8);
      const inputs = [
        { name: 'xt', dims: [k, rows], data: xt },
        { name: 'w', dims: [k, n], data: w },
      ];
      const reference = await ortRun(bytes, { xt: { data: xt, dims: [k, rows] }, w: { data: w, dims: [k, n] } });
      const onGpu = gpu.runSync(inputs)[0]!.data as Float32Array;
      if (reference) expectClose(onGpu, reference, `per-node device GEMM, ${rows} rows`);
      expectClose(onGpu, cpu.runSync(inputs)[0]!.data as Float32Array, `per-node device GEMM against the CPU, ${rows} rows`);
    }
  });

  it('runs concurrent batches on one compiled model', async () => {
    const bytes = gemmMlp([64, 256, 256, 1]);
    const cpu = compile(bytes);
    const gpu = compile(bytes, { device: 'cuda', cudaMinRows: 0 });
    const inputs = Array.from({ length: 8 }, (_, i) => [{ name: 'x', dims: [500 + i * 300, 64], data: randomFloats((500 + i * 300) * 64, 100 + i) }]);
    const outs = await Promise.all(inputs.map((input) => gpu.run(input)));
    outs.forEach((out, i) => expectClose(out[0]!.data as Float32Array, cpu.runSync(inputs[i]!)[0]!.data as Float32Array, `concurrent run ${i}`));
  });

  it('reports a bad input the same way as the CPU path', () => {
    const gpu = compile(gemmMlp([64, 256, 256, 1]), { device: 'cuda', cudaMinRows: 0 });
    expect(() => gpu.runSync([{ name: 'x', dims: [4, 63], data: new Float32Array(4 * 63) }])).toThrow(RangeError);
  });

  describe('a realtime deployment with instance_type cuda', () => {
    let host: TestHost;
    let api: Api;
    beforeAll(async () => {
      host = await listen(await startInProcessHost({ PREDICT_MAX_WAIT_MICROS: '0' }));
      api = apiClient(host.url, (await tokenFor(host)).token);
    });
    afterAll(async () => {
      await host.close();
    });

    it('goes live on the device and answers as the CPU variation does', async () => {
      const features = Array.from({ length: 64 }, (_, i) => `f${i}`);
      expect((await api('POST', '/api/v1/models', { model_id: 'gpu-mlp' })).status).toBe(201);
      const build = await api<{ build_id: string }>('POST', `/api/v1/models/gpu-mlp/builds?feature_names=${features.join(',')}`, gemmMlp([64, 256, 256, 1]));
      expect(build.status, JSON.stringify(build.body)).toBe(201);
      const dep = await api<{ deployment_id: string; instance_type: string }>('POST', '/api/v1/models/gpu-mlp/deployments', { build_id: build.body.build_id, instance_type: 'cuda' });
      expect(dep.status, JSON.stringify(dep.body)).toBe(202);
      expect(dep.body.instance_type).toBe('cuda');
      const done = await waitForDeployment(api, dep.body.deployment_id);
      expect(done.status, done.reason ?? '').toBe('LIVE');
      const r = rng(5);
      const rows = 512;
      const data = Array.from({ length: rows }, () => features.map(() => r() * 2 - 1));
      const res = await api<Array<{ y: number }>>('POST', '/v1/gpu-mlp/predict', { columns: features, index: data.map((_, i) => i), data });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const reference = compile(gemmMlp([64, 256, 256, 1])).runSync([{ name: 'x', dims: [rows, 64], data: Float32Array.from(data.flat()) }])[0]!.data as Float32Array;
      expectClose(Float32Array.from(res.body.map((row) => row.y)), reference, 'predict on the cuda variation');
    });
  });
});
