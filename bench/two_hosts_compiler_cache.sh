#!/usr/bin/env bash
# Two "hosts" bisecting one history with and without what they share: the compiler cache
# (`kbisect-worker --compiler-cache-remote redis://...`) or the build store (`--build-store DIR`),
# issue 52, as docs/benchmarks.md "Two hosts sharing a compiler cache" and "Two hosts sharing a
# build store" quote it.
#
#   bench/two_hosts_compiler_cache.sh --lz4 PATH [--commits N] [--pairs P] [--variants A,B]
#   bench/two_hosts_compiler_cache.sh --c-repo [--commits N] [--pairs P] [--variants A,B]
#
# --lz4 PATH: lz4's last N (default 873) first-parent commits (the repository `fetch
# github:lz4/lz4` brings), `make -C lib -j2 -s` at every probe, the benchmark script of
# user_cases_bench's case f (130 ms at and after the planted culprit, the first-parent commit
# 60% into the range, else 100 ms). --c-repo: scripts/make-c-repo.sh's library instead (N
# commits, default 300, one compiler call per module), `make -j2 -s`, `./build/bench`.
#
# Each run starts everything fresh (coordinator state, both hosts' cache directories, the redis)
# and bisects with W=4: a kbisect-coordinator on loopback and four kbisect-workers, two per
# "host" (host-a/slot0, host-a/slot1 sharing --cache-dir host-a; host-b likewise), through
# `kbisect submit --wait --no-cache`. Two variants (--variants, default local,shared), run in P
# interleaved pairs (A B, then B A, ...):
#   local   each host's own compiler cache only
#   shared  the same, plus --compiler-cache-remote redis://127.0.0.1:PORT on every worker (a
#           redis-server started for the run, nothing kept on disk)
#   store   the same as local, plus --build-store DIR on every worker (a directory made for the
#           run): a commit one host built is fetched by the other
# Prints one line per run: wall, builds, the builds' CPU seconds (user + system of each build
# command and its children, /usr/bin/time), the compiler cache's hits, misses and remote hits
# (`kbisect cache stats --cache-dir` of both hosts, summed), the builds fetched from the store
# (probes whose timings say build_fetched), the culprit, the time it started
# and the ninja and ctest processes running beside it at its start and end (another build or
# test run on the same cores: its figures are not an idle machine's); then the medians.
# Needs build/bin/{kbisect,kbisect-coordinator,kbisect-worker}, ccache, redis-server and
# /usr/bin/time. KEEP=1 keeps the work directory.
set -euo pipefail
lz4=""
c_repo=0
commits=""
pairs=2
variants=local,shared
while [ $# -gt 0 ]; do
  case "$1" in
    --lz4) lz4="$2"; shift 2 ;;
    --c-repo) c_repo=1; shift ;;
    --commits) commits="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --variants) variants="$2"; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "two_hosts_compiler_cache: unknown option $1" >&2; exit 2 ;;
  esac
done
IFS=, read -r first_variant second_variant <<<"$variants"
for v in "$first_variant" "$second_variant"; do
  case "$v" in local|shared|store) ;; *) echo "two_hosts_compiler_cache: unknown variant '$v'" >&2; exit 2 ;; esac
done
if [ -z "$lz4" ] && [ "$c_repo" -eq 0 ]; then
  echo "two_hosts_compiler_cache: give --lz4 PATH or --c-repo" >&2
  exit 2
fi
for tool in ccache redis-server /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "two_hosts_compiler_cache: $tool is missing" >&2; exit 2; }
done
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/bin"
work=$(mktemp -d /tmp/two-hosts-bench.XXXXXX)
pids=()
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cd "$work"

if [ -n "$lz4" ]; then
  commits=${commits:-873}
  git clone -q "$lz4" source
  mapfile -t shas < <(git -C source rev-list --first-parent --max-count=$((commits + 1)) HEAD | tac)
  [ "${#shas[@]}" -eq $((commits + 1)) ] || { echo "cannot list $((commits + 1)) commits" >&2; exit 1; }
  good=${shas[0]}
  bad=${shas[$commits]}
  expected=${shas[$(((commits + 1) * 6 / 10))]}
  build="make -C lib -j2 -s"
  printf '%s\n' '#!/bin/sh' 'test -e lib/liblz4.a || { echo "no lib/liblz4.a built" >&2; exit 1; }' \
    "if git merge-base --is-ancestor $expected HEAD; then echo \"Latency: 130 ms\"; else echo \"Latency: 100 ms\"; fi" \
    >bench.sh
  chmod +x bench.sh
  bench="$work/bench.sh"
else
  commits=${commits:-300}
  expected=$("$root/scripts/make-c-repo.sh" source --commits "$commits")
  good=v1.0
  bad=HEAD
  build="make -j2 -s"
  bench="./build/bench"
fi

# free_port: a loopback port nothing listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# live_workers: how many workers the coordinator shows as not lost.
live_workers() {
  KBISECT_COORDINATOR="$address" "$bin/kbisect" workers --json 2>/dev/null |
    python3 -c 'import json, sys; print(sum(w["state"] != "lost" for w in json.load(sys.stdin)["workers"]))' ||
    echo 0
}

