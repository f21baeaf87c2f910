#!/usr/bin/env bash
# Configures and builds kbisect into build/ (binaries in build/bin/, tests in build/tests/).
#   scripts/build.sh [extra cmake args...]          everything: binaries, tests, benchmarks
#   scripts/build.sh --binaries [extra cmake args...]
#       only kbisect, kbisect-coordinator and kbisect-worker (README command (1)); needs none of
#       the test-only packages. A later plain scripts/build.sh in the same tree adds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
tests=ON
if [ "${1:-}" = "--binaries" ]; then
  shift
  targets=(--target kbisect kbisect-coordinator kbisect-worker)
  # Keep a tree that already has the tests configured as it is: building three targets of it
  # costs nothing more, and switching the option off would drop its test targets.
  tests=$(sed -n 's/^KBISECT_BUILD_TESTS:BOOL=//p' build/CMakeCache.txt 2>/dev/null || true)
  tests=${tests:-OFF}
fi
generator=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# Configuring again is cheap when nothing changed, and switches the tests on in a tree that
# command (1) configured without them.
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DKBISECT_BUILD_TESTS=$tests" "$@" >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
