#!/usr/bin/env bash
# Builds the repository's Dockerfile into an OCI image with podman (buildah underneath), without a
# Docker daemon or an image registry: the base is assembled locally by base.sh (Debian minbase
# + Node 24 from the npm registry) and passed as the Dockerfile's NODE_IMAGE build argument. The
# Dockerfile itself is unchanged: `docker build .` uses the public node:24-bookworm-slim instead.
#
# Tags the result localhost/data-access:test and, so that the Helm chart's default image
# (values.yaml image.repository, tag = Chart.yaml appVersion) names it too,
# ghcr.io/data-access-service/data-access:<appVersion>. Layers are cached in the podman storage under
# $DAS_IMAGE_CACHE (outside the repository): a rebuild with unchanged package*.json reuses `npm ci`.
# The build's `npm ci` reads this machine's npm cache (mounted at /root/.npm, offline first), so a
# first build downloads nothing the checkout's own `npm ci` already fetched; the image is the same.
# Installs Debian's buildah, podman, runc, fuse-overlayfs and debootstrap with apt-get when missing.
#
#   scripts/image/build.sh            prints the image name on stdout
#   DAS_IMAGE_CACHE                   cache root (default $HOME/.cache/data-access-image)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
IMAGE=localhost/data-access:test
log() { printf '[image] %s\n' "$*" >&2; }

missing=()
TOOLS=(buildah podman runc fuse-overlayfs debootstrap)
for tool in "${TOOLS[@]}"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
  [[ "$(id -u)" == 0 ]] || { log "missing ${missing[*]}; install them (apt-get install ${TOOLS[*]})"; exit 1; }
  log "apt-get install ${TOOLS[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${TOOLS[@]}" >&2 \
    || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${TOOLS[@]}" >&2; }
fi

BASE="$(bash "$HERE/base.sh")"
APP_VERSION="$(awk -F'"' '/^appVersion:/ { print $2 }' "$ROOT/charts/data-access-operator/Chart.yaml")"
REPOSITORY="$(awk '/^image:/ { inside = 1; next } inside && /^[^ ]/ { inside = 0 } inside && $1 == "repository:" { print $2 }' "$ROOT/charts/data-access-operator/values.yaml")"
[[ -n "$APP_VERSION" && -n "$REPOSITORY" ]] || { log "could not read the chart's image repository and appVersion"; exit 1; }

CACHE="${DAS_IMAGE_CACHE:-${HOME:-/root}/.cache/data-access-image}"
NPM_CACHE="$(npm config get cache)"
mkdir -p "$NPM_CACHE"
printf 'prefer-offline=true\n' >"$CACHE/npmrc"

log "podman build $IMAGE from $BASE"
# --network host: `npm ci` reaches the npm registry the way this machine does (no bridge needed).
# The npm cache and an npmrc saying prefer-offline are mounted for the RUN steps only (not in a layer).
"$HERE/podman.sh" build --network host --layers \
  --volume "$NPM_CACHE:/root/.npm" --volume "$CACHE/npmrc:/usr/local/etc/npmrc:ro" \
  --build-arg "NODE_IMAGE=$BASE" \
  -t "$IMAGE" -t "$REPOSITORY:$APP_VERSION" \
  -f "$ROOT/Dockerfile" "$ROOT" >&2
echo "$IMAGE"