# compiler_cache HOST_DIR: "hits misses remote_hits" of `kbisect cache stats --cache-dir`.
compiler_cache() {
  "$bin/kbisect" cache stats --cache-dir "$1" | python3 -c '
import re, sys
text = sys.stdin.read()
m = re.search(r"Compiler cache: (\d+) hits?, (\d+) miss", text)
r = re.search(r"(\d+) from the remote storage", text)
print(m.group(1) if m else 0, m.group(2) if m else 0, r.group(1) if r else 0)'
}

# others: how many ninja and ctest processes run now (none of this script's).
others() {
  echo $(($(pgrep -c -x ninja || true) + $(pgrep -c -x ctest || true)))
}

# run NAME VARIANT: one bisect with everything fresh; prints its line.
run() {
  local name="$1" variant="$2" run_dir="$work/$1"
  mkdir -p "$run_dir"
  local remote_flags=()
  if [ "$variant" = shared ]; then
    local port
    port=$(free_port)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$run_dir/redis.log" 2>&1 &
    pids+=($!)
    until grep -q "Ready to accept" "$run_dir/redis.log"; do sleep 0.1; done
    remote_flags=(--compiler-cache-remote "redis://127.0.0.1:$port")
  elif [ "$variant" = store ]; then
    mkdir -p "$run_dir/store"
    remote_flags=(--build-store "$run_dir/store")
  fi
  "$bin/kbisect-coordinator" --listen 127.0.0.1:0 --state-dir "$run_dir/state" \
    --port-file "$run_dir/port" >"$run_dir/coordinator.log" 2>&1 &
  pids+=($!)
  until [ -s "$run_dir/port" ]; do sleep 0.1; done
  address="127.0.0.1:$(cat "$run_dir/port")"
  local host slot
  for host in host-a host-b; do
    for slot in 0 1; do
      "$bin/kbisect-worker" --coordinator "$address" --cache-dir "$run_dir/$host" --gpu "$slot" \
        --name "$host/slot$slot" --idle-poll 1 "${remote_flags[@]}" \
        >"$run_dir/worker-$host-$slot.log" 2>&1 &
      pids+=($!)
    done
  done
  until [ "$(live_workers)" -eq 4 ]; do sleep 0.2; done
  local counted="/usr/bin/time -a -o $run_dir/build-cpu -f '%e %U %S' $build"
  local start end clock busy_start
  clock=$(date +%T)
  busy_start=$(others)
  start=$(date +%s.%N)
  KBISECT_COORDINATOR="$address" "$bin/kbisect" submit "$good" "$bad" --repo "$work/source" \
    --build "$counted" --no-cache --wait -q --json "$run_dir/result.json" -- "$bench" >/dev/null
  end=$(date +%s.%N)
  local busy="$busy_start/$(others)"
  stop_all
  read -r a_hits a_misses a_remote < <(compiler_cache "$run_dir/host-a")
  read -r b_hits b_misses b_remote < <(compiler_cache "$run_dir/host-b")
  python3 - "$run_dir" "$name" "$start" "$end" "$expected" \
    "$((a_hits + b_hits))" "$((a_misses + b_misses))" "$a_remote" "$b_remote" "$clock" "$busy" <<'PY'
import json, sys
run_dir, name, start, end, expected = sys.argv[1:6]
hits, misses, a_remote, b_remote = map(int, sys.argv[6:10])
clock, busy = sys.argv[10:12]
r = json.load(open(run_dir + "/result.json"))
builds = [l.split() for l in open(run_dir + "/build-cpu") if l.strip() and l[0].isdigit()]
cpu = sum(float(u) + float(s) for _, u, s in builds)
culprit = (r.get("culprit") or {}).get("sha", "")
fetched = sum(1 for p in r.get("probes", []) if (p.get("timings") or {}).get("build_fetched"))
print("%-8s %8.2f s %3d builds %8.1f CPU s %5d hits %5d misses %5d remote (a %d, b %d) %3d fetched"
      "  %s  at %s, others %s" % (
    name, float(end) - float(start), len(builds), cpu, hits, misses, a_remote + b_remote,
    a_remote, b_remote, fetched,
    "culprit ok" if culprit == expected else "culprit WRONG " + culprit[:12], clock, busy))
PY
}

for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then
    run "$first_variant-$i" "$first_variant"; run "$second_variant-$i" "$second_variant"
  else
    run "$second_variant-$i" "$second_variant"; run "$first_variant-$i" "$first_variant"
  fi
done | tee "$work/results.txt"
python3 - "$work/results.txt" "$first_variant" "$second_variant" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(variant, col):
    return statistics.median(float(r[col]) for r in rows if r[0].startswith(variant + "-"))
for v in sys.argv[2:4]:
    print("median %-6s: wall %.2f s, %d builds, %.1f build CPU s, %d remote hits, %d fetched"
          % (v, med(v, 1), med(v, 3), med(v, 5), med(v, 12), med(v, 18)))
PY
echo "command: bench/two_hosts_compiler_cache.sh ${lz4:+--lz4 $lz4 }$([ "$c_repo" -eq 1 ] && echo '--c-repo ')--commits $commits --pairs $pairs --variants $variants"
