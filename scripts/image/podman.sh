#!/usr/bin/env bash
# podman with the settings this machine (and CI) needs to build and run OCI images without a Docker
# daemon or an image registry: a storage root of its own under the image cache (outside the
# repository), runc with cgroupfs (no systemd), and a containers.conf whose
# `[containers] default_ulimits = []` (the default asks for more open files than a nested container
# may raise its limit to).
#
# The storage driver is the fastest one this machine allows, found by trying it: the kernel's
# overlay (root, a kernel that mounts overlay here), else overlay through fuse-overlayfs (/dev/fuse
# and /usr/bin/fuse-overlayfs), else vfs (works anywhere, but copies every layer in full: a first
# build takes ~40 minutes instead of a few). Each driver has its own storage directory
# (storage-<driver>), so a change of driver never reads another's layers.
#
#   scripts/image/podman.sh images
#   DAS_IMAGE_CACHE     image cache root (default $HOME/.cache/data-access-image)
#   DAS_IMAGE_STORAGE   overlay | fuse-overlayfs | vfs (default: the first of these that works)
set -euo pipefail
CACHE="${DAS_IMAGE_CACHE:-${HOME:-/root}/.cache/data-access-image}"
mkdir -p "$CACHE"
CONF="$CACHE/containers.conf"
if [[ ! -f "$CONF" ]]; then
  printf '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' >"$CONF.tmp"
  mv "$CONF.tmp" "$CONF"
fi
export CONTAINERS_CONF="$CONF"

# Whether the kernel mounts an overlay on the cache's filesystem (the storage lives there).
native_overlay() {
  [[ "$(id -u)" == 0 ]] || return 1
  local probe
  probe="$(mktemp -d "$CACHE/overlay-probe.XXXXXX")" || return 1
  mkdir -p "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
  local ok=1
  if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" "$probe/merged" 2>/dev/null; then
    umount "$probe/merged" && ok=0
  fi
  rm -rf "$probe"
  return "$ok"
}

DRIVER="${DAS_IMAGE_STORAGE:-}"
if [[ -z "$DRIVER" ]]; then
  if native_overlay; then DRIVER=overlay
  elif [[ -c /dev/fuse && -x /usr/bin/fuse-overlayfs ]]; then DRIVER=fuse-overlayfs
  else DRIVER=vfs
  fi
fi
case "$DRIVER" in
  overlay) STORAGE=(--storage-driver overlay) ;;
  fuse-overlayfs) STORAGE=(--storage-driver overlay --storage-opt overlay.mount_program=/usr/bin/fuse-overlayfs) ;;
  vfs) STORAGE=(--storage-driver vfs) ;;
  *) printf '[image] DAS_IMAGE_STORAGE must be overlay, fuse-overlayfs or vfs (not %s)\n' "$DRIVER" >&2; exit 2 ;;
esac
exec podman --root "$CACHE/storage-$DRIVER" --runroot "$CACHE/run-$DRIVER" "${STORAGE[@]}" \
  --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
