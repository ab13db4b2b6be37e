#!/usr/bin/env bash
# The CUDA measurements of bench/cuda/NOTES.md, run on the GPU machine (an H200): builds the
# standalone tools with CMake (no Node needed), checks every kernel against the host reference,
# writes the synthetic Llama-3-8B GGUFs and benchmarks them, and compares CUDA with the CPU
# backend (logits, greedy decoding of stories260K.gguf).
#
#   bash bench/cuda/run-on-device.sh [check|bench-q8|bench-f16|compare|all] [STORIES_GGUF]
#
#   check      configure + build, nvidia-smi, platform-cuda-check (every launcher vs the host)
#   bench-q8   build, make the Llama-3-8B Q8_0 GGUF (~8.5 GB), bench on cuda, CPU-vs-CUDA logits
#   bench-f16  build, make the Llama-3-8B F16 GGUF (~16 GB), bench on cuda, CPU-vs-CUDA logits
#   compare    build, stories260K.gguf greedy CUDA vs CPU vs test/data/stories260k-greedy.json,
#              and a tiny synthetic model's logits, CUDA vs CPU
#   all        everything above (run the stages one by one when each call is limited to 10 min)
#
# Each stage stays under ~9 minutes (every step runs under `timeout`); the build is reused when
# BUILD_DIR is still there (a warm machine), so later stages skip most of it.
#
# stories260K.gguf is looked up at: the second argument, $STORIES, ../shared/fixtures/,
# shared/fixtures/, .device/ (scripts/device/pack.sh puts it there; carry ".device"), and
# bench/cuda/fixtures/ (not git-ignored, so the device tool carries a copy put there).
#
# Environment: OUT (results; default bench/out/cuda), BUILD_DIR (default /tmp/platform-cuda-tools),
# MODEL_DIR (the GGUFs; default /dev/shm with >= 30 GiB free, else /tmp), CUDA_ARCH (default 90a-real: an H100/H200 only build),
# JOBS (default 16), BATCHES (default 1,16,64,256), PROMPT (512), GEN (128), DEADLINE (530 s).
set -uo pipefail

STAGE="${1:-all}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/bench/out/cuda}"
BUILD_DIR="${BUILD_DIR:-/tmp/platform-cuda-tools}"
# The GGUFs go to /dev/shm when it has room for them (written at memory speed; a slow disk takes
# minutes for the 16 GB F16 file), else /tmp.
if [ -z "${MODEL_DIR:-}" ]; then
  MODEL_DIR=/tmp
  if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2 {print int($4 / 1048576)}')" -ge 30 ]; then MODEL_DIR=/dev/shm; fi
fi
CUDA_ARCH="${CUDA_ARCH:-90a-real}"
JOBS="${JOBS:-16}"
BATCHES="${BATCHES:-1,16,64,256}"
PROMPT="${PROMPT:-512}"
GEN="${GEN:-128}"
DEADLINE="${DEADLINE:-530}"
mkdir -p "$OUT"
LOG="$OUT/run-$STAGE.log"
START=$(date +%s)
FAILED=0

say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$LOG"; }
# step NAME SECONDS CMD...: runs CMD under a time limit, output to the terminal and OUT/NAME.txt.
# The whole run stays within DEADLINE seconds (default 530: the device tool stops a command at
# 600): a step gets min(its limit, the time left), and is skipped when less than 20 s are left.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((DEADLINE - ($(date +%s) - START)))
  if [ "$left" -lt 20 ]; then
    say "-- $name skipped: out of time (run its stage on its own)"
    FAILED=1
    return 125
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  say "== $name (limit ${limit}s): $*"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    say "!! $name exited with $rc$([ "$rc" -eq 124 ] && echo ' (timed out)')"
    FAILED=1
  else
    say "ok $name"
  fi
  return "$rc"
}

build() {
  if ! command -v cmake >/dev/null; then say "cmake not found"; exit 1; fi
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
  step configure 120 cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DPLATFORM_CUDA=ON \
    -DPLATFORM_ADDON=OFF -DPLATFORM_TOOLS_CUDA_ARCHITECTURES="$CUDA_ARCH" || exit 1
  step build 300 cmake --build "$BUILD_DIR" -j"$JOBS" --target platform-cuda-check platform-llm-bench platform-make-gguf || exit 1
}

