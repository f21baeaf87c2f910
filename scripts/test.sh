#!/usr/bin/env bash
# README command (2): installs what is missing, builds, and runs every test with ctest.
#   scripts/test.sh [ctest args...]                  GCC build in build/, every test
#   scripts/test.sh --sanitize address,undefined [ctest args...]
#       clang build with those sanitizers (and -Wthread-safety -Werror; with address also the
#       fuzz targets; no benchmarks) in build-san-<list>/, and every test but the deploy ones
#       (ctest label deploy: the bundle, Kubernetes manifests and Slurm check packaging, not
#       memory) under them: any ASan/UBSan report fails its test; LeakSanitizer too, except the
#       stacks tests/sanitizers/lsan.supp names (each with its reason).
#   scripts/test.sh --sanitize thread [ctest args...]
#       the same with ThreadSanitizer in build-san-thread/, building and running only the tests
#       labelled concurrency (those that run threads or processes; single-threaded code has no
#       race to find): any data race, lock-order inversion or other TSan report, from a test or
#       from any process it started, fails the run, except what tests/sanitizers/tsan.supp names
#       (each with its reason).
#   In both sanitizer trees a few long tests run only the cases their kbisect_test names
#   (SANITIZED_CASES, THREAD_SANITIZED_CASES; docs/decisions.md 225).
# ctest args come after the tree's own selection: -L/-LE/-R narrow it further.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  sanitizers="${2:?--sanitize needs a list, e.g. address,undefined}"
  shift 2
  dir="build-san-${sanitizers//,/-}"
  # With ASan the same build carries the fuzz targets (coverage-instrumented), so that
  # scripts/fuzz.sh --build-dir "$dir" compiles nothing again (docs/decisions.md 81).
  fuzz=OFF
  if [[ ",$sanitizers," == *,address,* ]]; then fuzz=ON; fi
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
      -DKBISECT_SANITIZE="$sanitizers" -DKBISECT_THREAD_SAFETY=ON -DKBISECT_FUZZ="$fuzz" \
      -DKBISECT_BUILD_BENCH=OFF >/dev/null
  fi
  if [[ ",$sanitizers," == *,thread,* ]]; then
    selection=(-L concurrency)
    # Only what those tests run: their own binaries (a test whose name is a target) and the
    # three daemons and CLI that the integration tests start.
    targets=(kbisect kbisect-coordinator kbisect-worker)
    all_targets=$(ninja -C "$dir" -t targets all | sed -n 's/^\([A-Za-z0-9_-]*\): .*/\1/p')
    for t in $(cd "$dir" && ctest -N "${selection[@]}" | sed -n 's/^ *Test *#[0-9]*: //p'); do
      if grep -qx "$t" <<<"$all_targets"; then targets+=("$t"); fi
    done
    cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
  else
    selection=(-LE deploy)
    cmake --build "$dir" -j "$(nproc)"
  fi
  supp="$PWD/tests/sanitizers"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  if [[ ",$sanitizers," != *,thread,* ]]; then
    cd "$dir"
    # Instrumented binaries are slower: the build triples each test's timeout (CMakeLists.txt).
    exec ctest --output-on-failure -j "$(nproc)" --timeout 2700 "${selection[@]}" "$@"
  fi
  # TSan writes each process's reports to $reports/report.PID: a coordinator or worker that an
  # integration test started logs into a file the test deletes, and its exit status is not
  # TSan's, so ctest alone would miss its reports. Any report file fails the run below.
  reports="$PWD/$dir/tsan-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  export TSAN_OPTIONS="suppressions=$supp/tsan.supp:log_path=$reports/report:history_size=4:second_deadlock_stack=1"
  status=0
  (cd "$dir" && ctest --output-on-failure -j "$(nproc)" --timeout 2700 "${selection[@]}" "$@") ||
    status=$?
  if compgen -G "$reports/report.*" >/dev/null; then
    for f in "$reports"/report.*; do
      echo "=== $f"
      head -n 60 "$f"
    done
    echo "test.sh: ThreadSanitizer reported $(cat "$reports"/report.* | grep -c '^WARNING: ThreadSanitizer') times (full reports in $reports/)" >&2
    status=1
  fi
  exit "$status"
fi
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@"
