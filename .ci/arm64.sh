#!/usr/bin/env bash
# make test-arm64: edgestats installed and run on arm64 (the architecture of every Raspberry Pi and
# Jetson), in a Debian bookworm arm64 userland (Raspberry Pi OS's base) run under qemu-user.
#
# What it checks: that the wheel and its [onnx] and [tflite] extras install from the package index
# on aarch64, and that doctor, collect (cnn9 under ONNX Runtime and LiteRT, from a model pack
# built on this host, as a real device would get it) and import run, parse /proc and /sys and
# store; the DB written there is then merged and analysed here. Emulated timings mean nothing
# (qemu translates every instruction): nothing here reads them.
#
# Needs root (debootstrap, chroot, mounts, binfmt_misc), a Debian-based host with debootstrap (make
# system-deps installs it), and the dev venv (.venv, for prepare and analyze on the host). The userland and
# its venv are cached under $ARM64_CACHE (default ~/.cache/edgestats/arm64): the first run builds
# them (about 15 minutes), later ones reinstall only the edgestats wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
CACHE=${ARM64_CACHE:-$HOME/.cache/edgestats/arm64}
ROOT=$CACHE/bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
HOST_PY=$REPO/.venv/bin/python
WORK=$ROOT/work
started=$(date +%s)

say() { printf '[arm64 %4ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }
fail() { echo "test-arm64: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot and mounts); run it as root or in CI"
command -v debootstrap >/dev/null || fail "debootstrap is missing: run make system-deps"
command -v dpkg-deb >/dev/null || fail "dpkg-deb is missing (the lane needs a Debian-based host)"
[ -x "$HOST_PY" ] || fail "the dev venv is missing: run make install first"

# qemu-user runs the userland's aarch64 binaries, through binfmt_misc. Debian bookworm's qemu (7.2)
# crashes in numpy 2.4's aarch64 build (SIGSEGV at import; numpy 2.2 runs), so the lane uses the
# static qemu-aarch64 of Debian trixie's qemu-user (10.0), fetched once into the cache from the
# same mirror, and registers it under its own name, last, so that it is the one the kernel picks.
QEMU=$CACHE/qemu-aarch64
if [ ! -x "$QEMU" ]; then
  say "fetching qemu-user (Debian trixie) for its static qemu-aarch64"
  mkdir -p "$CACHE/qemu-deb"
  deb=$("$HOST_PY" - "$MIRROR" <<'PY'
import lzma, sys, urllib.request
index = lzma.decompress(urllib.request.urlopen(f"{sys.argv[1]}/dists/trixie/main/binary-amd64/Packages.xz").read())
for stanza in index.decode().split("\n\n"):
    fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
    if fields.get("Package") == "qemu-user":
        print(fields["Filename"])
        break
PY
  ) || fail "could not read Debian trixie's package index from $MIRROR"
  [ -n "$deb" ] || fail "Debian trixie's index at $MIRROR lists no qemu-user"
  "$HOST_PY" -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
    "$MIRROR/$deb" "$CACHE/qemu-deb/qemu-user.deb" || fail "could not fetch $MIRROR/$deb"
  dpkg-deb -x "$CACHE/qemu-deb/qemu-user.deb" "$CACHE/qemu-deb/x"
  cp "$CACHE/qemu-deb/x/usr/bin/qemu-aarch64" "$QEMU"
  rm -rf "$CACHE/qemu-deb"
fi
BINFMT=/proc/sys/fs/binfmt_misc
[ -e $BINFMT/register ] || mount -t binfmt_misc binfmt_misc $BINFMT \
  || fail "cannot mount binfmt_misc (the kernel runs aarch64 binaries through it)"
[ -e $BINFMT/edgestats-aarch64 ] && echo -1 > $BINFMT/edgestats-aarch64
printf '%s' ':edgestats-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$QEMU"':F' \
  > $BINFMT/register || fail "cannot register qemu-aarch64 with binfmt_misc"

mounts=()
cleanup() {
  local m
  for (( i=${#mounts[@]}-1; i>=0; i-- )); do m=${mounts[$i]}; umount -l "$m" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() { mkdir -p "$ROOT$2"; mount "${@:3}" "$1" "$ROOT$2"; mounts+=("$ROOT$2"); }
# The userland trusts what this host trusts (a proxy's own CA included) and goes out the same way.
pass_env=()
for v in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy PIP_INDEX_URL; do
  [ -n "${!v:-}" ] && pass_env+=("$v=${!v}")
done
in_arm64() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/opt/es/bin:/usr/bin:/bin LANG=C.UTF-8 \
    PIP_CERT=/etc/ssl/certs/host-ca.crt SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_DEFAULT_TIMEOUT=180 "${pass_env[@]}" "$@"
}

# 1. The userland (cached): minbase plus Python 3.11 (bookworm's) and pip.
if [ ! -e "$ROOT/.edgestats-ready" ]; then
  say "building a bookworm arm64 userland in $ROOT (debootstrap, once)"
  rm -rf "$ROOT"; mkdir -p "$CACHE"
  debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$ROOT" "$MIRROR" > "$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log"; fail "debootstrap failed (log: $CACHE/debootstrap.log)"; }
  touch "$ROOT/.edgestats-ready"
fi
[ "$(chroot "$ROOT" uname -m)" = aarch64 ] || fail "the userland does not run as aarch64"
bind /proc /proc -t proc
bind /sys /sys --rbind
bind /dev /dev --rbind
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
host_ca=$("$HOST_PY" -c 'import ssl; print(ssl.get_default_verify_paths().cafile or "")')
host_ca=${PIP_CERT:-${SSL_CERT_FILE:-${host_ca:-/etc/ssl/certs/ca-certificates.crt}}}
cp "$host_ca" "$ROOT/etc/ssl/certs/host-ca.crt"

# 2. On the host: the wheel, and the model pack a device would be given.
rm -rf "$WORK/dist" "$WORK/arm64.duckdb"*; mkdir -p "$WORK/dist"
say "building the wheel and a model pack for cnn9 (ONNX Runtime, LiteRT) on the host"
"$HOST_PY" -m pip wheel --no-deps --no-build-isolation -q -w "$WORK/dist" "$REPO" >/dev/null
"$REPO/.venv/bin/edgestats" prepare --cache-dir "$WORK/pack" -f onnxruntime -f tflite -m cnn9 >/dev/null
cp "$REPO/sample_data/pcamp_inference.csv" "$WORK/"
wheel=$(cd "$WORK/dist" && ls edgestats-*.whl)

# 3. In the userland: a venv with the wheel's [onnx,tflite] extras from the package index (aarch64
# wheels). Reused while pyproject's dependencies stay the same; the wheel itself always reinstalled.
deps_key=$(sha256sum "$REPO/pyproject.toml" "$REPO/constraints.txt" | sha256sum | cut -c1-16)
if [ "$(cat "$ROOT/opt/es/.deps" 2>/dev/null)" != "$deps_key" ]; then
  say "installing edgestats[onnx,tflite] and its dependencies into an arm64 venv (slow under qemu)"
  rm -rf "$ROOT/opt/es"
  cp "$REPO/constraints.txt" "$WORK/"
  in_arm64 python3 -m venv /opt/es
  in_arm64 /opt/es/bin/pip install -q --upgrade pip
  in_arm64 /opt/es/bin/pip install -q -c /work/constraints.txt "/work/dist/$wheel[onnx,tflite]" \
    || fail "pip could not install edgestats[onnx,tflite] on aarch64"
  echo "$deps_key" > "$ROOT/opt/es/.deps"
fi
in_arm64 /opt/es/bin/pip install -q --no-deps --force-reinstall "/work/dist/$wheel"

say "doctor"
in_arm64 edgestats doctor
say "collect: cnn9 under onnxruntime and tflite, 3 runs each, from the pack"
in_arm64 edgestats collect -f onnxruntime -f tflite -m cnn9 --repeat 3 --iterations 20 --warmup 2 --device-name arm64-qemu \
  --cache-dir /work/pack --db /work/arm64.duckdb
say "import a published table"
in_arm64 edgestats import /work/arm64.duckdb /work/pcamp_inference.csv --kind inference

# 4. Back on the host: the arm64 DB merged with one written here, and analysed.
say "merging and analysing on the host"
out=$REPO/.arm64-out
rm -rf "$out"; mkdir -p "$out"
cp "$WORK/arm64.duckdb" "$out/"
"$REPO/.venv/bin/edgestats" import "$out/host.duckdb" "$REPO/sample_data/dlaas_tf_mnist_cpu.csv" --kind training >/dev/null
"$REPO/.venv/bin/edgestats" merge "$out/merged.duckdb" "$out/arm64.duckdb" "$out/host.duckdb"
"$HOST_PY" "$REPO/.ci/arm64_check.py" "$out/merged.duckdb"
"$REPO/.venv/bin/edgestats" analyze "$out/merged.duckdb" --only summary --out "$out/report" >/dev/null
test -s "$out/report/index.html" || fail "analyze wrote no report of the arm64 DB"
say "passed"
