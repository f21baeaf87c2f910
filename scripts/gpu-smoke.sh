#!/usr/bin/env bash
# The GPU smoke check, for the first machine with an NVIDIA GPU: generates a repository holding a
# real GPU kernel whose tile size regresses at a planted commit, and a benchmark that times it and
# prints "kernel_time_us: X"; runs the bundle's `kbisect run` on it (one worker per GPU) and checks
#   - the culprit is the planted commit,
#   - the runner identity came from the real nvidia-smi (GPU name, UUID, driver, CUDA version equal
#     to what `nvidia-smi --query-gpu` says), with its settings (ECC, MIG, power limit),
#   - every benchmark run was watched while it ran (NVML or a streaming nvidia-smi), with samples,
#   - every benchmark run recorded the GPU's SM clock and throttle state;
#   - `--lock-clocks max` locks, verifies, records and undoes the lock (said, not failed, where
#     it is refused: no root, MIG);
# then runs `git bisect run` on the same repository with the same benchmark and prints both wall
# times. The kernel is Triton through PyTorch when `import torch, triton` works and CUDA is
# available, else CUDA C++ through nvcc (PATH or /usr/local/cuda/bin): a shared-memory tiled
# matmul, timed with triton.testing.do_bench or CUDA events.
#
# Without an NVIDIA GPU (nvidia-smi missing or listing none), or without either toolchain, it
# prints "gpu-smoke: SKIPPED: <why>" and exits 0. Exit 1: a check failed. Needs git and python3
# (for reading the JSON result); everything else comes from the bundle. Budget: well under 10
# minutes on one GPU.
#
#   scripts/gpu-smoke.sh [--bundle TARBALL|DIR] [--commits N] [--work DIR]
#
# --bundle  the bundle (scripts/package.sh) to take bin/kbisect from; default: the bundle this
#           script is in (BUNDLE/scripts/gpu-smoke.sh), else dist/kbisect-*.tar.gz (made with
#           scripts/package.sh when missing).
# --commits the generated repository's length (default 32; the regression is at 2/3).
# --work    where the repository, caches and logs go (default: a temp dir, removed afterwards).
# KBISECT_SMOKE_KERNEL=triton|cuda picks the kernel instead of the first toolchain that works.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bundle=""
commits=32
work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle="$2"; shift 2 ;;
    --commits) commits="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    *) echo "gpu-smoke: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
say() { echo "gpu-smoke: $*"; }
skip() { say "SKIPPED: $*"; exit 0; }
fail() { say "FAIL: $*" >&2; exit 1; }

# --- Is there a GPU, and a toolchain for a kernel? -------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1; then
  skip "no NVIDIA GPU here (nvidia-smi is not on PATH)"
fi
if ! gpus="$(nvidia-smi -L 2>&1)" || ! grep -q '^GPU [0-9]' <<<"$gpus"; then
  skip "no NVIDIA GPU here (nvidia-smi -L: $(head -n 1 <<<"$gpus"))"
fi
gpu_count="$(grep -c '^GPU [0-9]' <<<"$gpus")"
mode=""
want="${KBISECT_SMOKE_KERNEL:-}"
if [ "$want" != cuda ] && command -v python3 >/dev/null 2>&1 &&
   python3 -c 'import sys, torch, triton; sys.exit(0 if torch.cuda.is_available() else 1)' \
     >/dev/null 2>&1; then
  mode=triton
elif [ "$want" != triton ]; then
  nvcc="$(command -v nvcc || true)"
  if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
  if [ -n "$nvcc" ]; then mode=cuda; fi
fi
[ -n "$mode" ] || skip "$gpu_count GPU(s), but neither PyTorch+Triton (with CUDA) nor nvcc"
command -v git >/dev/null 2>&1 || fail "git is needed to generate the repository"
command -v python3 >/dev/null 2>&1 || fail "python3 is needed to read the JSON result"

if [ -z "$work" ]; then
  work="$(mktemp -d /tmp/kbisect-gpu-smoke-XXXXXX)"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

