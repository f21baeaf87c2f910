#!/usr/bin/env bash
# Creates a git repository with a planted performance regression, for the demo, the integration
# tests and the benchmarks. Uses `git fast-import`, so 1,000 commits take about a second.
#
#   scripts/make-demo-repo.sh DIR [--commits N] [--culprit K] [--files F] [--noise FRACTION]
#                                 [--base-ms MS] [--slowdown FACTOR]
#                                 [--merge-branch K:L[:C]] [--second-step K2:FACTOR2]
#
# Commit 0 is the root ("v1.0" tag); commits 1..N follow on main ("HEAD"). Commit K (1-based,
# default N*2/3) changes BLOCK_SIZE=64 -> BLOCK_SIZE=32 in kernels/attention.py and raises the
# latency in params.txt by FACTOR (default 1.45). `./bench.sh` prints "Latency: X ms" with uniform
# noise of +-FRACTION (default 0.01) and sleeps $KBISECT_DEMO_SLEEP seconds (default 0.05); with
# KBISECT_DEMO_SLOW_SLOT=S it measures $KBISECT_DEMO_SLOW_FACTOR (default 1.3) times slower when
# CUDA_VISIBLE_DEVICES is S (a slow GPU).
# Prints the culprit's sha on stdout.
#
# --merge-branch K:L[:C]  main commit K is instead a merge commit ("Merge branch
#     'topic/attention-tiles'") whose second parent is the tip of a side branch of L commits
#     (1 <= L <= K) forked from main commit K-L, so main commits K-L+1..K-1 run in parallel with
#     it and the merge base of K^1 and K^2 is main~(N-K+L). The regression (the BLOCK_SIZE change
#     and FACTOR) is planted at commit C of the branch (1-based, default (L+1)/2); the first-parent
#     history sees it at the merge. The branch stays as refs/heads/topic/attention-tiles. Sets the
#     merge position, so it does not combine with --culprit.
# --second-step K2:FACTOR2  main commit K2 (1..N, not K) adds a second step: it changes
#     num_stages in kernels/softmax.py and multiplies the latency by FACTOR2 (the steps compound:
#     commits past both run at MS*FACTOR*FACTOR2).
# With either of these two options the output is instead "key=sha" lines, in this order:
#     culprit=SHA   the commit of the FACTOR step (inside the branch with --merge-branch)
#     merge=SHA     the merge commit (with --merge-branch)
#     fork=SHA      the branch's fork point on main = the merge base (with --merge-branch)
#     second=SHA    the FACTOR2 step (with --second-step)
set -euo pipefail

dir=""
commits=300
culprit=""
files=20
noise=0.01
base_ms=1.00
slowdown=1.45
merge_branch=""
second_step=""
while [ $# -gt 0 ]; do
  case "$1" in
    --commits) commits="$2"; shift 2 ;;
    --culprit) culprit="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --noise) noise="$2"; shift 2 ;;
    --base-ms) base_ms="$2"; shift 2 ;;
    --slowdown) slowdown="$2"; shift 2 ;;
    --merge-branch) merge_branch="$2"; shift 2 ;;
    --second-step) second_step="$2"; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "make-demo-repo: unknown option $1" >&2; exit 2 ;;
    *) dir="$1"; shift ;;
  esac
done
[ -n "$dir" ] || { echo "usage: make-demo-repo.sh DIR [options]" >&2; exit 2; }

is_int() { case "$1" in ''|*[!0-9]*) return 1 ;; *) return 0 ;; esac; }

merge_at=""     # Main commit that is the merge (empty: no side branch).
branch_len=0    # L: commits on the side branch.
branch_culprit=0  # C: 1-based position of the regression on the branch.
fork_at=0       # Main commit the branch forks from.
branch_ref=refs/heads/topic/attention-tiles
if [ -n "$merge_branch" ]; then
  if [ -n "$culprit" ]; then
    echo "make-demo-repo: --merge-branch K sets the merge's position: drop --culprit" >&2
    exit 2
  fi
  IFS=: read -r merge_at branch_len branch_culprit extra <<<"$merge_branch"
  if [ -n "$extra" ] || ! is_int "$merge_at" || ! is_int "$branch_len" || \
     { [ -n "$branch_culprit" ] && ! is_int "$branch_culprit"; }; then
    echo "make-demo-repo: --merge-branch takes K:L or K:L:C (integers), not '$merge_branch'" >&2
    exit 2
  fi
  [ -n "$branch_culprit" ] || branch_culprit=$(( (branch_len + 1) / 2 ))
  if [ "$merge_at" -lt 1 ] || [ "$merge_at" -gt "$commits" ]; then
    echo "make-demo-repo: --merge-branch K must be in 1..$commits" >&2; exit 2
  fi
  culprit="$merge_at"
