#!/usr/bin/env bash
# Puts a backup made by scripts/backup.sh back: the database into an EMPTY database, the artifacts
# into ARTIFACT_DIR. docs/DEPLOY.md "Backups" (stop the API replicas first, make a fresh database).
#
#   DATABASE_URL=postgres://dryft@db/dryft DATABASE_PASSWORD_FILE=… ARTIFACT_DIR=/artifacts scripts/restore.sh BACKUP_FOLDER
#
# The checksums are checked before anything is written; the restore is one transaction, so a
# failed one leaves the database empty. Start the API on it afterwards: it finds every run, log,
# submission, team, token and session as they were at the backup (pending migrations, if the
# backup is older than the code, run at its start under the migration lock).
set -euo pipefail
from="${1:?usage: restore.sh BACKUP_FOLDER (a dryft-<UTC time> folder backup.sh made)}"
: "${DATABASE_URL:?set DATABASE_URL (the empty database to restore into)}"
: "${ARTIFACT_DIR:?set ARTIFACT_DIR (where the hub keeps its artifacts)}"
bin="${PG_BIN:+$PG_BIN/}"
if [ -n "${DATABASE_PASSWORD_FILE:-}" ]; then
  PGPASSWORD="$(cat "$DATABASE_PASSWORD_FILE")" || { echo "restore: cannot read DATABASE_PASSWORD_FILE $DATABASE_PASSWORD_FILE" >&2; exit 1; }
  export PGPASSWORD
fi
for f in database.dump artifacts.tar SHA256SUMS; do
  [ -f "$from/$f" ] || { echo "restore: $from/$f is missing: is $from a folder backup.sh made?" >&2; exit 1; }
done
(cd "$from" && sha256sum --quiet -c SHA256SUMS) || { echo "restore: $from fails its checksums (SHA256SUMS): the backup is damaged" >&2; exit 1; }
tables="$("${bin}psql" --dbname "$DATABASE_URL" -Atc "SELECT count(*) FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")"
if [ "$tables" != "0" ]; then
  echo "restore: the database in DATABASE_URL is not empty ($tables tables): restore into a fresh one (dropdb, createdb) so nothing of the old one mixes in" >&2
  exit 1
fi
"${bin}pg_restore" --no-owner --no-privileges --exit-on-error --single-transaction --dbname "$DATABASE_URL" "$from/database.dump"
mkdir -p "$ARTIFACT_DIR"
# As root (the compose backup service), owners are kept by number (the API's uid 10001).
tar -C "$ARTIFACT_DIR" --numeric-owner -xpf "$from/artifacts.tar"
echo "restored $from into the database and $ARTIFACT_DIR"