# --- The bundle -------------------------------------------------------------------------------
if [ -z "$bundle" ]; then
  if [ -x "$here/../bin/kbisect" ] && [ -f "$here/../BUNDLE" ]; then
    bundle="$(cd "$here/.." && pwd)"
  else
    root="$(cd "$here/.." && pwd)"
    bundle="$(find "$root/dist" -maxdepth 1 -name 'kbisect-*-linux-*.tar.gz' 2>/dev/null | head -n 1)"
    if [ -z "$bundle" ]; then
      "$root/scripts/package.sh"
      bundle="$(find "$root/dist" -maxdepth 1 -name 'kbisect-*-linux-*.tar.gz' | head -n 1)"
    fi
  fi
fi
if [ -f "$bundle" ]; then
  mkdir -p "$work/bundle"
  tar -C "$work/bundle" -xzf "$bundle"
  bundle="$(ls -d "$work"/bundle/kbisect-*)"
fi
kbisect="$bundle/bin/kbisect"
[ -x "$kbisect" ] || fail "no bin/kbisect in the bundle $bundle"
say "$gpu_count GPU(s): $(head -n 1 <<<"$gpus"); kernel: $mode; bundle: $bundle"

# --- The repository: a tiled matmul whose tile shrinks at the planted commit ------------------
repo="$work/repo"
rm -rf "$repo"
mkdir -p "$repo"
git -C "$repo" init -q -b main
git -C "$repo" config user.name "kbisect smoke"
git -C "$repo" config user.email "smoke@kbisect.invalid"
if [ "$mode" = cuda ]; then
  cat >"$repo/kernel.cu" <<'CU'
// Shared-memory tiled matmul C = A * B (n x n, fp32), timed with CUDA events.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "tile.h"

#define CHECK(call)                                                        \
  do {                                                                     \
    cudaError_t e = (call);                                                \
    if (e != cudaSuccess) {                                                \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e));      \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

__global__ void matmul(const float* a, const float* b, float* c, int n) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < n; t += TILE) {
    as[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

int main() {
  const int n = 2048;
  const size_t bytes = sizeof(float) * n * n;
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&c, bytes));
  CHECK(cudaMemset(a, 0, bytes));
  CHECK(cudaMemset(b, 0, bytes));
  const dim3 block(TILE, TILE), grid(n / TILE, n / TILE);
  for (int i = 0; i < 3; ++i) matmul<<<grid, block>>>(a, b, c, n);
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int iterations = 20;
  CHECK(cudaEventRecord(start));
  for (int i = 0; i < iterations; ++i) matmul<<<grid, block>>>(a, b, c, n);
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaGetLastError());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::printf("kernel_time_us: %.3f\n", ms * 1000.0f / iterations);
  return 0;
}
CU
  echo '#define TILE 32' >"$repo/tile.h"
  build_cmd="$nvcc -O3 -o bench kernel.cu"
  bench_cmd=(./bench)
  plant() { echo '#define TILE 8' >"$repo/tile.h"; }
else
  cat >"$repo/bench.py" <<'PY'
# Triton matmul (fp16 in, fp32 accumulate), timed with triton.testing.do_bench.
import torch
import triton
import triton.language as tl

from tile import BLOCK_K, BLOCK_M, BLOCK_N


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * n + rk[None, :]
    b = b_ptr + rk[:, None] * n + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, n, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK
        b += BK * n
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc.to(tl.float16))


