#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan + UBSan) into build-fuzz/ and runs each
# for SECONDS on its corpus, seeded from tests/fixtures and tests/fuzz/seeds. Prints one line a
# target: executions, exec/s, coverage (libFuzzer's cov: and ft:) and the corpus size. A crash,
# leak, timeout or sanitizer report fails the run; the input is kept in build-fuzz/crashes/.
#   scripts/fuzz.sh [--time SECONDS] [--build-dir DIR] [TARGET...]     (default 30 s, all)
# Reproduce a finding: build-fuzz/fuzz/TARGET build-fuzz/crashes/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=30
dir=build-fuzz
while [ $# -gt 0 ]; do
  case "$1" in
    --time) seconds="$2"; shift 2 ;;
    --build-dir) dir="$2"; shift 2 ;;
    *) break ;;
  esac
done
all=(metric_fuzz metric_suite_fuzz triage_fuzz root_cause_fuzz smi_fuzz submit_job_fuzz task_result_fuzz)
targets=("$@")
if [ $# -eq 0 ]; then targets=("${all[@]}"); fi
scripts/install-deps.sh
if [ ! -f "$dir/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DKBISECT_FUZZ=ON >/dev/null
fi
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"

# seed TARGET: fills $dir/corpus/TARGET from the checked-in inputs (idempotent).
seed() {
  local target="$1" out="$dir/corpus/$1" f
  mkdir -p "$out"
  case "$target" in
    metric_fuzz) cp tests/fuzz/seeds/metric/* "$out/" ;;
    metric_suite_fuzz) cp tests/fuzz/seeds/metric_suite/* "$out/" ;;
    triage_fuzz)
      # The first byte picks the format: 0 = auto-detect.
      for f in tests/fixtures/triage/*.json tests/fixtures/triage/*.jsonl tests/fixtures/triage/*.csv; do
        { printf '\0'; head -c 65536 "$f"; } > "$out/$(basename "$f")"
      done ;;
    root_cause_fuzz) cp tests/fuzz/seeds/root_cause/* "$out/" ;;
    smi_fuzz) cp tests/fixtures/identity/* "$out/" ;;
    submit_job_fuzz)
      for f in tests/fuzz/seeds/submit_job/*.txtpb; do
        protoc -I proto --encode=kbisect.v1.SubmitJobRequest proto/kbisect/v1/kbisect.proto \
          < "$f" > "$out/$(basename "$f" .txtpb).bin"
      done ;;
    task_result_fuzz) cp tests/fuzz/seeds/task_result/* "$out/" ;;
  esac
}

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# fuzz_one TARGET: runs it for $seconds and writes its one-line summary to $dir/fuzz-TARGET.summary;
# exits non-zero on a finding.
fuzz_one() {
  local target="$1" log="$dir/fuzz-$1.log" rc=0 runs speed last cov ft corp
  # -rss_limit_mb and -timeout make a blow-up or a hang a finding too; -max_len bounds inputs.
  "$dir/fuzz/$target" "$dir/corpus/$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$dir/crashes/$target/" > "$log" 2>&1 || rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  speed=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  corp=$(grep -oE 'corp: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  if [ "$rc" -ne 0 ]; then
    { echo "fuzz $target: FAILED (rc $rc) after $runs runs; see $log and $dir/crashes/$target/"
      grep -E 'ERROR:|SUMMARY:|runtime error' "$log" | head -5 || true
    } > "$dir/fuzz-$target.summary"
  else
    echo "fuzz $target: $runs runs in ${seconds}s, $speed exec/s, cov: $cov ft: $ft corpus: $corp" \
      > "$dir/fuzz-$target.summary"
  fi
  return "$rc"
}

# One target a core at a time (each libFuzzer process is single-threaded); the summaries are
# printed in the targets' order.
parallel=$(nproc)
status=0
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  pids=()
  for target in "${targets[@]:i:parallel}"; do
    seed "$target"
    mkdir -p "$dir/crashes/$target"
    fuzz_one "$target" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  for target in "${targets[@]:i:parallel}"; do cat "$dir/fuzz-$target.summary"; done
done
exit "$status"
