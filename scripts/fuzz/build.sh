#!/usr/bin/env bash
# Builds the libFuzzer targets into build-fuzz/ (or $FUZZ_OUT): the engine's sources from
# native/sources.json (engine + no_cuda) compiled once with clang++ -fsanitize=fuzzer-no-link,
# address,undefined -O1 -g into a static library, each target (scripts/fuzz/targets/*.cc) linked
# against it. Incremental (make, with header dependencies).
#
# Needs clang 16 or later with its libFuzzer runtime: the AVX2 kernels ask __builtin_cpu_supports
# for "f16c", which clang 14 (Debian 12's default clang) does not know. Debian 12 has clang-19:
#   apt-get install clang-19 libclang-rt-19-dev
# $FUZZ_CXX overrides the compiler.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${FUZZ_OUT:-build-fuzz}
CXX=${FUZZ_CXX:-clang++-19}
command -v "$CXX" >/dev/null 2>&1 || { echo "fuzz: $CXX not found (apt-get install clang-19 libclang-rt-19-dev, or set FUZZ_CXX)" >&2; exit 1; }
sources=$(node -e 'const s = require("./native/sources.json"); console.log([...s.engine, ...s.no_cuda].join(" "))')
jobs=${FUZZ_JOBS:-$(nproc)}
make -s -f scripts/fuzz/Makefile -j"$jobs" CXX="$CXX" OUT="$OUT" ENGINE_SOURCES="$sources" "$@"
