#!/usr/bin/env bash
# Creates a git repository holding the history of a small real C library with a planted
# slowdown, for benchmarks that pay a real (incremental) compile at every probe. Uses
# `git fast-import`, so 300 commits take about a second.
#
#   scripts/make-c-repo.sh DIR [--commits N] [--culprit K] [--modules M] [--variants V]
#
# The tree: src/mod_0.c .. src/mod_{M-1}.c (default 12 modules, each a family of V (default 6)
# block-hashing kernels plus a driver), include/kb.h, bench/bench.c and a Makefile that builds
# build/libkb.a and build/bench (`make -j2`; build/ is git-ignored, so object files survive
# between commits and only the changed module recompiles). `./build/bench` hashes a fixed input
# through every module and prints "Latency: X ms" (a deterministic work counter: X is the number
# of inner-loop steps / 1e6, so it does not depend on the machine or its load) and a checksum.
#
# Commit 0 is the root ("v1.0" tag); commits 1..N follow on main. Commit i edits one module,
# src/mod_{i mod M}.c, for real: it changes that module's salt constant, which enters the
# checksum but not the work. Commit K (1-based, default N*2/3) also changes that module's
# BLOCK from 64 to 6: its per-block warm-up then runs about 11 times as often and the metric rises by
# about 45% (and so does the benchmark's real time). Prints the culprit's sha on stdout.
set -euo pipefail

dir=""
commits=300
culprit=""
modules=12
variants=6
while [ $# -gt 0 ]; do
  case "$1" in
    --commits) commits="$2"; shift 2 ;;
    --culprit) culprit="$2"; shift 2 ;;
    --modules) modules="$2"; shift 2 ;;
    --variants) variants="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "make-c-repo: unknown option $1" >&2; exit 2 ;;
    *) dir="$1"; shift ;;
  esac
done
[ -n "$dir" ] || { echo "usage: make-c-repo.sh DIR [options]" >&2; exit 2; }
[ -n "$culprit" ] || culprit=$(( commits * 2 / 3 ))
if [ "$culprit" -lt 1 ] || [ "$culprit" -gt "$commits" ]; then
  echo "make-c-repo: --culprit must be in 1..$commits" >&2; exit 2
fi
if [ "$modules" -lt 1 ] || [ "$variants" -lt 1 ]; then
  echo "make-c-repo: --modules and --variants must be at least 1" >&2; exit 2
fi
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  echo "make-c-repo: $dir exists and is not empty" >&2; exit 1
fi
mkdir -p "$dir"
git -C "$dir" init -q -b main
git -C "$dir" config user.name "kbisect demo"
git -C "$dir" config user.email "demo@kbisect.invalid"
culprit_module=$(( culprit % modules ))

blob() {  # blob PATH CONTENT
  printf 'M 100644 inline %s\ndata %d\n%s\n' "$1" "$(( ${#2} + 1 ))" "$2"
}

module() {  # module J SALT BLOCK: the text of src/mod_J.c
  local j=$1 v
  printf '/* Module %d of libkb: a family of block-hashing kernels. */\n' "$j"
  printf '#include "kb.h"\n\n#define MOD%d_SALT %du\n#define MOD%d_BLOCK %d\n\n' "$j" "$2" "$j" "$3"
  printf 'static unsigned mix%d(unsigned x) {\n' "$j"
  printf '  x ^= x >> %d;\n  x *= 0x%08xu;\n  x ^= x >> %d;\n  return x;\n}\n\n' \
    "$(( 11 + j % 7 ))" "$(( (2654435761 + 40503 * j) % 4294967296 | 1 ))" "$(( 13 + j % 5 ))"
  for v in $(seq 0 $(( variants - 1 ))); do
    # Variant v hashes every (v+1)-th word with its own constants; the work is one step per
    # word it reads plus 32 warm-up steps per block.
    printf 'static unsigned long kernel%d_%d(const unsigned* data, int n, unsigned* acc) {\n' "$j" "$v"
    printf '  unsigned long work = 0;\n  unsigned h = *acc + %du;\n' "$(( 7919 * (v + 1) ))"
    printf '  for (int start = 0; start < n; start += MOD%d_BLOCK) {\n' "$j"
    printf '    for (int k = 0; k < 32; k++) {\n      h = mix%d(h + (unsigned)k * %du);\n      work++;\n    }\n' \
      "$j" "$(( 31 + 2 * v ))"
    printf '    int end = start + MOD%d_BLOCK < n ? start + MOD%d_BLOCK : n;\n' "$j" "$j"
    printf '    for (int i = start; i < end; i += %d) {\n' "$(( v + 1 ))"
    printf '      h = mix%d(h ^ (data[i] + %du));\n      h = (h << %d) | (h >> %d);\n      work++;\n    }\n  }\n' \
      "$j" "$(( 97 * v + j ))" "$(( 1 + (j + v) % 13 ))" "$(( 31 - (j + v) % 13 ))"
    printf '  *acc = h;\n  return work;\n}\n\n'
  done
  printf 'unsigned long kb_mod%d(const unsigned* data, int n, unsigned* checksum) {\n' "$j"
  printf '  unsigned long work = 0;\n  unsigned acc = 0;\n'
  for v in $(seq 0 $(( variants - 1 ))); do
    printf '  work += kernel%d_%d(data, n, &acc);\n' "$j" "$v"
  done
  printf '  *checksum = mix%d(*checksum ^ acc ^ MOD%d_SALT);\n  return work;\n}\n' "$j" "$j"
}

