#!/usr/bin/env bash
# clang's thread-safety analysis over every translation unit of the project's own code: the
# ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED / ABSL_LOCKS_EXCLUDED annotations are checked
# with -Wthread-safety -Werror (GCC, the default compiler, ignores them). Syntax only: no code is
# generated, so this takes a fraction of a build. Configures build-tsa/ with clang and
# -DKBISECT_THREAD_SAFETY=ON (which a full build there also honours) and generates the proto
# headers first. Usage: scripts/check-thread-safety.sh [-jN]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:--j$(nproc)}"
jobs="${jobs#-j}"
dir=build-tsa
if [ ! -f "$dir/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKBISECT_THREAD_SAFETY=ON -DKBISECT_UNITY=OFF >/dev/null
fi
# The generated headers every TU includes (the protoc step only, not the library).
ninja -C "$dir" proto/gen/kbisect/v1/kbisect.pb.h proto/gen/kbisect/v1/kbisect.grpc.pb.h \
  proto/gen/grpc/health/v1/health.pb.h proto/gen/grpc/health/v1/health.grpc.pb.h >/dev/null
# One line per project TU (the generated code has no -Wthread-safety and is left out).
python3 - "$dir" > "$dir/tsa-commands.txt" <<'PY'
import json, shlex, sys
for entry in json.load(open(f"{sys.argv[1]}/compile_commands.json")):
    cmd = entry["command"]
    if "-Wthread-safety" not in cmd or "/proto/gen/" in entry["file"]:
        continue
    args = shlex.split(cmd)
    # Drop the output and dependency-file arguments; check syntax only.
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a.endswith("ccache"):
            continue
        out.append(a)
    print("cd " + shlex.quote(entry["directory"]) + " && " + " ".join(map(shlex.quote, out))
          + " -fsyntax-only")
PY
count=$(wc -l < "$dir/tsa-commands.txt")
start=$(date +%s)
if ! tr '\n' '\0' < "$dir/tsa-commands.txt" | xargs -0 -P "$jobs" -I{} bash -c '{}' 2>"$dir/tsa.log"; then
  grep -E 'error:|warning:' "$dir/tsa.log" | sort -u >&2
  echo "thread-safety: FAILED over $count translation units (full log: $dir/tsa.log)" >&2
  exit 1
fi
echo "thread-safety: $count translation units clean in $(( $(date +%s) - start )) s"
