#!/usr/bin/env bash
# Creates a git repository whose benchmark prints a suite of kernels, several of which move at
# planted commits, for `kbisect run --suite`'s tests, its benchmark and the docs' example.
#
#   scripts/make-suite-repo.sh DIR [--commits N] [--metrics M] [--steps LIST] [--noise FRACTION]
#
# Commit 0 is the root ("v1.0" tag); commits 1..N follow on main ("HEAD"). `./bench.sh` prints
# one line "kernel_II: X ms" per metric (II = 00..M-1, base latencies 1.00, 1.10, 1.20, ... ms)
# with uniform noise of +-FRACTION (default 0.005), after sleeping $KBISECT_DEMO_SLEEP seconds
# (default 0). LIST is comma-separated steps K:FIRST-LAST:FACTOR: commit K (1..N) multiplies the
# latency of kernels FIRST..LAST by FACTOR (above 1 a regression, below 1 an improvement).
# Default (for the default 20 metrics): round(N*0.3):0-6:1.25, round(N*0.55):7-8:1.4,
# round(N*0.8):9-9:1.15 and round(N*0.4):10-10:0.8 -- 7 kernels regressed at one commit, 2 at a
# second, 1 at a third, 1 improved, 9 unchanged. Default N: 60, M: 20.
#
# Prints one line per kernel, "kernel_II=SHA" (the commit of its first regressing step), or
# "kernel_II=improved" or "kernel_II=unchanged".
set -euo pipefail

dir=""
commits=60
metrics=20
steps=""
noise=0.005
while [[ $# -gt 0 ]]; do
  case "$1" in
    --commits) commits="$2"; shift 2 ;;
    --metrics) metrics="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --noise) noise="$2"; shift 2 ;;
    -*) echo "make-suite-repo.sh: unknown option $1" >&2; exit 2 ;;
    *) dir="$1"; shift ;;
  esac
done
if [[ -z "$dir" ]]; then
  echo "usage: make-suite-repo.sh DIR [--commits N] [--metrics M] [--steps LIST] [--noise F]" >&2
  exit 2
fi
if [[ -z "$steps" ]]; then
  at() { awk -v n="$commits" -v f="$1" 'BEGIN { printf "%d", n * f + 0.5 }'; }
  steps="$(at 0.3):0-6:1.25,$(at 0.55):7-8:1.4,$(at 0.8):9-9:1.15,$(at 0.4):10-10:0.8"
fi

mkdir -p "$dir"
cd "$dir"
git init -q .
git config user.email "suite@example.com"
git config user.name "Suite Demo"
cat > bench.sh <<EOF
#!/bin/sh
# Prints every kernel's latency with +-${noise} uniform noise.
sleep "\${KBISECT_DEMO_SLEEP:-0}"
seed="\$\$\$(date +%N)"
# With KBISECT_SUITE_NOISE_SEED the noise is drawn from it and the commit checked out: the same
# output for the same commit, for tests that must not depend on chance.
if [ -n "\${KBISECT_SUITE_NOISE_SEED:-}" ]; then
  seed=\$((KBISECT_SUITE_NOISE_SEED + \$(git rev-parse HEAD 2>/dev/null | cksum | cut -d' ' -f1)))
fi
awk -v seed="\$seed" -v noise="${noise}" 'BEGIN { srand(seed % 2147483647) }
  { printf "%s: %.5f %s\n", \$1, \$2 * (1 + (2 * rand() - 1) * noise), \$3 }' kernels.txt
EOF
chmod +x bench.sh
for ((i = 0; i < metrics; i++)); do
  printf 'kernel_%02d %s ms\n' "$i" "$(awk -v i="$i" 'BEGIN { printf "%.2f", 1 + 0.1 * i }')"
done > kernels.txt
git add -A
git commit -qm "Add the kernel suite and its benchmark"
git tag v1.0

declare -A found
IFS=',' read -ra planted <<< "$steps"
for ((c = 1; c <= commits; c++)); do
  message="Refactor $c"
  for step in "${planted[@]}"; do
    IFS=':' read -r at range factor <<< "$step"
    [[ "$at" == "$c" ]] || continue
    first="${range%-*}"
    last="${range#*-}"
    awk -v first="$first" -v last="$last" -v factor="$factor" '{
        i = substr($1, 8) + 0
        if (i >= first && i <= last) $2 = sprintf("%.4f", $2 * factor)
        print }' kernels.txt > kernels.tmp
    mv kernels.tmp kernels.txt
    message="Retune kernels $first-$last (x$factor)"
    for ((k = first; k <= last; k++)); do
      name=$(printf 'kernel_%02d' "$k")
      if [[ -z "${found[$name]:-}" ]]; then
        if awk -v f="$factor" 'BEGIN { exit !(f > 1) }'; then
          found[$name]="pending:$c"
        else
          found[$name]="improved"
        fi
      fi
    done
  done
  echo "$c" > revision.txt
  git add -A
  git commit -qm "$message"
  sha=$(git rev-parse HEAD)
  for name in "${!found[@]}"; do
    [[ "${found[$name]}" == "pending:$c" ]] && found[$name]="$sha"
  done
done
for ((i = 0; i < metrics; i++)); do
  name=$(printf 'kernel_%02d' "$i")
  echo "$name=${found[$name]:-unchanged}"
done
