#!/usr/bin/env bash
# On the GPU machine: TTFT and TPOT through the HTTP host (bench/serving.bench.ts) with a library
# deployment on `cuda`, against the same workload in-process, on the Llama-3-8B-shaped GGUF.
#   scripts/device/http-bench.sh [q8_0|f16]      (needs .device/ and dist/ carried; see pack.sh)
set -eo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/setup.sh
TYPE=${1:-q8_0}
OUTDIR=${OUT:-bench/out/cuda}
mkdir -p "$OUTDIR" /tmp/gguf
MODEL=/tmp/gguf/llama3-8b-$TYPE.gguf
if [[ ! -f $MODEL ]]; then
  cmake -S . -B /tmp/build-tools -DCMAKE_BUILD_TYPE=Release -DCMAKE_JS_INC="$PWD/.device/node-include" >/dev/null
  cmake --build /tmp/build-tools -j16 --target platform-make-gguf >/dev/null
  /tmp/build-tools/platform-make-gguf --shape llama3-8b --type "$TYPE" --out "$MODEL"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUTDIR/serving-$TYPE-gpu.txt"
SERVING_BENCH_MODEL=$MODEL SERVING_BENCH_INSTANCE_TYPE=cuda SERVING_BENCH_CONCURRENCY=${CONCURRENCY:-1,16,64} \
  LLM_KV_CACHE_BYTES=${LLM_KV_CACHE_BYTES:-17179869184} SERVING_BENCH_REQUESTS=${REQUESTS:-64} node --import tsx bench/run.ts serving 2>&1 | tee "$OUTDIR/serving-$TYPE.txt"
