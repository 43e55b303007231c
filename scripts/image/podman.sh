#!/usr/bin/env bash
# podman with the settings this machine (and CI) needs to build and run OCI images without a Docker
# daemon or an image registry: a storage root of its own under the image cache (outside the
# repository), the vfs storage driver (works on any filesystem, also inside a container), runc with
# cgroupfs (no systemd), and a containers.conf whose `[containers] default_ulimits = []` (the
# default asks for more open files than a nested container may raise its limit to).
#
#   scripts/image/podman.sh images
#   DAS_IMAGE_CACHE   image cache root (default $HOME/.cache/data-access-image)
set -euo pipefail
CACHE="${DAS_IMAGE_CACHE:-${HOME:-/root}/.cache/data-access-image}"
mkdir -p "$CACHE"
CONF="$CACHE/containers.conf"
if [[ ! -f "$CONF" ]]; then
  printf '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' >"$CONF.tmp"
  mv "$CONF.tmp" "$CONF"
fi
export CONTAINERS_CONF="$CONF"
exec podman --root "$CACHE/storage" --runroot "$CACHE/run" --storage-driver vfs \
  --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
