// The machine's memory read bandwidth for the LLM bench: compiles bench/support/read-bandwidth.c
// (cc -O3 -march=native -pthread) into bench/out/ once, runs it with the bench's thread count over
// a buffer far larger than the caches, and returns the median pass. Null, with the reason, where
// there is no C compiler (the bench then prints no bandwidth fraction).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SOURCE = path.join(HERE, 'read-bandwidth.c');
const BINARY = path.join(HERE, '..', 'out', 'read-bandwidth');

export interface ReadBandwidth {
  /** GB/s (1e9 bytes), median over the passes. */
  medianGBs: number;
  maxGBs: number;
  passesGBs: number[];
  bufferBytes: number;
  threads: number;
}

function compiled(): string {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs) return BINARY;
  mkdirSync(path.dirname(BINARY), { recursive: true });
  const cc = process.env.CC || 'cc';
  const res = spawnSync(cc, ['-O3', '-march=native', '-pthread', '-o', BINARY, SOURCE], { encoding: 'utf8' });
  if (res.error) throw new Error(`${cc}: ${res.error.message}`);
  if (res.status !== 0) throw new Error(`${cc} failed on ${path.basename(SOURCE)}:\n${res.stderr}`);
  return BINARY;
}

/** Reads a `mib` MiB buffer `passes` times with `threads` threads (default 1 GiB, 20 passes). */
export function measureReadBandwidth(threads: number, mib = 1024, passes = 20): ReadBandwidth {
  const bin = compiled();
  const res = spawnSync(bin, [String(mib), String(threads), String(passes)], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`read-bandwidth exited with ${res.status}: ${res.stderr.trim()}`);
  const j = JSON.parse(res.stdout) as { bytes: number; threads: number; passes_gbs: number[]; median_gbs: number; max_gbs: number };
  return { medianGBs: j.median_gbs, maxGBs: j.max_gbs, passesGBs: j.passes_gbs, bufferBytes: j.bytes, threads: j.threads };
}