fi
[ -n "$culprit" ] || culprit=$(( commits * 2 / 3 ))
if [ "$culprit" -lt 1 ] || [ "$culprit" -gt "$commits" ]; then
  echo "make-demo-repo: --culprit must be in 1..$commits" >&2; exit 2
fi
if [ -n "$merge_at" ]; then
  if [ "$branch_len" -lt 1 ] || [ "$branch_len" -gt "$merge_at" ]; then
    echo "make-demo-repo: --merge-branch K:L needs 1 <= L <= K" >&2; exit 2
  fi
  if [ "$branch_culprit" -lt 1 ] || [ "$branch_culprit" -gt "$branch_len" ]; then
    echo "make-demo-repo: --merge-branch K:L:C needs C in 1..L" >&2; exit 2
  fi
  fork_at=$(( merge_at - branch_len ))
fi
second_at=""
second_factor=1
if [ -n "$second_step" ]; then
  IFS=: read -r second_at second_factor extra <<<"$second_step"
  if [ -n "$extra" ] || ! is_int "$second_at" || ! is_int "${second_factor/./}"; then
    echo "make-demo-repo: --second-step takes K2:FACTOR2, not '$second_step'" >&2; exit 2
  fi
  if [ "$second_at" -lt 1 ] || [ "$second_at" -gt "$commits" ] || \
     [ "$second_at" -eq "$culprit" ]; then
    echo "make-demo-repo: --second-step K2 must be in 1..$commits and differ from $culprit" >&2
    exit 2
  fi
fi
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  echo "make-demo-repo: $dir exists and is not empty" >&2; exit 1
fi
mkdir -p "$dir"
git -C "$dir" init -q -b main
git -C "$dir" config user.name "kbisect demo"
git -C "$dir" config user.email "demo@kbisect.invalid"

read -r -d '' BENCH <<'SH' || true
#!/bin/sh
# Demo benchmark: prints this commit's kernel latency with a little noise.
base=$(sed -n 's/^latency_ms=//p' params.txt)
slow=1
if [ -n "${KBISECT_DEMO_SLOW_SLOT:-}" ] && [ "${CUDA_VISIBLE_DEVICES:-}" = "$KBISECT_DEMO_SLOW_SLOT" ]; then
  slow=${KBISECT_DEMO_SLOW_FACTOR:-1.3}
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

softmax() {  # softmax NUM_STAGES
  printf 'import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef softmax(x, o, N):\n    num_stages=%s\n    row = tl.load(x + tl.arange(0, N))\n    tl.store(o + tl.arange(0, N), tl.exp(row) / tl.sum(tl.exp(row)))\n' "$1"
}

params() {  # params MAIN_STEP SECOND_STEP: params.txt with the steps (0/1) applied
  local ms
  ms=$(awk -v b="$base_ms" -v f="$slowdown" -v g="$second_factor" -v m="$1" -v s="$2" \
    'BEGIN { printf "%.4f", b * (m ? f : 1) * (s ? g : 1) }')
  blob params.txt 100644 "$(printf 'latency_ms=%s\nnoise=%s' "$ms" "$noise")"
}

has_second() {  # has_second I: 1 when main commit I carries the second step
  if [ -n "$second_at" ] && [ "$1" -ge "$second_at" ]; then echo 1; else echo 0; fi
}

header() {  # header REF MARK AUTHOR_NO TS MESSAGE
  printf 'commit %s\nmark :%d\n' "$1" "$2"
  printf 'author Dev %d <dev%d@kbisect.invalid> %d +0000\n' "$3" "$3" "$4"
  printf 'committer Dev %d <dev%d@kbisect.invalid> %d +0000\n' "$3" "$3" "$4"
  printf 'data %d\n%s\n' "$(( ${#5} + 1 ))" "$5"
}

topic_part() {  # topic_part J: the file branch commit J changes
  blob "src/topic/part_$(( $1 % files )).py" 100644 \
    "$(printf '# topic part %d\nVERSION = %d' "$(( $1 % files ))" "$1")"
}

