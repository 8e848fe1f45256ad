#!/bin/sh
# Installs the `dryft` CLI into bin/ beside this script, from the Dryft hub you point it at:
#
#   ./install-dryft.sh                         # $DRYFT_API_URL, else the hub dryft.json names, else http://localhost:3000
#   ./install-dryft.sh https://dryft.example.org
#
# It downloads the CLI (one JavaScript file) and its sha256 from the hub
# (GET /api/cli/dryft.cjs and /api/cli/dryft.cjs.sha256), checks the file against the checksum,
# and only then puts bin/dryft.cjs and the launcher bin/dryft in place. A download whose checksum
# differs is deleted and nothing is installed. Node.js 20 or newer is the only requirement.
# Environment: DRYFT_API_URL (the hub), DRYFT_INSTALL_DIR (default: bin/ beside this script).
set -eu

fail() {
  printf 'install-dryft: %s\n' "$*" >&2
  exit 1
}

# Node.js >= 20: the CLI is a Node program.
if ! command -v node >/dev/null 2>&1; then
  fail "Node.js is not installed (or not on PATH). Install Node.js 20 or newer from https://nodejs.org, then run ./install-dryft.sh again. Without it you can still upload archives in the browser."
fi
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
case $node_major in
  '' | *[!0-9]*) node_major=0 ;;
esac
if [ "$node_major" -lt 20 ]; then
  fail "the dryft CLI needs Node.js 20 or newer; this node is $(node --version 2>/dev/null || echo unknown). Upgrade Node.js, then run ./install-dryft.sh again."
fi

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
# The hub: the argument, else $DRYFT_API_URL, else the hub this copy came from (the "hub" that a
# template downloaded from a hub carries in dryft.json), else http://localhost:3000.
recorded=$(node -e 'try { const h = require(process.argv[1]).hub; if (typeof h === "string") process.stdout.write(h); } catch {}' "$here/dryft.json" 2>/dev/null || true)
hub=${1:-${DRYFT_API_URL:-${recorded:-http://localhost:3000}}}
hub=$(printf '%s' "$hub" | sed 's:/*$::')
case $hub in
  http://* | https://*) ;;
  *) fail "the hub must be an http(s) URL such as https://dryft.example.org (got \"$hub\")." ;;
esac
dest=${DRYFT_INSTALL_DIR:-$here/bin}
mkdir -p "$dest"
tmp="$dest/.dryft-download.$$"
trap 'rm -f "$tmp" "$tmp.sha256"' EXIT INT TERM

# curl, else wget, else Node itself (fetch is built into Node 20).
download() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    node -e '
      const [url, out] = process.argv.slice(1);
      fetch(url).then(async (r) => {
        if (!r.ok) { console.error(`HTTP ${r.status}`); process.exit(1); }
        require("fs").writeFileSync(out, Buffer.from(await r.arrayBuffer()));
      }).catch((e) => { console.error(e.message); process.exit(1); });' "$1" "$2"
  fi
}

printf 'Downloading the dryft CLI from %s ...\n' "$hub"
download "$hub/api/cli/dryft.cjs.sha256" "$tmp.sha256" ||
  fail "could not download $hub/api/cli/dryft.cjs.sha256. Check the address (is the hub up? try $hub/api/health) and your network."
download "$hub/api/cli/dryft.cjs" "$tmp" ||
  fail "could not download $hub/api/cli/dryft.cjs. Check the address (is the hub up? try $hub/api/health) and your network."

expected=$(sed -n '1s/^\([0-9a-fA-F]\{64\}\).*/\1/p' "$tmp.sha256" | tr 'A-F' 'a-f')
[ -n "$expected" ] || fail "the hub's checksum file is not a sha256 line; nothing was installed."
# sha256 with the tools at hand; Node (required anyway) as the fallback.
if command -v sha256sum >/dev/null 2>&1; then
  actual=$(sha256sum "$tmp" | cut -d' ' -f1)
elif command -v shasum >/dev/null 2>&1; then
  actual=$(shasum -a 256 "$tmp" | cut -d' ' -f1)
else
  actual=$(node -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync(process.argv[1])).digest("hex"))' "$tmp")
fi
if [ "$actual" != "$expected" ]; then
  fail "checksum mismatch: the downloaded CLI has sha256 $actual but the hub published $expected. The download was corrupted or altered on the way; it was deleted and nothing was installed. Try again, and tell the event organizer if it persists."
fi

mv -f "$tmp" "$dest/dryft.cjs"
chmod 0644 "$dest/dryft.cjs"
# The launcher: runs the bundle with node; the hub it came from is the default DRYFT_API_URL.
cat >"$dest/dryft.tmp.$$" <<LAUNCHER
#!/bin/sh
# Installed by install-dryft.sh from $hub (sha256 $expected). Reinstall with ./install-dryft.sh.
DRYFT_API_URL="\${DRYFT_API_URL:-$hub}"
export DRYFT_API_URL
exec node "\$(dirname -- "\$0")/dryft.cjs" "\$@"
LAUNCHER
chmod 0755 "$dest/dryft.tmp.$$"
mv -f "$dest/dryft.tmp.$$" "$dest/dryft"
# The hub, recorded for the research loop (agent/research.py) so that it talks to the same hub.
printf '%s\n' "$hub" >"$dest/dryft-hub.txt.$$"
mv -f "$dest/dryft-hub.txt.$$" "$dest/dryft-hub.txt"

version=$("$dest/dryft" --version 2>/dev/null) || fail "bin/dryft was installed but does not run with $(command -v node); check your Node.js installation."
printf 'Installed dryft %s in %s (sha256 %s verified).\n' "$version" "$dest" "$expected"
printf 'Next: export DRYFT_TOKEN="dryft_pat_..." (a team API token; never commit it), then ./bin/dryft doctor\n'
