#!/usr/bin/env bash
# Debian's chromium for the browser tests (Swagger UI and GraphiQL pages, driven by playwright-core
# with executablePath). Never a downloaded browser build: only the distribution's package.
# Idempotent: exits at once when /usr/bin/chromium is there. Needs root (apt-get) the first time;
# CHROMIUM_SKIP_INSTALL=1 skips it (the browser tests then fail with a message naming this script).
set -euo pipefail

log() { printf '[chromium] %s\n' "$*" >&2; }

if [[ -x /usr/bin/chromium ]]; then
  log "$(/usr/bin/chromium --version 2>/dev/null || echo chromium) present; nothing to do."
  exit 0
fi
if [[ "${CHROMIUM_SKIP_INSTALL:-}" == 1 ]]; then
  log "not installed and CHROMIUM_SKIP_INSTALL=1: skipping"
  exit 0
fi
SUDO=""
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { log "run as root or install Debian's chromium: apt-get install -y chromium"; exit 1; }
  SUDO="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
log "apt-get install chromium"
$SUDO apt-get -q update >/dev/null
$SUDO apt-get -y -q install --no-install-recommends chromium >/dev/null
[[ -x /usr/bin/chromium ]] || { log "apt-get finished but /usr/bin/chromium is missing"; exit 1; }
log "$(/usr/bin/chromium --version 2>/dev/null) installed"