n = 4096
a = torch.randn((n, n), device="cuda", dtype=torch.float16)
b = torch.randn((n, n), device="cuda", dtype=torch.float16)
c = torch.empty((n, n), device="cuda", dtype=torch.float16)
grid = (n // BLOCK_M, n // BLOCK_N)
ms = triton.testing.do_bench(lambda: matmul_kernel[grid](a, b, c, n, BLOCK_M, BLOCK_N, BLOCK_K))
print(f"kernel_time_us: {ms * 1000:.3f}")
PY
  printf 'BLOCK_M = 128\nBLOCK_N = 128\nBLOCK_K = 32\n' >"$repo/tile.py"
  build_cmd=""
  bench_cmd=(python3 bench.py)
  plant() { printf 'BLOCK_M = 16\nBLOCK_N = 16\nBLOCK_K = 16\n' >"$repo/tile.py"; }
fi
mkdir -p "$repo/notes"
echo "smoke" >"$repo/notes/0.txt"
git -C "$repo" add -A
git -C "$repo" commit -q -m "matmul kernel and its benchmark"
git -C "$repo" tag v0
planted_at=$((commits * 2 / 3))
culprit=""
for i in $(seq 1 "$commits"); do
  if [ "$i" -eq "$planted_at" ]; then
    plant
    git -C "$repo" commit -q -am "Shrink the matmul tile (planted regression)"
    culprit="$(git -C "$repo" rev-parse HEAD)"
  else
    echo "note $i" >"$repo/notes/$i.txt"
    git -C "$repo" add -A
    git -C "$repo" commit -q -m "Unrelated change $i"
  fi
done
say "repository: $commits commits after v0, regression planted at ${culprit:0:12}"

# --- kbisect run ------------------------------------------------------------------------------
build_args=()
if [ -n "$build_cmd" ]; then build_args=(--build "$build_cmd"); fi
start=$(date +%s.%N)
set +e
(cd "$repo" && "$kbisect" run v0 HEAD --workers "$gpu_count" --runs 3 --cache-dir "$work/cache" \
   --json "$work/result.json" "${build_args[@]}" -- "${bench_cmd[@]}") >"$work/kbisect.log" 2>&1
code=$?
set -e
kbisect_wall="$(python3 -c "print($(date +%s.%N) - $start)")"
[ "$code" -eq 0 ] || fail "kbisect run exited $code: $(tail -n 30 "$work/kbisect.log")"

# Expected identity from nvidia-smi itself (GPU 0: the first worker's).
expected="$(nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader -i 0)"
cuda_banner="$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
python3 - "$work/result.json" "$culprit" "$expected" "$cuda_banner" <<'PY' || fail "checks of the JSON result failed (above)"
import json
import sys

result = json.load(open(sys.argv[1]))
culprit, expected, cuda = sys.argv[2], [f.strip() for f in sys.argv[3].split(",")], sys.argv[4]
problems = []
if result.get("status") != "culprit_found" or (result.get("culprit") or {}).get("sha") != culprit:
    problems.append(f"culprit: want {culprit}, got {result.get('status')} {result.get('culprit')}")
identities = [w.get("identity", {}) for w in result.get("workers", [])]
first = next((i for i in identities if i.get("slot", "0") == "0"), identities[0] if identities else {})
gpus = first.get("gpus", [])
if not gpus:
    problems.append(f"the runner identity lists no GPU: {first}")
else:
    got = [gpus[0].get("model", ""), gpus[0].get("uuid", ""), first.get("driver_version", "")]
    if got != expected:
        problems.append(f"identity {got} is not nvidia-smi's {expected}")
    if first.get("cuda_version", "") != cuda:
        problems.append(f"CUDA version {first.get('cuda_version')!r}, nvidia-smi says {cuda!r}")
runs = [r for p in result.get("probes", []) for r in p.get("runs", [])]
clocks = [r.get("gpu_state", {}).get("sm_clock_mhz", 0) for r in runs]
if not runs or any(c <= 0 for c in clocks):
    problems.append(f"{sum(c <= 0 for c in clocks)} of {len(runs)} runs recorded no SM clock")
reasons = sorted({x for r in runs for x in r.get("gpu_state", {}).get("throttle_reasons", [])})
throttled = sum(bool(r.get("gpu_state", {}).get("throttled")) for r in runs)
# Issue 49: every run watched while it ran (NVML, else a streaming nvidia-smi), with samples.
sources = sorted({r.get("gpu_state", {}).get("watch_source", "") for r in runs})
samples = [r.get("gpu_state", {}).get("samples", 0) for r in runs]
if not runs or "" in sources or any(n <= 0 for n in samples):
    problems.append(f"runs not watched during the run: sources {sources}, samples {samples[:10]}")
gpu0 = gpus[0] if gpus else {}
settings = {k: gpu0.get(k) for k in ("ecc_mode", "mig_mode", "power_limit_watts",
                                     "default_power_limit_watts")}
for p in problems:
    print("gpu-smoke: FAIL:", p, file=sys.stderr)
if problems:
    sys.exit(1)
print(f"gpu-smoke: culprit {culprit[:12]} found; identity {expected[0]} {expected[1]} driver "
      f"{expected[2]} CUDA {cuda} (from nvidia-smi)")
print(f"gpu-smoke: watched by {', '.join(sources)}, {min(samples)}-{max(samples)} samples a run; "
      f"GPU settings {settings}; class {first.get('hardware_class_label')}")
print(f"gpu-smoke: {len(runs)} probe runs, SM clock {min(clocks)}-{max(clocks)} MHz, "
      f"{throttled} throttled, reasons seen: {', '.join(reasons) or 'none'}; "
      f"bench runs {result.get('bench_runs')}, rounds {result.get('rounds')}")
PY

# --- --lock-clocks max: locked, verified, recorded, undone (issue 49) ---------------------------
# A short run over the last commits on one GPU. Refused without root or on MIG: said, not failed.
set +e
(cd "$repo" && "$kbisect" run HEAD~2 HEAD --workers 1 --runs 1 --no-confirm --lock-clocks max \
   --cache-dir "$work/cache-lock" --json "$work/lock.json" "${build_args[@]}" -- "${bench_cmd[@]}") \
  >"$work/lock.log" 2>&1
lock_code=$?
set -e
if grep -q "lock" "$work/lock.log" && [ "$lock_code" -ne 0 ] && [ "$lock_code" -ne 3 ]; then
  say "--lock-clocks max refused here (exit $lock_code): $(grep -m1 -i lock "$work/lock.log")"
else
  [ ! -e "$work/cache-lock/clock-lock/slot-0.state" ] ||
    fail "--lock-clocks left its state file: the lock was not undone"
  python3 - "$work/lock.json" <<'PY' || fail "--lock-clocks max: the identity does not record the lock"
import json, sys
result = json.load(open(sys.argv[1]))
gpus = [g for w in result.get("workers", []) for g in w.get("identity", {}).get("gpus", [])]
locked = [g.get("locked_sm_clock_mhz", 0) for g in gpus]
if not locked or any(c <= 0 for c in locked):
    print(f"gpu-smoke: FAIL: locked clocks recorded: {locked}", file=sys.stderr)
    sys.exit(1)
print(f"gpu-smoke: --lock-clocks max locked SM at {locked[0]} MHz, verified, undone at the end")
PY
fi

# --- git bisect run on the same repository ----------------------------------------------------
good="$(cd "$repo" && git checkout -q v0 && ${build_cmd:-true} && "${bench_cmd[@]}" | sed -n 's/kernel_time_us: //p')"
bad="$(cd "$repo" && git checkout -q main && ${build_cmd:-true} && "${bench_cmd[@]}" | sed -n 's/kernel_time_us: //p')"
threshold="$(python3 -c "print(($good * $bad) ** 0.5)")"
cat >"$work/judge.sh" <<JUDGE
#!/bin/sh
${build_cmd:-true} || exit 125
value=\$(${bench_cmd[*]} | sed -n 's/kernel_time_us: //p')
[ -n "\$value" ] || exit 125
python3 -c "import sys; sys.exit(0 if \$value < $threshold else 1)"
JUDGE
chmod +x "$work/judge.sh"
start=$(date +%s.%N)
(cd "$repo" && git bisect start main v0 && git bisect run "$work/judge.sh") >"$work/git-bisect.log" 2>&1 \
  || fail "git bisect run failed: $(tail -n 20 "$work/git-bisect.log")"
git_wall="$(python3 -c "print($(date +%s.%N) - $start)")"
git_culprit="$(sed -n 's/^\([0-9a-f]\{40\}\) is the first bad commit.*/\1/p' "$work/git-bisect.log")"
(cd "$repo" && git bisect reset >/dev/null 2>&1)
steps="$(grep -c '^running' "$work/git-bisect.log" || true)"
[ "$git_culprit" = "$culprit" ] || say "note: git bisect run (one run a step) named ${git_culprit:-nothing}"
printf 'gpu-smoke: wall: kbisect run %.1f s on %s GPU(s) (3 runs a probe, confirmed) vs git bisect run %.1f s (%s steps, 1 run each; good %s us, bad %s us)\n' \
  "$kbisect_wall" "$gpu_count" "$git_wall" "$steps" "$good" "$bad"
say "PASS"
