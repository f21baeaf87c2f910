#!/usr/bin/env bash
# The cost of --verify-revert relative to the bisect it follows, on the demo repository, as
# docs/benchmarks.md "The revert check's cost" quotes it.
#
#   bench/verify_revert_cost.sh [--commits N] [--culprit K] [--workers W] [--pairs P] [--sleep S]
#
# Generates scripts/make-demo-repo.sh's repository (N commits, the culprit at K, by default N-10:
# the demo edits each of its 20 modules every 20 commits, so a culprit with a later edit of its
# module does not revert cleanly at HEAD, which the check reports as a conflict), then runs P
# interleaved pairs, each with fresh caches, alternating which goes first:
#   plain   kbisect run v1.0 HEAD --workers W --json ... -- ./bench.sh
#   revert  the same with --verify-revert
# and prints each run's wall time and benchmark runs (the revert's follow-up's included), the
# culprit and the revert check's share, then the medians and the ratio of the medians.
# Needs build/bin/kbisect.
set -euo pipefail
commits=300
culprit=""
workers=4
pairs=3
sleep_s=0.05
while [ $# -gt 0 ]; do
  case "$1" in
    --commits) commits="$2"; shift 2 ;;
    --culprit) culprit="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --sleep) sleep_s="$2"; shift 2 ;;
    *) echo "verify_revert_cost: unknown option $1" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
kbisect="$root/build/bin/kbisect"
work=$(mktemp -d /tmp/verify-revert-bench.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cd "$work"
"$root/scripts/make-demo-repo.sh" repo --commits "$commits" --culprit "${culprit:-$((commits - 10))}" \
  >/dev/null

# run NAME FLAGS...: one timed run with fresh caches; prints "NAME wall runs culprit share".
run() {
  local name="$1"
  shift
  rm -rf cache
  local start end
  start=$(date +%s.%N)
  KBISECT_DEMO_SLEEP="$sleep_s" KBISECT_CACHE_DIR="$work/cache" "$kbisect" run v1.0 HEAD \
    --repo repo --workers "$workers" -q --json "$name.json" "$@" -- ./bench.sh >/dev/null
  end=$(date +%s.%N)
  python3 - "$name.json" "$name" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
check = r.get("revert_check") or {}
print("%-7s %7.2f s %4d runs  culprit %s  share %s" % (
    sys.argv[2], float(sys.argv[4]) - float(sys.argv[3]), r["bench_runs"], r["culprit"]["sha"][:7],
    "%.2f (%.2f-%.2f)" % (check["recovered_share"], check["share_low"], check["share_high"])
    if check.get("state") == "done" else "-"))
PY
}

for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then
    run plain; run revert --verify-revert
  else
    run revert --verify-revert; run plain
  fi
done | tee results.txt
python3 - results.txt <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(name, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == name)
pw, rw = med("plain", 1), med("revert", 1)
pr, rr = med("plain", 3), med("revert", 3)
print("median wall: plain %.2f s, with --verify-revert %.2f s (x%.2f); bench runs %d -> %d (x%.2f)"
      % (pw, rw, rw / pw, pr, rr, rr / pr))
PY
