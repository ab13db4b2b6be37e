// The test-only addon, platform_testing.node (native/testing/): entry points that only tests call,
// built beside platform.node (binding.gyp and CMakeLists.txt build both) and never part of the
// shipping addon. It is looked for next to PLATFORM_ADDON_PATH when that is set, else in
// build/Release/ (npm install), else in build-cuda/Release/ (npm run build:cuda).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { packageRoot } from '../../src/native/addon.js';
import type { SimdLevel } from '../../src/native/surface.js';

export interface TestingAddon {
  /** One CPU kernel of one SIMD level on the test's data (native/testing/llm_kernel_check.cc). */
  llmKernelCheck(op: 'matmul' | 'attend' | 'silu' | 'gelu', args: object, simd?: SimdLevel): Float32Array;
  llmKernelCheck(op: 'quantize', args: object, simd?: SimdLevel): Uint8Array;
  /** The engine's GGML type table: every type id it supports (native/testing/ggml_types_check.cc). */
  ggmlTypes(): Array<{ id: number; name: string; blockElements: number; blockBytes: number }>;
  /** The engine's dequantize_row (native/ggml/types.cc) of n elements of blocks of type id. */
  ggmlDequantize(typeId: number, bytes: Uint8Array, n: number): Float32Array;
  /** Prompt-lookup drafting (native/llm/prompt_lookup.h) on the test's history. */
  ngramDraft(prompt: number[], generated: number[], options: { maxTokens: number; ngramMax: number; ngramMin: number }, limit: number): number[];
  /** A fresh StepCost given the observations [tokens, ms], then ratio(n, n0) for each query [n, n0]. */
  stepCostRatios(observations: Array<[number, number]>, queries: Array<[number, number]>): number[];
  /** p + p^2 + ... + p^k. */
  expectedAccepted(p: number, k: number): number;
}

const FILE = 'platform_testing.node';

function candidates(): string[] {
  const override = process.env['PLATFORM_ADDON_PATH'];
  if (override) return [path.join(path.dirname(path.resolve(override)), FILE)];
  const root = packageRoot();
  return [path.join(root, 'build', 'Release', FILE), path.join(root, 'build-cuda', 'Release', FILE)];
}

/** Loads platform_testing.node; throws naming where it looked and how to build it. */
export function loadTestingAddon(): TestingAddon {
  const tried = candidates();
  const file = tried.find((f) => existsSync(f));
  if (file === undefined) {
    throw new Error(`${FILE} not built (looked for ${tried.join(', ')}): run "npm run build:native"`);
  }
  return createRequire(import.meta.url)(file) as TestingAddon;
}
