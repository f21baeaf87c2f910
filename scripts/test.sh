#!/usr/bin/env bash
# README command (2): installs what is missing, builds, and runs every test with ctest.
#   scripts/test.sh [ctest args...]                  GCC build in build/
#   scripts/test.sh --sanitize address,undefined [ctest args...]
#       clang build with those sanitizers (and -Wthread-safety -Werror; with address also the
#       fuzz targets) in build-san-<list>/,
#       the whole suite under them: any ASan/UBSan report fails its test; LeakSanitizer too,
#       except the stacks tests/sanitizers/lsan.supp names (each with its reason).
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
      -DKBISECT_SANITIZE="$sanitizers" -DKBISECT_THREAD_SAFETY=ON -DKBISECT_FUZZ="$fuzz"
  fi
  cmake --build "$dir" -j "$(nproc)"
  supp="$PWD/tests/sanitizers"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  cd "$dir"
  # Instrumented binaries are slower: the build triples each test's timeout (CMakeLists.txt).
  exec ctest --output-on-failure -j "$(nproc)" --timeout 2700 "$@"
fi
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900 "$@"