header_file() {
  local j
  printf '/* libkb: block-hashing kernels, one module per source file. */\n'
  printf '#ifndef KB_H_\n#define KB_H_\n\n'
  for j in $(seq 0 $(( modules - 1 ))); do
    printf 'unsigned long kb_mod%d(const unsigned* data, int n, unsigned* checksum);\n' "$j"
  done
  printf '\n#endif\n'
}

bench_file() {
  local j
  printf '/* Hashes a fixed input through every module of libkb and prints the work done. */\n'
  printf '#include <stdio.h>\n#include <stdlib.h>\n\n#include "kb.h"\n\n'
  printf 'int main(void) {\n  enum { kWords = 1 << 18, kPasses = 4 };\n'
  printf '  unsigned* data = malloc(sizeof(unsigned) * kWords);\n  if (!data) return 2;\n'
  printf '  unsigned seed = 12345u;\n'
  printf '  for (int i = 0; i < kWords; i++) data[i] = seed = seed * 1103515245u + 12345u;\n'
  printf '  unsigned long work = 0;\n  unsigned checksum = 0;\n'
  printf '  for (int p = 0; p < kPasses; p++) {\n'
  for j in $(seq 0 $(( modules - 1 ))); do
    printf '    work += kb_mod%d(data, kWords, &checksum);\n' "$j"
  done
  printf '  }\n  free(data);\n'
  printf '  printf("Latency: %%.4f ms\\n", work / 1e6);\n'
  printf '  printf("(checksum %%08x)\\n", checksum);\n  return 0;\n}\n'
}

read -r -d '' MAKEFILE <<'MK' || true
# libkb: build/libkb.a and the benchmark build/bench. Incremental: only changed modules rebuild.
CC ?= cc
CFLAGS ?= -O2 -std=c99 -Wall
SRCS := $(sort $(wildcard src/*.c))
OBJS := $(patsubst src/%.c,build/%.o,$(SRCS))

all: build/bench

build/%.o: src/%.c include/kb.h | build
	$(CC) $(CFLAGS) -Iinclude -c $< -o $@

build/libkb.a: $(OBJS)
	rm -f $@
	ar rcs $@ $^

build/bench: bench/bench.c build/libkb.a include/kb.h
	$(CC) $(CFLAGS) -Iinclude bench/bench.c build/libkb.a -o $@

build:
	mkdir -p build

clean:
	rm -rf build

.PHONY: all clean
MK

header() {  # header MARK AUTHOR_NO TS MESSAGE
  printf 'commit refs/heads/main\nmark :%d\n' "$1"
  printf 'author Dev %d <dev%d@kbisect.invalid> %d +0000\n' "$2" "$2" "$3"
  printf 'committer Dev %d <dev%d@kbisect.invalid> %d +0000\n' "$2" "$2" "$3"
  printf 'data %d\n%s\n' "$(( ${#4} + 1 ))" "$4"
}

ts=1767225600  # 2026-01-01
{
  for i in $(seq 0 "$commits"); do
    ts=$(( ts + 3600 ))
    j=$(( i % modules ))
    if [ "$i" -eq 0 ]; then
      msg="Initial import of libkb"
    elif [ "$i" -eq "$culprit" ]; then
      msg="mod_$j: smaller blocks for better cache locality"
    else
      msg="mod_$j: retune the salt (change $i)"
    fi
    header "$(( i + 1 ))" "$(( i % 5 ))" "$ts" "$msg"
    if [ "$i" -eq 0 ]; then
      blob Makefile "$MAKEFILE"
      blob .gitignore "build/"
      blob include/kb.h "$(header_file)"
      blob bench/bench.c "$(bench_file)"
      for m in $(seq 0 $(( modules - 1 ))); do
        blob "src/mod_$m.c" "$(module "$m" "$(( 1000 + m ))" 64)"
      done
      printf 'reset refs/tags/v1.0\nfrom :1\n'
    else
      printf 'from :%d\n' "$i"
      block=64
      if [ "$j" -eq "$culprit_module" ] && [ "$i" -ge "$culprit" ]; then block=6; fi
      blob "src/mod_$j.c" "$(module "$j" "$(( 1000 + i ))" "$block")"
    fi
  done
} | git -C "$dir" fast-import --quiet
git -C "$dir" checkout -q -f main
git -C "$dir" rev-parse "main~$(( commits - culprit ))"
