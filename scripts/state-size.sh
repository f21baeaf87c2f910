#!/usr/bin/env bash
# Measures the coordinator's state size per job: runs JOBS bisects of the 300-commit demo
# repository (--runs 3) on 4 local workers through BIN_DIR's kbisect-coordinator, then prints
# the bytes per job of the VACUUMed kbisect.db and what its rows hold (docs/operations.md,
# "Journal growth"). Pass the build of another commit as BIN_DIR to compare.
#
#   scripts/state-size.sh [BIN_DIR (default build/bin)] [JOBS (default 5)]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$src/build/bin}" && pwd)
jobs=${2:-5}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
"$src/scripts/make-demo-repo.sh" repo --commits 300 > /dev/null
retain=()
if "$bin/kbisect-coordinator" --help | grep -q -- --retain; then retain=(--retain forever); fi
"$bin/kbisect-coordinator" --listen 127.0.0.1:0 --state-dir state --port-file port "${retain[@]}" \
  > coordinator.log 2>&1 &
coordinator=$!
pids+=("$coordinator")
for _ in $(seq 100); do [ -f port ] && break; sleep 0.1; done
address=127.0.0.1:$(cat port)
for w in 0 1 2 3; do
  KBISECT_DEMO_SLEEP=0.01 "$bin/kbisect-worker" --coordinator "$address" --cache-dir "cache-$w" \
    --gpu "$w" --name "w$w" --idle-poll 1 > "worker-$w.log" 2>&1 &
  pids+=("$!")
done
for j in $(seq "$jobs"); do
  KBISECT_COORDINATOR=$address "$bin/kbisect" submit v1.0 HEAD --repo "$work/repo" --runs 3 \
    --no-cache --request-id "size-$j" --wait -q -- ./bench.sh > /dev/null
done
kill "$coordinator"
wait "$coordinator" 2>/dev/null || true
cp state/kbisect.db measured.db
sqlite3 measured.db "PRAGMA wal_checkpoint(TRUNCATE); VACUUM;" > /dev/null
count=$(sqlite3 measured.db "SELECT count(*) FROM jobs")
bytes=$(stat -c %s measured.db)
events=0
if sqlite3 measured.db "SELECT events FROM jobs LIMIT 0" 2> /dev/null; then
  events=$(sqlite3 measured.db "SELECT COALESCE(SUM(LENGTH(events)), 0) FROM jobs")
fi
echo "jobs: $count; kbisect.db: $bytes bytes, $((bytes / count)) per job"
echo "per job: commit list $(sqlite3 measured.db "SELECT SUM(LENGTH(commits)) / COUNT(*) FROM jobs")," \
  "final status $(sqlite3 measured.db "SELECT SUM(LENGTH(final_status)) / COUNT(*) FROM jobs")," \
  "event log $((events / count))," \
  "journal $(sqlite3 measured.db "SELECT COALESCE(SUM(LENGTH(payload) + LENGTH(task_id) + LENGTH(worker) + LENGTH(reason) + LENGTH(kind) + 32), 0) / $count FROM journal")" \
  "in $(sqlite3 measured.db "SELECT COUNT(*) / $count FROM journal") entries"
