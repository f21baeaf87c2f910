#!/usr/bin/env bash
# Artifact-then-commit bisect against a commit bisect from source, over the same range with a
# real build (a C extension), as docs/benchmarks.md "Nightly artifacts" quotes it.
#
#   bench/artifact_vs_source.sh [--commits N] [--per-day D] [--culprit K] [--workers W] [--bulk N]
#
# Generates a Python package `kern` whose kernel is a C extension (kern/_fast.c): from commit K on the compiled kernel reports a 45% higher latency. One nightly wheel a
# day is built (`pip wheel`, as CI builds it, not timed) from each day's last commit, D commits a
# day, versioned 1.0.devYYYYMMDD with git_version = that commit. Then, each timed with fresh
# caches:
#   A   kbisect run --artifact kern --find-links wheels FIRST_DAY LAST_DAY --repo repo
#         --build 'pip install .' -- python bench.py      (nightlies, then the commits between)
#   S   kbisect run v1.0 HEAD --repo repo --build 'pip install .' -- python bench.py
# and prints each one's wall time, builds (compiles of the C extension) and the culprit named.
# --bulk N adds N generated functions to the extension, so that a compile costs what a real
# kernel library's does (0: a few lines).
# Needs build/bin/kbisect and Debian's python3 with venv, pip, setuptools and python3-dev.
set -euo pipefail
commits=60
per_day=5
culprit=37
workers=2
bulk=0
while [ $# -gt 0 ]; do
  case "$1" in
    --commits) commits="$2"; shift 2 ;;
    --per-day) per_day="$2"; shift 2 ;;
    --culprit) culprit="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --bulk) bulk="$2"; shift 2 ;;
    *) echo "artifact_vs_source: unknown option $1" >&2; exit 2 ;;
  esac
done
kbisect="$(cd "$(dirname "$0")/.." && pwd)/build/bin/kbisect"
work=$(mktemp -d /tmp/artifact-bench.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 -m venv --system-site-packages venv
. venv/bin/activate

# The package's history.
mkdir -p repo/kern && cd repo
git init -q && git config user.email b@example.com && git config user.name bench
cat > pyproject.toml <<'EOF'
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "kern"
dynamic = ["version"]
EOF
cat > setup.py <<'EOF'
import os
from setuptools import Extension, setup
setup(version=os.environ.get("KERN_VERSION", "1.0"), packages=["kern"],
      ext_modules=[Extension("kern._fast", ["kern/_fast.c"])])
EOF
for i in $(seq 0 "$commits"); do
  latency=10.0
  [ "$i" -ge "$culprit" ] && latency=14.5
  cat > kern/_fast.c <<EOF
#include <Python.h>
/* Commit $i. */
$(for f in $(seq 1 "$bulk"); do printf 'int kern_bulk_%d(int x) { for (int k = 0; k < %d; k++) x = x * 31 + (x >> 3) + k; return x; }\n' "$f" "$f"; done)
static PyObject* latency(PyObject* self, PyObject* args) { return PyFloat_FromDouble($latency); }
static PyMethodDef methods[] = {{"latency", latency, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
EOF
  printf 'from kern._fast import latency\nfrom kern import version\n' > kern/__init__.py
  printf 'git_version = ""\n' > kern/version.py
  git add -A && git commit -qm "commit $i"
  [ "$i" -eq 0 ] && git tag v1.0
  [ "$i" -eq "$culprit" ] && culprit_sha=$(git rev-parse HEAD)
done
cd ..
printf 'import kern\nprint("Latency: %%.3f ms" %% kern.latency())\n' > bench.py

# One nightly a day from the day's last commit (CI's work: not timed).
mkdir -p wheels
days=$(( (commits + per_day) / per_day ))
for d in $(seq 1 "$days"); do
  last=$(( d * per_day - 1 )); [ "$last" -gt "$commits" ] && last=$commits
  sha=$(git -C repo rev-list --reverse HEAD | sed -n "$(( last + 1 ))p")
  day=$(printf '202601%02d' "$d")
  rm -rf src && git -C repo worktree add -q --detach "$work/src" "$sha"
  printf 'git_version = "%s"\n' "$sha" > src/kern/version.py
  KERN_VERSION="1.0.dev$day" python -m pip wheel -q --no-deps --no-build-isolation --no-index \
    -w wheels ./src >/dev/null 2>&1
  git -C repo worktree remove --force "$work/src"
done

# Runs kbisect with fresh caches; prints "seconds builds culprit".
timed() {
  local name="$1"; shift
  rm -rf cache builds.log && : > builds.log
  local start end
  start=$(date +%s.%N)
  KBISECT_CACHE_DIR="$work/cache" "$kbisect" run --workers "$workers" --json "$name.json" -q \
    "$@" > "$name.log" 2>&1 || true
  end=$(date +%s.%N)
  printf '%s %.1f s, %d builds, culprit %s\n' "$name" "$(python -c "print($end - $start)")" \
    "$(wc -l < builds.log)" \
    "$(python -c "import json;d=json.load(open('$name.json'));d=d.get('commit_stage',d);print(d.get('culprit',{}).get('sha','-')[:12])")"
}
build="echo b >> $work/builds.log && pip install -q --no-build-isolation --no-index ."
timed A --artifact kern --find-links wheels 2026-01-01 "$(printf '2026-01-%02d' "$days")" \
  --repo repo --build "$build" -- python "$work/bench.py"
timed S v1.0 HEAD --repo repo --build "$build" -- python "$work/bench.py"
echo "planted culprit ${culprit_sha:0:12}; $commits commits, $days nightlies, W=$workers"
