#!/usr/bin/env bash
# Writes the relocatable bundle dist/kbisect-VERSION-linux-x86_64.tar.gz:
#
#   kbisect-VERSION-linux-x86_64/
#     bin/     kbisect, kbisect-coordinator, kbisect-worker (debug info stripped, rpath
#              $ORIGIN/../lib)
#     lib/     every shared library they load beyond glibc (found with ldd; rpath $ORIGIN)
#     docs/    README.md and docs/*.md
#     deploy/  the Slurm scripts, the Kubernetes manifests and the Dockerfile
#     scripts/ gpu-smoke.sh (the GPU smoke check, run from the bundle alone)
#     BUNDLE   version, build host, and the minimum glibc the bundle needs
#
# Unpack it anywhere on an x86-64 Linux with glibc >= the version in BUNDLE (2.36 for a bookworm
# build: Debian 12, Ubuntu 22.10+/24.04, RHEL 10) and run bin/kbisect*: nothing else from the
# build machine is needed. Builds with scripts/build.sh first when the binaries are missing.
#
#   scripts/package.sh [--build-dir DIR] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build_dir="$root/build"
out_dir="$root/dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$(realpath "$2")"; shift 2 ;;
    --out) mkdir -p "$2"; out_dir="$(realpath "$2")"; shift 2 ;;
    *) echo "package.sh: unknown argument $1 (usage: package.sh [--build-dir DIR] [--out DIR])" >&2
       exit 2 ;;
  esac
done
for tool in patchelf ldd objdump strip tar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "package.sh: $tool is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
done
binaries=(kbisect kbisect-coordinator kbisect-worker)
for b in "${binaries[@]}"; do
  if [ ! -x "$build_dir/bin/$b" ]; then
    if [ "$build_dir" != "$root/build" ]; then
      echo "package.sh: $build_dir/bin/$b is missing" >&2
      exit 1
    fi
    scripts/build.sh
    break
  fi
done

version="$(sed -n 's/^project(kbisect VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
arch="$(uname -m)"
name="kbisect-$version-linux-$arch"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
dest="$stage/$name"
mkdir -p "$dest/bin" "$dest/lib" "$dest/docs" "$dest/deploy" "$dest/scripts"

# glibc's own libraries stay the host's: they must match its ld.so.
is_glibc() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|\
    libresolv.so.*|libutil.so.*|libanl.so.*|libnsl.so.*|libmvec.so.*|libBrokenLocale.so.*|\
    libnss_*.so.*|libthread_db.so.*|libc_malloc_debug.so.*|libmemusage.so*) return 0 ;;
  esac
  return 1
}

for b in "${binaries[@]}"; do
  cp "$build_dir/bin/$b" "$dest/bin/$b"
  strip --strip-debug "$dest/bin/$b"
  # ldd lists the whole closure (libraries of libraries too).
  while read -r lib path; do
    if is_glibc "$lib"; then continue; fi
    if [ -z "$path" ] || [ ! -f "$path" ]; then
      echo "package.sh: $b needs $lib, which ldd cannot find" >&2
      exit 1
    fi
    if [ ! -f "$dest/lib/$lib" ]; then
      cp -L "$path" "$dest/lib/$lib"
      chmod u+w "$dest/lib/$lib"
    fi
  done < <(ldd "$build_dir/bin/$b" | awk '$2 == "=>" { print $1, $3; next } { print $1, "" }' \
             | grep -v '^/' || true)
  patchelf --set-rpath '$ORIGIN/../lib' "$dest/bin/$b"
done
for lib in "$dest"/lib/*; do
  strip --strip-debug "$lib"
  patchelf --set-rpath '$ORIGIN' "$lib"
done

# The newest GLIBC_x.y symbol version any file needs is the bundle's minimum glibc.
glibc_min="$(objdump -T "$dest"/bin/* "$dest"/lib/* 2>/dev/null \
  | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -u -V | tail -n 1)"

cp README.md "$dest/docs/README.md"
cp docs/*.md "$dest/docs/"
cp -r deploy/slurm deploy/k8s deploy/Dockerfile "$dest/deploy/"
cp scripts/gpu-smoke.sh "$dest/scripts/"
cat >"$dest/BUNDLE" <<INFO
kbisect $version ($arch), built $(git log -1 --format=%h 2>/dev/null || echo unknown) on $(. /etc/os-release && echo "$PRETTY_NAME")
minimum glibc: $glibc_min
libraries: $(ls "$dest/lib" | wc -l) in lib/ (everything beyond glibc), binaries in bin/ with rpath \$ORIGIN/../lib
INFO

mkdir -p "$out_dir"
tarball="$out_dir/$name.tar.gz"
tar -C "$stage" -czf "$tarball.tmp" "$name"
mv "$tarball.tmp" "$tarball"
echo "package.sh: $tarball ($(du -h "$tarball" | cut -f1), $(ls "$dest/lib" | wc -l) libraries, glibc >= $glibc_min)"
