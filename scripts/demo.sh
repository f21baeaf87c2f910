#!/usr/bin/env bash
# README command (1): installs what is missing, builds, generates a demo repository with a
# planted regression (300 commits), and bisects it with `kbisect run` on 4 local workers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --for demo
scripts/build.sh --binaries
demo=$(mktemp -d /tmp/kbisect-demo.XXXXXX)
trap 'rm -rf "$demo"' EXIT
echo "== Generating a demo repository with a planted regression in $demo/repo"
culprit=$(scripts/make-demo-repo.sh "$demo/repo" --commits 300)
echo "== Planted culprit: $culprit"
echo "== kbisect run v1.0 HEAD --workers 4 -- ./bench.sh"
status=0
KBISECT_CACHE_DIR="$demo/cache" build/bin/kbisect run v1.0 HEAD --repo "$demo/repo" \
  --workers 4 --json "$demo/result.json" -- ./bench.sh || status=$?
echo "== kbisect exited with $status; JSON result:"
head -c 600 "$demo/result.json"; echo " ..."
exit "$status"
