#!/usr/bin/env bash
# Puts `promtool` (Prometheus's checker of metric names and rule files) into a cache outside the
# repo, taken from Debian's `prometheus` package. The package is not installed: its .deb is fetched
# with `apt-get download` and only usr/bin/promtool is kept, so no Prometheus server is set up or
# started (it would listen on :9090, the operator's metrics port). Idempotent: exits at once when
# the cached promtool is there and runs.
#
#   PROMTOOL_CACHE   cache root (default $HOME/.cache/data-access-promtool); the tests look for
#                    $PROMTOOL_CACHE/bin/promtool, else `promtool` on PATH.
set -euo pipefail

CACHE="${PROMTOOL_CACHE:-${HOME:-/root}/.cache/data-access-promtool}"
BIN="$CACHE/bin"

log() { printf '[promtool] %s\n' "$*" >&2; }

if [[ -x "$BIN/promtool" ]] && "$BIN/promtool" --version >/dev/null 2>&1; then
  log "promtool present in $BIN; nothing to do."
  exit 0
fi

mkdir -p "$BIN"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/promtool.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

log "apt-get download prometheus"
if ! (cd "$TMP" && apt-get download prometheus >/dev/null 2>&1); then
  apt-get -q update >/dev/null
  (cd "$TMP" && apt-get download prometheus >/dev/null)
fi
DEB="$(ls "$TMP"/prometheus_*.deb 2>/dev/null | head -n1)"
[[ -f "$DEB" ]] || { log "apt-get download produced no prometheus .deb"; exit 1; }
dpkg-deb -x "$DEB" "$TMP/x"
[[ -x "$TMP/x/usr/bin/promtool" ]] || { log "the package has no usr/bin/promtool"; exit 1; }
mv "$TMP/x/usr/bin/promtool" "$BIN/promtool.new"
mv "$BIN/promtool.new" "$BIN/promtool"
log "$("$BIN/promtool" --version 2>&1 | head -n1)"
log "done: $BIN/promtool"
