#!/usr/bin/env bash
# Creates a git repository with a planted performance regression, for the demo, the integration
# tests and the benchmarks. Uses `git fast-import`, so 1,000 commits take about a second.
#
#   scripts/make-demo-repo.sh DIR [--commits N] [--culprit K] [--files F] [--noise FRACTION]
#                                 [--base-ms MS] [--slowdown FACTOR]
#
# Commit 0 is the root ("v1.0" tag); commits 1..N follow on main ("HEAD"). Commit K (1-based,
# default N*2/3) changes BLOCK_SIZE=64 -> BLOCK_SIZE=32 in kernels/attention.py and raises the
# latency in params.txt by FACTOR (default 1.45). `./bench.sh` prints "Latency: X ms" with uniform
# noise of +-FRACTION (default 0.01) and sleeps $KBISECT_DEMO_SLEEP seconds (default 0.05).
# Prints the culprit's sha on stdout.
set -euo pipefail

dir=""
commits=300
culprit=""
files=20
noise=0.01
base_ms=1.00
slowdown=1.45
while [ $# -gt 0 ]; do
  case "$1" in
    --commits) commits="$2"; shift 2 ;;
    --culprit) culprit="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --noise) noise="$2"; shift 2 ;;
    --base-ms) base_ms="$2"; shift 2 ;;
    --slowdown) slowdown="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "make-demo-repo: unknown option $1" >&2; exit 2 ;;
    *) dir="$1"; shift ;;
  esac
done
[ -n "$dir" ] || { echo "usage: make-demo-repo.sh DIR [options]" >&2; exit 2; }
[ -n "$culprit" ] || culprit=$(( commits * 2 / 3 ))
if [ "$culprit" -lt 1 ] || [ "$culprit" -gt "$commits" ]; then
  echo "make-demo-repo: --culprit must be in 1..$commits" >&2; exit 2
fi
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  echo "make-demo-repo: $dir exists and is not empty" >&2; exit 1
fi
mkdir -p "$dir"
git -C "$dir" init -q -b main
git -C "$dir" config user.name "kbisect demo"
git -C "$dir" config user.email "demo@kbisect.invalid"

slow_ms=$(awk -v b="$base_ms" -v f="$slowdown" 'BEGIN { printf "%.4f", b * f }')

read -r -d '' BENCH <<'SH' || true
#!/bin/sh
# Demo benchmark: prints this commit's kernel latency with a little noise.
base=$(sed -n 's/^latency_ms=//p' params.txt)
slow=1
if [ -n "${KBISECT_DEMO_SLOW_SLOT:-}" ] && [ "${CUDA_VISIBLE_DEVICES:-}" = "$KBISECT_DEMO_SLOW_SLOT" ]; then
  slow=1.3
fi
sleep "${KBISECT_DEMO_SLEEP:-0.05}"
awk -v b="$base" -v n="$(sed -n 's/^noise=//p' params.txt)" -v s="$$$(date +%N)" -v w="$slow" \
  'BEGIN { srand(s % 2147483647); printf "Latency: %.4f ms\n", b * w * (1 + n * (2 * rand() - 1)) }'
SH

blob() {  # blob PATH MODE CONTENT
  printf 'M %s inline %s\ndata %d\n%s\n' "$2" "$1" "$(( ${#3} + 1 ))" "$3"
}

kernel() {  # kernel BLOCK
  printf 'import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef attention(q, k, v, o, N):\n    BLOCK_SIZE=%s\n    for start in range(0, N, BLOCK_SIZE):\n        x = tl.load(q + start)\n        tl.store(o + start, x)\n' "$1"
}

ts=1767225600  # 2026-01-01
{
  for i in $(seq 0 "$commits"); do
    ts=$(( ts + 3600 ))
    if [ "$i" -eq 0 ]; then
      msg="Initial import of the demo kernels"
    elif [ "$i" -eq "$culprit" ]; then
      msg="[kernel] Retune attention tiles for smaller shapes"
    else
      msg="[misc] Update module $(( i % files )) (change $i)"
    fi
    printf 'commit refs/heads/main\nmark :%d\n' "$(( i + 1 ))"
    printf 'author Dev %d <dev%d@kbisect.invalid> %d +0000\n' "$(( i % 5 ))" "$(( i % 5 ))" "$ts"
    printf 'committer Dev %d <dev%d@kbisect.invalid> %d +0000\n' "$(( i % 5 ))" "$(( i % 5 ))" "$ts"
    printf 'data %d\n%s\n' "$(( ${#msg} + 1 ))" "$msg"
    if [ "$i" -eq 0 ]; then
      blob bench.sh 100755 "$BENCH"
      blob params.txt 100644 "$(printf 'latency_ms=%s\nnoise=%s' "$base_ms" "$noise")"
      blob kernels/attention.py 100644 "$(kernel 64)"
      blob .gitignore 100644 "build/"
      for f in $(seq 0 $(( files - 1 ))); do
        blob "src/module_$f.py" 100644 "# module $f"
      done
    else
      printf 'from :%d\n' "$i"
      blob "src/module_$(( i % files )).py" 100644 "$(printf '# module %d\nVERSION = %d' "$(( i % files ))" "$i")"
      if [ "$i" -eq "$culprit" ]; then
        blob kernels/attention.py 100644 "$(kernel 32)"
        blob params.txt 100644 "$(printf 'latency_ms=%s\nnoise=%s' "$slow_ms" "$noise")"
      fi
    fi
    if [ "$i" -eq 0 ]; then printf 'reset refs/tags/v1.0\nfrom :1\n'; fi
  done
} | git -C "$dir" fast-import --quiet
git -C "$dir" checkout -q -f main
git -C "$dir" rev-parse "main~$(( commits - culprit ))"
