#!/usr/bin/env bash
# Makes docker/secrets/ for the compose stack (docs/DEPLOY.md): a random database password and
# hidden-seed secret and Grafana admin password, and empty files for the GitHub OAuth secret, App private key and webhook
# secret (paste those from GitHub; the App's two may stay empty: the App is optional). A file that
# already holds something is never overwritten. The folder is root's only (0700); the files are
# 0444 because Docker mounts them into the containers as they are, and each service reads them as
# its own user (postgres uid 999, the API uid 10001, Grafana uid 472).
set -euo pipefail
dir="${1:-$(cd "$(dirname "$0")/.." && pwd)/docker/secrets}"
mkdir -p "$dir"
chmod 0700 "$dir"
put() { # NAME VALUE
  local file="$dir/$1"
  if [ -s "$file" ]; then echo "kept    $file"; return; fi
  printf '%s' "$2" >"$file"
  chmod 0444 "$file"
  if [ -n "$2" ]; then echo "made    $file"; else echo "empty   $file (fill it in)"; fi
}
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
put postgres_password "$(hex 24)"
put hidden_seed_secret "$(hex 32)"
put github_client_secret ""
put github_app_private_key.pem ""
put github_webhook_secret ""
put grafana_admin_password "$(hex 16)"
