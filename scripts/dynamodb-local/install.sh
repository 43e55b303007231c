#!/usr/bin/env bash
# Puts DynamoDB Local (the official Java emulator) into a cache outside the repo, taken from the
# npm package amplify-dynamodb-simulator (emulator/DynamoDBLocal.jar and emulator/DynamoDBLocal_lib).
# The package is never a dependency (installing it pulls ~350 MB of unrelated CLI code): its
# tarball is fetched once with `npm pack` and only the emulator is kept. Idempotent: exits at once
# when the pinned version is cached. Java itself comes from Debian (openjdk-17-jre-headless; .ci/run
# installs it when `java` is missing).
#
#   DYNAMODB_LOCAL_CACHE   cache root (default $HOME/.cache/data-access-dynamodb-local)
#   DYNAMODB_LOCAL_SPEC    npm spec to fetch (default pinned below)
set -euo pipefail

CACHE="${DYNAMODB_LOCAL_CACHE:-${HOME:-/root}/.cache/data-access-dynamodb-local}"
SPEC="${DYNAMODB_LOCAL_SPEC:-amplify-dynamodb-simulator@2.9.30}"
STAMP="$CACHE/.from"

log() { printf '[dynamodb-local] %s\n' "$*" >&2; }

if [[ -f "$CACHE/DynamoDBLocal.jar" && -d "$CACHE/DynamoDBLocal_lib" && -f "$STAMP" && "$(cat "$STAMP")" == "$SPEC" ]]; then
  log "DynamoDB Local present in $CACHE ($SPEC); nothing to do."
  exit 0
fi

mkdir -p "$CACHE"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/dynamodb-local.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

log "npm pack $SPEC"
(cd "$TMP" && npm pack --silent "$SPEC" >"$TMP/packed.txt")
TGZ="$TMP/$(tail -n1 "$TMP/packed.txt")"
[[ -f "$TGZ" ]] || { log "npm pack produced no tarball"; exit 1; }
tar -xzf "$TGZ" -C "$TMP" package/emulator/DynamoDBLocal.jar package/emulator/DynamoDBLocal_lib
[[ -f "$TMP/package/emulator/DynamoDBLocal.jar" ]] || { log "the tarball has no emulator/DynamoDBLocal.jar"; exit 1; }

# Replace the cached copy whole, so a half-written cache is never taken for a good one.
rm -rf "$CACHE/DynamoDBLocal_lib" "$CACHE/DynamoDBLocal.jar" "$STAMP"
mv "$TMP/package/emulator/DynamoDBLocal_lib" "$CACHE/DynamoDBLocal_lib"
mv "$TMP/package/emulator/DynamoDBLocal.jar" "$CACHE/DynamoDBLocal.jar"
printf '%s' "$SPEC" >"$STAMP"
if command -v java >/dev/null 2>&1; then
  log "java: $(java -version 2>&1 | head -n1)"
else
  log "java is missing: install Debian's openjdk-17-jre-headless to run DynamoDB Local"
fi
log "done: $CACHE"
