// The CUDA backend's block decoders (native/backends/cuda/llm/quant.cuh) on the host, against the
// engine's dequantize_row: test/helpers/cuda-codec-check.cu compiled with nvcc and run here,
// so the device byte layouts of every quantized type are checked without a GPU (exact, or 1e-6 of
// the terms for the types with mins: see that file). Skipped where nvcc is not installed.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nvcc = process.env['NVCC'] ?? 'nvcc';
const hasNvcc = spawnSync(nvcc, ['--version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!hasNvcc)('CUDA block decoders on the host', () => {
  it('decode every quantized type as dequantize_row does', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codec-check-'));
    try {
      const exe = path.join(dir, 'codec-host-check');
      execFileSync(nvcc, [
        '-std=c++17', '-O1', '-x', 'cu',
        path.join(ROOT, 'test/helpers/cuda-codec-check.cu'), path.join(ROOT, 'native/ggml/types.cc'),
        '-o', exe,
      ], { stdio: ['ignore', 'ignore', 'pipe'] });
      const run = spawnSync(exe, { encoding: 'utf8' });
      const lines = run.stdout.trim().split('\n').map((l) => l.split(' '));
      expect(lines.map(([name]) => name)).toEqual(['Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_NL', 'IQ4_XS', 'MXFP4']);
      for (const [name, bad, values] of lines) expect(`${name}: ${bad} mismatches of ${values}`).toBe(`${name}: 0 mismatches of ${values}`);
      expect(run.status, run.stderr).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
