#!/usr/bin/env bash
# A backup of a Dryft hub: the database (pg_dump, custom format) and the artifact store (tar), in
# one new folder PARENT/dryft-<UTC time>/ with SHA256SUMS. docs/DEPLOY.md "Backups".
#
#   DATABASE_URL=postgres://dryft@db/dryft DATABASE_PASSWORD_FILE=… ARTIFACT_DIR=/artifacts scripts/backup.sh PARENT
#
# The database first, then the artifacts: the hub stores a submission's archive before its row and
# never deletes one, so every submission in the dump has its archive in the tar (the tar may hold a
# few newer ones: harmless). pg_dump reads one consistent snapshot while the hub keeps running.
# pg_dump must be the server's major version or newer (PG_BIN=/usr/lib/postgresql/16/bin picks one);
# the compose stack's `backup` service runs this in the postgres image, which has the right one.
set -euo pipefail
parent="${1:?usage: backup.sh PARENT_FOLDER (the backup goes in PARENT_FOLDER/dryft-<UTC time>/)}"
: "${DATABASE_URL:?set DATABASE_URL (the hub database, as the API has it)}"
: "${ARTIFACT_DIR:?set ARTIFACT_DIR (the hub artifact store, as the API has it)}"
bin="${PG_BIN:+$PG_BIN/}"
if [ -n "${DATABASE_PASSWORD_FILE:-}" ]; then
  PGPASSWORD="$(cat "$DATABASE_PASSWORD_FILE")" || { echo "backup: cannot read DATABASE_PASSWORD_FILE $DATABASE_PASSWORD_FILE" >&2; exit 1; }
  export PGPASSWORD
fi
if [ ! -d "$ARTIFACT_DIR" ]; then echo "backup: ARTIFACT_DIR $ARTIFACT_DIR is not a folder" >&2; exit 1; fi
name="dryft-$(date -u +%Y%m%dT%H%M%SZ)"
work="$parent/.$name.partial"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
"${bin}pg_dump" --format=custom --no-owner --no-privileges --file "$work/database.dump" --dbname "$DATABASE_URL"
# Half-written uploads (*.tmp, renamed into place when complete) are not artifacts yet.
tar -C "$ARTIFACT_DIR" --numeric-owner --exclude='*.tmp' -cf "$work/artifacts.tar" .
{
  echo "created: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "pg_dump: $("${bin}pg_dump" --version)"
  echo "artifacts: $(tar -tf "$work/artifacts.tar" | grep -vc '/$' || true) files"
} >"$work/MANIFEST"
(cd "$work" && sha256sum database.dump artifacts.tar MANIFEST >SHA256SUMS)
mv "$work" "$parent/$name"
trap - EXIT
echo "$parent/$name"
