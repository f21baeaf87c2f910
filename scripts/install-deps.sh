#!/usr/bin/env bash
# Installs kbisect's dependencies from Debian bookworm packages.
#   scripts/install-deps.sh [--for demo|test]
#     demo: what building and running the three binaries needs (README command (1));
#     test: that plus what the tests and the hardening checks need (README command (2)); the
#           default.
# Idempotent: packages already present are left alone and apt is not even consulted.
# Run as root (or with sudo available). Nothing is downloaded outside apt.
set -euo pipefail

purpose=test
if [ "${1:-}" = "--for" ]; then
  purpose="${2:?--for needs demo or test}"
fi
case "$purpose" in
  demo|test) ;;
  *) echo "install-deps: --for takes demo or test, not '$purpose'" >&2; exit 2 ;;
esac

# What the build and the binaries need.
DEMO_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  # gRPC 1.51 + protobuf 3.21 (the wire contract and the services).
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev
  # libgit2 1.5: commit lists, metadata, diffs and worktree checkouts without forking git.
  libgit2-dev
  # abseil 20220623: Status/StatusOr, synchronization, strings, flat containers.
  libabsl-dev
  # RE2: metric extraction regexes with guaranteed linear time on arbitrary benchmark output.
  libre2-dev
  # CLI11: the command line of the three binaries.
  libcli11-dev
  # nlohmann-json: reading JSON benchmark output and dashboard files.
  nlohmann-json3-dev
  # SQLite: coordinator state (WAL, synchronous=FULL).
  libsqlite3-dev
  # cpp-httplib 0.11: `kbisect triage --dashboard URL` and its local test server, and the
  # coordinator's Prometheus endpoint (`kbisect-coordinator --metrics-listen`).
  libcpp-httplib-dev
)

# What only the tests, the benchmarks and the hardening checks need.
TEST_PACKAGES=(
  # GoogleTest/GoogleMock: unit and integration tests.
  libgtest-dev libgmock-dev
  # Chromium: the headless browser that checks the HTML job pages (`--html`) in the tests
  # (DOM, console errors, screenshots). Without it those tests skip and say why.
  chromium
  # Fonts, so headless screenshots of the pages draw text.
  fonts-dejavu-core
  # Slurm 22.05 (slurmctld, slurmd, sbatch, srun) and munge: tests/integration/slurm_test runs
  # the worker pool through deploy/slurm/ on a real single-node Slurm the test starts.
  slurm-wlm munge
  # clang 14 with its sanitizer and libFuzzer runtimes, and llvm-symbolizer for their stack
  # traces: scripts/test.sh --sanitize, scripts/check-thread-safety.sh, scripts/fuzz.sh.
  clang libclang-rt-14-dev llvm
  # patchelf: scripts/package.sh sets the bundle's $ORIGIN/../lib rpath on the shared libraries.
  patchelf
  # Python's gRPC and protobuf: tests/integration/health_reflection_test.py checks the daemon's
  # health and reflection services with a client that is not kbisect's own C++ stack.
  python3-grpcio python3-protobuf
  # Python's YAML parser: kueue_manifests_test reads the Kueue manifests and `kbisect k8s-job`'s
  # Job with it (tests/integration/k8s_schema_check.py); kubectl renders them (skipped without).
  python3-yaml
  # Prometheus's promtool: metrics_test lints the coordinator's /metrics exposition with it.
  prometheus
  # Real virtualenvs, pip, setuptools, wheel and a C extension's headers: build_layer_test and
  # python_builds_test bisect Python kernel packages built with `pip install -e .`.
  python3-venv python3-pip python3-setuptools python3-wheel python3-dev
  # redis-server: compiler_cache_remote_test shares ccache's remote storage between two
  # workers' caches through a real redis (`--compiler-cache-remote redis://...`).
  redis-server
)

PACKAGES=("${DEMO_PACKAGES[@]}")
if [ "$purpose" = test ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages for the $purpose already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
