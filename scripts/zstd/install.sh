#!/usr/bin/env bash
# The `zstd` and `gzip` command-line tools (Debian's packages), with which the tests of compressed
# CSV and NDJSON loads compress their files: what the tools people use write, not only what
# node:zlib writes. Idempotent: exits at once when both are on PATH.
set -euo pipefail

log() { printf '[zstd] %s\n' "$*" >&2; }

if command -v zstd >/dev/null 2>&1 && command -v gzip >/dev/null 2>&1; then
  log "zstd and gzip present; nothing to do."
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get install zstd gzip"
if ! apt-get -y -q install --no-install-recommends zstd gzip >/dev/null 2>&1; then
  apt-get -q update >/dev/null
  apt-get -y -q install --no-install-recommends zstd gzip >/dev/null
fi
zstd --version >&2
