#!/usr/bin/env bash
# On the GPU machine: the test files that only run where a CUDA device is (skipped elsewhere):
# the LLM engine's CUDA backend against its CPU backend (every tensor type, both architectures,
# stories260K greedy, batching, graphs, seeded sampling), tabular models on the GPU and moving a
# live realtime model between cpu and cuda under load; then the
# tabular CPU/GPU crossover benchmark.
#   scripts/device/gpu-tests.sh          (needs .device/ and dist/ carried; see pack.sh)
set -eo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/setup.sh
OUTDIR=${OUT:-bench/out/cuda}
mkdir -p "$OUTDIR"
PLATFORM_FIXTURES_DIR=.device node node_modules/vitest/vitest.mjs run \
  test/llm-engine-cuda.test.ts test/tabular-cuda.test.ts test/realtime-instance-type.test.ts test/cli-instance-type.test.ts 2>&1 | tee "$OUTDIR/gpu-tests.txt" ||
  echo "!! GPU tests failed (the bench below still runs)"
# The tabular CPU/GPU crossover (bench/tabular-cuda.bench.ts).
node --import tsx bench/run.ts tabular-cuda 2>&1 | tee "$OUTDIR/tabular-cuda.txt"