device_info() {
  step nvidia-smi 30 nvidia-smi
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv >"$OUT/gpu.csv" 2>&1 || true
  { nproc; free -g; df -h "$MODEL_DIR"; } >"$OUT/host.txt" 2>&1 || true
}

make_model() {  # make_model TYPE FILE LIMIT
  if [ -s "$2" ]; then say "reusing $2"; return 0; fi
  local avail
  avail=$(df -Pk "$(dirname "$2")" | awk 'NR==2 {print int($4 / 1048576)}')
  say "disk free in $(dirname "$2"): ${avail} GiB"
  step "make-gguf-$1" "$3" "$BUILD_DIR/platform-make-gguf" --shape llama3-8b --type "$1" --out "$2" --threads "$JOBS"
}

bench_model() {  # bench_model TYPE
  local t="$1" f="$MODEL_DIR/llama3-8b-random-$1.gguf"
  make_model "$t" "$f" 150 || return 1
  # Throughput and latency on the GPU (bandwidth measured by the tool itself).
  step "bench-$t" 240 "$BUILD_DIR/platform-llm-bench" --model "$f" --backend cuda --prompt "$PROMPT" --gen "$GEN" \
    --batches "$BATCHES" --json "$OUT/bench-$t.json"
  # The same file's logits on CUDA and on the CPU backend (8 positions) and 8 greedy tokens.
  step "compare-$t" 150 "$BUILD_DIR/platform-llm-bench" --model "$f" --compare --compare-prompt 8 --compare-gen 8 \
    --json "$OUT/compare-$t.json"
}

find_stories() {
  local c
  for c in "${1:-}" "${STORIES:-}" "$ROOT/../shared/fixtures/stories260K.gguf" "$ROOT/shared/fixtures/stories260K.gguf" \
           "$ROOT/.device/stories260K.gguf" "$ROOT/bench/cuda/fixtures/stories260K.gguf"; do
    if [ -n "$c" ] && [ -s "$c" ]; then echo "$c"; return 0; fi
  done
  return 1
}

compare_small() {
  local stories
  if stories=$(find_stories "${1:-}"); then
    step compare-stories260k 120 "$BUILD_DIR/platform-llm-bench" --model "$stories" --compare --compare-prompt 16 \
      --compare-gen 200 --expect "$ROOT/test/data/stories260k-greedy.json" --json "$OUT/compare-stories260k.json"
  else
    say "stories260K.gguf not found (pass its path, or copy it to bench/cuda/fixtures/): skipping its greedy check"
  fi
  # Random-weight models have close top logits: a long greedy run may flip a near-tie between
  # the f16 KV cache and the CPU's f32 one without any bug, so their greedy check is short; the
  # trained stories260K above is held to 200 tokens.
  for t in q8_0 f16 q4_k q6_k q4_0; do
    local f="$MODEL_DIR/tiny-random-$t.gguf"
    [ -s "$f" ] || "$BUILD_DIR/platform-make-gguf" --shape tiny --type "$t" --out "$f" >>"$LOG" 2>&1
    step "compare-tiny-$t" 60 "$BUILD_DIR/platform-llm-bench" --model "$f" --compare --compare-prompt 16 --compare-gen 16 \
      --json "$OUT/compare-tiny-$t.json"
  done
}

say "stage $STAGE, repo $ROOT, out $OUT, build $BUILD_DIR"
git -C "$ROOT" log -1 --oneline >"$OUT/commit.txt" 2>/dev/null || true
case "$STAGE" in
  check)
    build
    device_info
    step cuda-check 240 "$BUILD_DIR/platform-cuda-check" --json "$OUT/cuda-check.json"
    ;;
  bench-q8)
    build
    device_info
    bench_model q8_0
    ;;
  bench-f16)
    build
    device_info
    bench_model f16
    ;;
  compare)
    build
    compare_small "${2:-}"
    ;;
  all)
    build
    device_info
    step cuda-check 120 "$BUILD_DIR/platform-cuda-check" --json "$OUT/cuda-check.json"
    compare_small "${2:-}"
    bench_model q8_0
    bench_model f16
    ;;
  *)
    echo "usage: $0 [check|bench-q8|bench-f16|compare|all] [STORIES_GGUF]" >&2
    exit 2
    ;;
esac
say "stage $STAGE done in $(($(date +%s) - START)) s$([ "$FAILED" -ne 0 ] && echo ', with failures')"
exit "$FAILED"
