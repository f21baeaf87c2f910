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
# --second-job: after each bisect, hosts a and b leave and a third host (host-c, two workers, a
# fresh --cache-dir, the variant's flags) bisects the same range with another benchmark script
# (the same culprit, another metric line: another job, the same builds) on the same coordinator;
# a second line gives that job's wall, builds, build CPU and fetched builds.
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
second_job=0
while [ $# -gt 0 ]; do
  case "$1" in
    --lz4) lz4="$2"; shift 2 ;;
    --c-repo) c_repo=1; shift ;;
    --commits) commits="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --variants) variants="$2"; shift 2 ;;
    --second-job) second_job=1; shift ;;
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
  sed 's/Latency:/Latency p50:/' bench.sh >bench2.sh
  chmod +x bench2.sh
  bench2="$work/bench2.sh"
else
  commits=${commits:-300}
  expected=$("$root/scripts/make-c-repo.sh" source --commits "$commits")
  good=v1.0
  bad=HEAD
  build="make -j2 -s"
  bench="./build/bench"
  bench2="./build/bench"  # --second-job is for --lz4: the C library's bench has one metric line
fi

# free_port: a loopback port nothing listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# live_workers [TEXT]: how many workers (whose record mentions TEXT: their name) the coordinator
# shows as not lost.
live_workers() {
  KBISECT_COORDINATOR="$address" "$bin/kbisect" workers --json 2>/dev/null |
    python3 -c 'import json, sys; print(sum(w["state"] != "lost" and sys.argv[1] in json.dumps(w) for w in json.load(sys.stdin)["workers"]))' "${1:-}" ||
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

# second NAME RUN_DIR BUILD WORKER_PID...: hosts a and b (the pids) leave, host-c joins with the
# run's flags (remote_flags) and bisects the same range with bench2.sh; prints its line.
second() {
  local name="$1" run_dir="$2" counted="$3"
  shift 3
  local pid
  for pid in "$@"; do kill "$pid" 2>/dev/null || true; done
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
  local builds_before slot
  builds_before=$(grep -c '^[0-9]' "$run_dir/build-cpu" || true)
  for slot in 0 1; do
    "$bin/kbisect-worker" --coordinator "$address" --cache-dir "$run_dir/host-c" --gpu "$slot" \
      --name "host-c/slot$slot" --idle-poll 1 "${remote_flags[@]}" \
      >"$run_dir/worker-host-c-$slot.log" 2>&1 &
    pids+=($!)
  done
  until [ "$(live_workers host-c/)" -eq 2 ]; do sleep 0.2; done
  local start end
  start=$(date +%s.%N)
  KBISECT_COORDINATOR="$address" "$bin/kbisect" submit "$good" "$bad" --repo "$work/source" \
    --build "$counted" --no-cache --wait -q --json "$run_dir/result2.json" -- "$bench2" >/dev/null
  end=$(date +%s.%N)
  python3 - "$run_dir" "$name" "$start" "$end" "$expected" "$builds_before" <<'PY'
import json, sys
run_dir, name, start, end, expected, before = sys.argv[1:7]
r = json.load(open(run_dir + "/result2.json"))
builds = [l.split() for l in open(run_dir + "/build-cpu") if l.strip() and l[0].isdigit()]
builds = builds[int(before):]
cpu = sum(float(u) + float(s) for _, u, s in builds)
culprit = (r.get("culprit") or {}).get("sha", "")
fetched = sum(1 for p in r.get("probes", []) if (p.get("timings") or {}).get("build_fetched"))
print("%-8s %8.2f s %3d builds %8.1f CPU s %3d fetched  job 2 on host-c  %s" % (
    name + "/2", float(end) - float(start), len(builds), cpu, fetched,
    "culprit ok" if culprit == expected else "culprit WRONG " + culprit[:12]))
PY
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
  local host slot first_workers=()
  for host in host-a host-b; do
    for slot in 0 1; do
      "$bin/kbisect-worker" --coordinator "$address" --cache-dir "$run_dir/$host" --gpu "$slot" \
        --name "$host/slot$slot" --idle-poll 1 "${remote_flags[@]}" \
        >"$run_dir/worker-$host-$slot.log" 2>&1 &
      pids+=($!)
      first_workers+=($!)
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
  local job1_builds
  job1_builds=$(grep -c '^[0-9]' "$run_dir/build-cpu" || true)
  [ "$second_job" -eq 0 ] || second "$name" "$run_dir" "$counted" "${first_workers[@]}"
  stop_all
  read -r a_hits a_misses a_remote < <(compiler_cache "$run_dir/host-a")
  read -r b_hits b_misses b_remote < <(compiler_cache "$run_dir/host-b")
  python3 - "$run_dir" "$name" "$start" "$end" "$expected" \
    "$((a_hits + b_hits))" "$((a_misses + b_misses))" "$a_remote" "$b_remote" "$clock" "$busy" \
    "$job1_builds" <<'PY'
import json, sys
run_dir, name, start, end, expected = sys.argv[1:6]
hits, misses, a_remote, b_remote = map(int, sys.argv[6:10])
clock, busy = sys.argv[10:12]
r = json.load(open(run_dir + "/result.json"))
builds = [l.split() for l in open(run_dir + "/build-cpu") if l.strip() and l[0].isdigit()]
builds = builds[:int(sys.argv[12])]  # job 1's (a second job's builds follow them)
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
done > >(tee "$work/results.txt")  # the loop stays in this shell: the EXIT trap sees its pids
wait $!  # tee has written everything
python3 - "$work/results.txt" "$first_variant" "$second_variant" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if "/2 " not in l.split(" ", 1)[0] + " "]
def med(variant, col):
    return statistics.median(float(r[col]) for r in rows if r[0].startswith(variant + "-"))
for v in sys.argv[2:4]:
    print("median %-6s: wall %.2f s, %d builds, %.1f build CPU s, %d remote hits, %d fetched"
          % (v, med(v, 1), med(v, 3), med(v, 5), med(v, 12), med(v, 18)))
PY
echo "command: bench/two_hosts_compiler_cache.sh ${lz4:+--lz4 $lz4 }$([ "$c_repo" -eq 1 ] && echo '--c-repo ')--commits $commits --pairs $pairs --variants $variants$([ "$second_job" -eq 1 ] && echo ' --second-job')"