# Branch commit j has mark commits+1+j (main commit i has mark i+1).
branch_commits() {  # branch_commits FORK_TS
  local j msg
  for j in $(seq 1 "$branch_len"); do
    if [ "$j" -eq "$branch_culprit" ]; then
      msg="[kernel] Retune attention tiles for smaller shapes"
    else
      msg="[topic] Attention tiles part $(( j % files )) (change $j)"
    fi
    header "$branch_ref" "$(( commits + 1 + j ))" "$(( (j + 2) % 5 ))" \
      "$(( $1 + 3600 * j - 1800 ))" "$msg"
    if [ "$j" -eq 1 ]; then
      printf 'from :%d\n' "$(( fork_at + 1 ))"
    else
      printf 'from :%d\n' "$(( commits + j ))"
    fi
    topic_part "$j"
    if [ "$j" -eq "$branch_culprit" ]; then
      blob kernels/attention.py 100644 "$(kernel 32)"
      params 1 "$(has_second "$fork_at")"
    fi
  done
}

merge_commit() {  # merge_commit TS: main commit merge_at, bringing in the branch's changes
  local j
  header refs/heads/main "$(( merge_at + 1 ))" "$(( merge_at % 5 ))" "$1" \
    "Merge branch 'topic/attention-tiles'"
  printf 'from :%d\nmerge :%d\n' "$merge_at" "$(( commits + 1 + branch_len ))"
  for j in $(seq "$(( branch_len - files + 1 > 1 ? branch_len - files + 1 : 1 ))" "$branch_len"); do
    topic_part "$j"
  done
  blob kernels/attention.py 100644 "$(kernel 32)"
  params 1 "$(has_second "$merge_at")"
}

ts=1767225600  # 2026-01-01
{
  for i in $(seq 0 "$commits"); do
    ts=$(( ts + 3600 ))
    if [ -n "$merge_at" ] && [ "$i" -eq "$merge_at" ]; then
      merge_commit "$ts"
      continue
    fi
    if [ "$i" -eq 0 ]; then
      msg="Initial import of the demo kernels"
    elif [ "$i" -eq "$culprit" ]; then
      msg="[kernel] Retune attention tiles for smaller shapes"
    elif [ -n "$second_at" ] && [ "$i" -eq "$second_at" ]; then
      msg="[kernel] Shorten the softmax software pipeline"
    else
      msg="[misc] Update module $(( i % files )) (change $i)"
    fi
    header refs/heads/main "$(( i + 1 ))" "$(( i % 5 ))" "$ts" "$msg"
    if [ "$i" -eq 0 ]; then
      blob bench.sh 100755 "$BENCH"
      blob params.txt 100644 "$(printf 'latency_ms=%s\nnoise=%s' "$base_ms" "$noise")"
      blob kernels/attention.py 100644 "$(kernel 64)"
      if [ -n "$second_at" ]; then blob kernels/softmax.py 100644 "$(softmax 3)"; fi
      blob .gitignore 100644 "build/"
      for f in $(seq 0 $(( files - 1 ))); do
        blob "src/module_$f.py" 100644 "# module $f"
      done
    else
      printf 'from :%d\n' "$i"
      blob "src/module_$(( i % files )).py" 100644 "$(printf '# module %d\nVERSION = %d' "$(( i % files ))" "$i")"
      if [ "$i" -eq "$culprit" ]; then
        blob kernels/attention.py 100644 "$(kernel 32)"
        params 1 "$(has_second "$i")"
      elif [ -n "$second_at" ] && [ "$i" -eq "$second_at" ]; then
        blob kernels/softmax.py 100644 "$(softmax 1)"
        params "$(( i > culprit ? 1 : 0 ))" 1
      fi
    fi
    if [ "$i" -eq 0 ]; then printf 'reset refs/tags/v1.0\nfrom :1\n'; fi
    if [ -n "$merge_at" ] && [ "$i" -eq "$fork_at" ]; then branch_commits "$ts"; fi
  done
} | git -C "$dir" fast-import --quiet
git -C "$dir" checkout -q -f main
if [ -z "$merge_at" ] && [ -z "$second_at" ]; then
  git -C "$dir" rev-parse "main~$(( commits - culprit ))"
  exit 0
fi
if [ -n "$merge_at" ]; then
  echo "culprit=$(git -C "$dir" rev-parse "$branch_ref~$(( branch_len - branch_culprit ))")"
  echo "merge=$(git -C "$dir" rev-parse "main~$(( commits - merge_at ))")"
  echo "fork=$(git -C "$dir" rev-parse "main~$(( commits - fork_at ))")"
else
  echo "culprit=$(git -C "$dir" rev-parse "main~$(( commits - culprit ))")"
fi
if [ -n "$second_at" ]; then
  echo "second=$(git -C "$dir" rev-parse "main~$(( commits - second_at ))")"
fi
