#!/usr/bin/env bash
# The relocatable bundle end to end: scripts/package.sh builds the tarball from BUILD_DIR, the
# test unpacks it into a temp dir and, with `env -i` (no LD_LIBRARY_PATH, a bare PATH), runs a
# local bisect with the bundle's `kbisect run`, then the bundle's coordinator and worker with a
# `kbisect submit --wait` through them. ldd must resolve gRPC, protobuf, libgit2 and abseil, and
# everything else beyond glibc, inside the bundle's lib/.
#
#   tests/integration/bundle_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"
build="$2"
tmp="$(mktemp -d /tmp/kbisect-bundle-test-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }

"$src/scripts/package.sh" --build-dir "$build" --out "$tmp/dist" | tee "$tmp/package.log"
tarball="$(ls "$tmp"/dist/kbisect-*-linux-*.tar.gz)"
[ -f "$tarball" ] || fail "no tarball in $tmp/dist"
mkdir "$tmp/unpacked"
tar -C "$tmp/unpacked" -xzf "$tarball"
bundle="$(ls -d "$tmp"/unpacked/kbisect-*)"
for f in bin/kbisect bin/kbisect-coordinator bin/kbisect-worker BUNDLE docs/README.md \
         docs/operations.md deploy/slurm/kbisect-workers.sbatch \
         deploy/slurm/kbisect-coordinator.sbatch deploy/Dockerfile deploy/k8s/base scripts/gpu-smoke.sh; do
  [ -e "$bundle/$f" ] || fail "the bundle lacks $f"
done
grep -q "minimum glibc: 2\.[0-9]*" "$bundle/BUNDLE" || fail "BUNDLE names no minimum glibc"
# Inside the bundle the smoke check finds the bundle's own bin/ (and skips here, without a GPU).
if ! PATH=/usr/bin:/bin command -v nvidia-smi >/dev/null 2>&1; then
  smoke="$(PATH=/usr/bin:/bin "$bundle/scripts/gpu-smoke.sh" 2>&1)" || fail "gpu-smoke.sh: $smoke"
  grep -q "SKIPPED" <<<"$smoke" || fail "gpu-smoke.sh from the bundle did not skip: $smoke"
fi
ok "layout: bin/ lib/ docs/ deploy/ scripts/ BUNDLE ($(du -h "$tarball" | cut -f1), $(grep 'minimum glibc' "$bundle/BUNDLE"))"

for b in kbisect kbisect-coordinator kbisect-worker; do
  deps="$(env -i "$(command -v ldd)" "$bundle/bin/$b")"
  if grep -q "not found" <<<"$deps"; then fail "$b: $(grep 'not found' <<<"$deps")"; fi
  for want in libgrpc++ libgrpc.so libprotobuf libgit2 libabsl_base libabsl_status.so libre2 \
              libstdc++; do
    line="$(grep -F "$want" <<<"$deps" | head -n 1)"
    [ -n "$line" ] || fail "$b does not load $want"
    case "$line" in
      *"=> $bundle/bin/../lib/"*) ;;
      *) fail "$b: $want resolves outside the bundle: $line" ;;
    esac
  done
  # Everything else that resolves must be glibc's.
  outside="$(awk '$2 == "=>" { print $3 }' <<<"$deps" | grep -v "^$bundle/bin/../lib/" \
    | grep -Ev '/(libc|libm|libresolv|libpthread|libdl|librt)\.so' || true)"
  [ -z "$outside" ] || fail "$b loads libraries from outside the bundle: $outside"
done
ok "ldd: gRPC, protobuf, libgit2, abseil, RE2, libstdc++ resolve inside lib/ for all three binaries"

culprit="$("$src/scripts/make-demo-repo.sh" "$tmp/repo" --commits 40 --culprit 23)"
mkdir -p "$tmp/home"
run_env=(env -i PATH=/usr/bin:/bin HOME="$tmp/home" KBISECT_DEMO_SLEEP=0.01)
(cd "$tmp/repo" && "${run_env[@]}" "$bundle/bin/kbisect" run v1.0 HEAD --workers 2 \
   --cache-dir "$tmp/cache" --json "$tmp/run.json" -- ./bench.sh) >"$tmp/run.log" 2>&1 \
  || fail "kbisect run from the bundle: $(tail -n 20 "$tmp/run.log")"
grep -q "\"sha\": \"$culprit\"" "$tmp/run.json" || fail "kbisect run named another culprit: $(head -c 600 "$tmp/run.json")"
ok "env -i bundle/bin/kbisect run: culprit ${culprit:0:12}"

"${run_env[@]}" "$bundle/bin/kbisect-coordinator" --listen 127.0.0.1:0 --state-dir "$tmp/state" \
  --port-file "$tmp/port" >"$tmp/coordinator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || fail "the bundle's coordinator did not start: $(cat "$tmp/coordinator.log")"
address="127.0.0.1:$(cat "$tmp/port")"
"${run_env[@]}" "$bundle/bin/kbisect-worker" --coordinator "$address" --cache-dir "$tmp/wcache" \
  --idle-poll 1 >"$tmp/worker.log" 2>&1 &
pids+=($!)
(cd "$tmp" && "${run_env[@]}" "$bundle/bin/kbisect" submit v1.0 HEAD --repo "$tmp/repo" \
   --coordinator "$address" --wait --json "$tmp/submit.json" -- ./bench.sh) >"$tmp/submit.log" 2>&1 \
  || fail "kbisect submit through the bundle's daemons: $(tail -n 20 "$tmp/submit.log") $(tail -n 5 "$tmp/worker.log")"
grep -q "\"sha\": \"$culprit\"" "$tmp/submit.json" || fail "submit named another culprit"
ok "env -i bundle coordinator + worker + kbisect submit --wait: culprit ${culprit:0:12}"
echo "$passed passed, 0 failed"
