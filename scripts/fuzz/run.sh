#!/usr/bin/env bash
# Builds the fuzz targets, writes their seeds and runs each for a bounded time:
#   scripts/fuzz/run.sh [total-seconds] [target...]
# total-seconds (default 180) is split evenly between the targets (default: all of them). Each
# runs in-process (one job, one worker) on build-fuzz/corpus/<target> (kept between local runs;
# what it finds is added there) plus the seeds (build-fuzz/seeds/<target>, read-only), and prints
# a line: executions, corpus size, crashes. A crash (a sanitizer report, an uncaught exception,
# a hang past FUZZ_TIMEOUT seconds, memory past 2 GiB) is copied to
# test/data/fuzz-regressions/<target>/ and makes the script exit 1 after the other targets ran.
# Reproduce one with build-fuzz/<target> <file>.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${FUZZ_OUT:-build-fuzz}
total=${1:-180}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(gguf_reader_fuzz tabular_graph_fuzz grammar_fuzz)
per=$((total / ${#targets[@]}))
((per >= 1)) || per=1

echo "--- fuzz: building (clang, libFuzzer + ASan + UBSan) into $OUT/"
start=$SECONDS
scripts/fuzz/build.sh >"$OUT.build.log" 2>&1 || { tail -40 "$OUT.build.log"; exit 1; }
echo "    built in $((SECONDS - start)) s"
rm -rf "$OUT/seeds"
npx --no-install tsx scripts/fuzz/seeds.ts "$OUT/seeds" 2>&1 | grep -v '^npm warn' | sed 's/^/    /'

failed=0
for t in "${targets[@]}"; do
  corpus="$OUT/corpus/$t" artifacts="$OUT/artifacts/$t" log="$OUT/$t.log"
  mkdir -p "$corpus" "$artifacts" "$OUT/seeds/$t"
  rm -f "$artifacts"/*
  rc=0
  # -timeout: a hang, not a slow CI machine; -rss_limit_mb: libFuzzer's default, said out loud.
  nice "$OUT/$t" -max_total_time="$per" -timeout="${FUZZ_TIMEOUT:-60}" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$OUT/seeds/$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  found=$(find "$artifacts" -type f | wc -l)
  echo "--- fuzz: $t: ${execs:-?} executions in ${secs:-$per} s, corpus $(find "$corpus" -type f | wc -l) files" \
    "(+ $(find "$OUT/seeds/$t" -type f | wc -l) seeds), crashes $found, exit $rc"
  if ((rc != 0 || found > 0)); then
    failed=1
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*deadly signal|.*uncaught exception|.*out-of-memory|.*timeout after)' "$log" | head -10 | sed 's/^/    /' || true
    grep -E '^ +#[0-9]+ ' "$log" | head -15 | sed 's/^/    /' || true
    dest="test/data/fuzz-regressions/$t"
    mkdir -p "$dest"
    for f in "$artifacts"/*; do
      [[ -f $f ]] || continue
      cp "$f" "$dest/"
      echo "    crashing input kept as $dest/$(basename "$f") (reproduce: $OUT/$t $dest/$(basename "$f"))"
    done
    echo "    full log: $log"
  fi
done
exit "$failed"
