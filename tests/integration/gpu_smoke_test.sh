#!/usr/bin/env bash
# scripts/gpu-smoke.sh without a GPU: it skips (exit 0, "SKIPPED: <why>") when nvidia-smi is
# missing, when it fails (no driver), and when there is a GPU but no kernel toolchain. Then the
# whole smoke flow runs against a stand-in GPU: a fake nvidia-smi (identity, banner, clocks and
# throttle reasons) and a fake nvcc whose "binary" reports a time proportional to 32/TILE, so the
# bundle's `kbisect run`, the identity/clock checks and the `git bisect run` comparison are
# exercised here; on a real GPU the same script runs the real kernel.
#
#   tests/integration/gpu_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1"
build="$2"
tmp="$(mktemp -d /tmp/kbisect-gpu-smoke-test-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
smoke="$src/scripts/gpu-smoke.sh"

expect_skip() {  # expect_skip LABEL PATTERN PATH_FOR_THE_SCRIPT
  local out code=0
  out="$(PATH="$3" KBISECT_SMOKE_KERNEL=cuda "$smoke" --work "$tmp/work-skip" 2>&1)" || code=$?
  [ "$code" -eq 0 ] || fail "$1: exit $code: $out"
  grep -q "^gpu-smoke: SKIPPED: .*$2" <<<"$out" || fail "$1: no SKIPPED line matching '$2': $out"
  ok "$1: $(grep SKIPPED <<<"$out")"
}

# No nvidia-smi at all (only where the machine has none on the plain PATH).
if ! PATH=/usr/bin:/bin command -v nvidia-smi >/dev/null 2>&1; then
  expect_skip "no nvidia-smi" "nvidia-smi is not on PATH" /usr/bin:/bin
fi

# nvidia-smi present but no driver.
mkdir -p "$tmp/nodriver"
cat >"$tmp/nodriver/nvidia-smi" <<'SH'
#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
exit 9
SH
chmod +x "$tmp/nodriver/nvidia-smi"
expect_skip "no driver" "couldn't communicate with the NVIDIA driver" "$tmp/nodriver:/usr/bin:/bin"

# A stand-in H200: every nvidia-smi query kbisect and the smoke script make, the settings and the
# watch during runs (a streaming --loop-ms query) included.
mkdir -p "$tmp/gpu"
cat >"$tmp/gpu/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-5f1e0c1a-0000-4000-8000-000000000001)" ;;
  *query-gpu=index,name*) echo "0, NVIDIA H200, GPU-5f1e0c1a-0000-4000-8000-000000000001, 1650924000001, 00000000:19:00.0, 570.86.15, 96.00.9F.00.04, 143771, 700.00, 1980, 3201" ;;
  *query-gpu=name,uuid,driver_version*) echo "NVIDIA H200, GPU-5f1e0c1a-0000-4000-8000-000000000001, 570.86.15" ;;
  *query-gpu=temperature.gpu,clocks.sm*) echo "41, 1980, 0x0000000000000001" ;;
  *query-gpu=index,ecc.mode.current*) echo "0, Enabled, Enabled, Disabled, Enabled, 700.00, 700.00, 1980, 1980" ;;
  *query-compute-apps=*) ;;
  *query-gpu=clocks_event_reasons.active*--loop-ms=*)
    while :; do echo "0x0000000000000001, 1980, 3201, 85.12, 41, 45"; sleep 0.1; done ;;
  *query-gpu=clocks_event_reasons.active*) echo "0x0000000000000001, 1980, 3201, 85.12, 41, 45" ;;
  "") echo "| NVIDIA-SMI 570.86.15    Driver Version: 570.86.15    CUDA Version: 12.8     |" ;;
  # --lock-clocks: accepted as root, read back at the lock.
  *--lock-gpu-clocks=*|*--lock-memory-clocks=*|*--reset-gpu-clocks*|*--reset-memory-clocks*|*--persistence-mode=*)
    echo "All done." ;;
  *query-gpu=clocks.sm,clocks.mem*) echo "1980, 3201" ;;
  *) exit 6 ;;
esac
SH
chmod +x "$tmp/gpu/nvidia-smi"
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! PATH=/usr/bin:/bin command -v nvcc >/dev/null 2>&1; then
  expect_skip "GPU without a toolchain" "neither PyTorch+Triton (with CUDA) nor nvcc" \
    "$tmp/gpu:/usr/bin:/bin"
fi

# The full flow on the stand-in GPU with a fake nvcc.
mkdir -p "$tmp/toolchain"
cat >"$tmp/toolchain/nvcc" <<'SH'
#!/bin/sh
# Fake nvcc: "-O3 -o OUT SRC" writes OUT, a script timing 32/TILE of the tile.h next to SRC.
out=""; src=""
while [ $# -gt 0 ]; do
  case "$1" in -o) out="$2"; shift 2 ;; -*) shift ;; *) src="$1"; shift ;; esac
done
tile=$(sed -n 's/#define TILE //p' "$(dirname "$src")/tile.h")
printf '#!/bin/sh\necho "kernel_time_us: %s"\n' "$((100 * 32 / tile))" >"$out"
chmod +x "$out"
SH
chmod +x "$tmp/toolchain/nvcc"
"$src/scripts/package.sh" --build-dir "$build" --out "$tmp/dist" >/dev/null
code=0
out="$(PATH="$tmp/gpu:$tmp/toolchain:/usr/bin:/bin" KBISECT_SMOKE_KERNEL=cuda "$smoke" \
  --bundle "$(find "$tmp/dist" -name 'kbisect-*.tar.gz')" --commits 24 --work "$tmp/work" 2>&1)" \
  || code=$?
echo "$out"
[ "$code" -eq 0 ] || fail "the smoke flow on the stand-in GPU exited $code"
for want in "kernel: cuda" "regression planted at" "culprit [0-9a-f]\{12\} found; identity NVIDIA H200 GPU-5f1e0c1a" \
            "driver 570.86.15 CUDA 12.8 (from nvidia-smi)" "SM clock 1980-1980 MHz" \
            "reasons seen: gpu_idle" "watched by nvidia-smi" "ECC on" \
            "lock-clocks max locked SM at 1980 MHz, verified, undone at the end" "wall: kbisect run .* vs git bisect run .* steps" "gpu-smoke: PASS"; do
  grep -q "$want" <<<"$out" || fail "no '$want' in the smoke output"
done
ok "stand-in GPU: culprit, identity from nvidia-smi, clocks and throttle reasons per run, wall times"
echo "$passed passed, 0 failed"
