#!/usr/bin/env bash
# Build (once) the Kubernetes control-plane binaries used by the e2e test peer.
#
# Produces, in ${KUBE_PEER_CACHE:-$HOME/.cache/data-access-kube}/bin/:
#   kube-apiserver, kube-controller-manager  (built from Debian's `kubernetes` source package)
#   etcd                                      (copied from Debian's `etcd-server`)
#
# Idempotent: if the cached binaries are there it exits within seconds. If
# KUBEBUILDER_ASSETS points at a directory holding kube-apiserver and etcd
# (e.g. from setup-envtest), nothing is built.
#
# Needs root (apt-get). Non-interactive. See e2e/peers/kube/README.md.
set -euo pipefail

CACHE="${KUBE_PEER_CACHE:-${HOME:-/root}/.cache/data-access-kube}"
BIN="$CACHE/bin"
SRC="$CACHE/src"
export DEBIAN_FRONTEND=noninteractive

log() { printf '[kube-peer/build] %s\n' "$*" >&2; }

# --- KUBEBUILDER_ASSETS short-cut -------------------------------------------
if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if [[ -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
    log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS holds kube-apiserver and etcd; nothing to build."
    exit 0
  fi
  log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks kube-apiserver or etcd; building into $BIN instead."
fi

have_all() {
  [[ -x "$BIN/kube-apiserver" && -x "$BIN/kube-controller-manager" && -x "$BIN/etcd" ]]
}

if have_all; then
  log "cached binaries present in $BIN; nothing to do."
  exit 0
fi

mkdir -p "$BIN" "$CACHE"

# One build at a time (a second caller waits, then finds the cache filled).
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
  log "another build holds $CACHE/.build.lock; waiting for it..."
  flock 9
fi
if have_all; then
  log "cached binaries present in $BIN; nothing to do."
  exit 0
fi

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    log "must run as root (or with sudo) to install Debian packages"; exit 1
  fi
fi
APT_GET=($SUDO env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

# --- deb-src twin of the system's own apt source -----------------------------
# Derived at run time from the machine's own configuration; no mirror address
# is ever written into the repository.
DEB_SRC_FILE=/etc/apt/sources.list.d/kube-peer-deb-src.sources
DEB_SRC_LIST=/etc/apt/sources.list.d/kube-peer-deb-src.list
has_deb_src() {
  # an enabled deb-src entry outside our own files?
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" && "$f" != "$DEB_SRC_LIST" ]] || continue
    grep -Eq '^[[:space:]]*deb-src[[:space:]]' "$f" && return 0
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" && "$f" != "$DEB_SRC_FILE" ]] || continue
    grep -Eiq '^Types:.*deb-src' "$f" && return 0
  done
  return 1
}

need_update=0
if ! has_deb_src && [[ ! -f "$DEB_SRC_FILE" && ! -f "$DEB_SRC_LIST" ]]; then
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    log "adding deb-src twin of /etc/apt/sources.list.d/debian.sources -> $DEB_SRC_FILE"
    sed -E 's/^Types:.*/Types: deb-src/I' /etc/apt/sources.list.d/debian.sources \
      | $SUDO tee "$DEB_SRC_FILE.tmp" >/dev/null
    $SUDO mv "$DEB_SRC_FILE.tmp" "$DEB_SRC_FILE"
  elif [[ -f /etc/apt/sources.list ]] && grep -Eq '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list; then
    log "adding deb-src twin of /etc/apt/sources.list -> $DEB_SRC_LIST"
    sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list \
      | $SUDO tee "$DEB_SRC_LIST.tmp" >/dev/null
    $SUDO mv "$DEB_SRC_LIST.tmp" "$DEB_SRC_LIST"
  else
    log "cannot find the system's apt source to derive a deb-src entry from"; exit 1
  fi
  need_update=1
fi

PKGS=(golang-go rsync jq etcd-server golang-github-modern-go-reflect2-dev dpkg-dev make)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Source index present? (apt-get source needs Sources lists)
if ! ls /var/lib/apt/lists/*_Sources* >/dev/null 2>&1; then need_update=1; fi
if (( ${#missing[@]} > 0 )) || (( need_update )); then
  log "apt-get update"
  "${APT_GET[@]}" update
fi
if (( ${#missing[@]} > 0 )); then
  log "apt-get install ${missing[*]}"
  "${APT_GET[@]}" install --no-install-recommends "${missing[@]}"
fi

# --- etcd ---------------------------------------------------------------------
if [[ ! -x "$BIN/etcd" ]]; then
  ETCD="$(command -v etcd || true)"
  [[ -n "$ETCD" ]] || ETCD=/usr/bin/etcd
  [[ -x "$ETCD" ]] || { log "etcd not found after installing etcd-server"; exit 1; }
  install -m 0755 "$ETCD" "$BIN/etcd.tmp" && mv "$BIN/etcd.tmp" "$BIN/etcd"
  log "etcd -> $BIN/etcd ($("$BIN/etcd" --version 2>/dev/null | head -n1))"
fi

if [[ -x "$BIN/kube-apiserver" && -x "$BIN/kube-controller-manager" ]]; then
  log "done: $BIN"
  exit 0
fi

# --- kubernetes source ----------------------------------------------------------
REFLECT2=/usr/share/gocode/src/github.com/modern-go/reflect2
[[ -d "$REFLECT2" ]] || { log "missing $REFLECT2 (golang-github-modern-go-reflect2-dev)"; exit 1; }

mkdir -p "$SRC"
TREE=""
for d in "$SRC"/kubernetes-*/; do
  [[ -f "$d/.kube-peer-prepared" ]] && TREE="${d%/}" && break
done
if [[ -z "$TREE" ]]; then
  log "apt-get source kubernetes (into $SRC)"
  rm -rf "$SRC" && mkdir -p "$SRC"
  # apt-get source as root cannot drop privileges to _apt in an arbitrary dir; it
  # warns and downloads unsandboxed, which is fine here.
  (cd "$SRC" && apt-get -q source kubernetes)
  for d in "$SRC"/kubernetes-*/; do [[ -d "$d" ]] && TREE="${d%/}" && break; done
  [[ -n "$TREE" ]] || { log "apt-get source kubernetes produced no tree"; exit 1; }

  # The vendored reflect2 1.0.1 panics under Go >= 1.18 when the apiserver first
  # decodes a CustomResourceDefinition; swap in Debian's 1.0.2.
  VR="$TREE/vendor/github.com/modern-go/reflect2"
  [[ -d "$VR" ]] || { log "no $VR in the source tree"; exit 1; }
  find "$VR" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) -delete
  find "$REFLECT2" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) ! -name '*_test.go' \
    -exec cp -f {} "$VR/" \;
  touch "$TREE/.kube-peer-prepared"
fi
log "source tree: $TREE"

# --- build ------------------------------------------------------------------------
GOBIN_GO="$(command -v go || echo /usr/lib/go/bin/go)"
log "go: $("$GOBIN_GO" version)"
mkdir -p "$TREE/.go/src/k8s.io"
ln -sfn "$TREE" "$TREE/.go/src/k8s.io/kubernetes"
start=$(date +%s)
(
  cd "$TREE/.go/src/k8s.io/kubernetes"
  export GOPATH="$TREE/.go"
  export GOCACHE="$CACHE/go-build-cache"
  export CGO_ENABLED=0
  export GOFLAGS="-mod=vendor"
  export GO111MODULE=on
  export GOPROXY=off
  export GOTOOLCHAIN=local
  export KUBE_GIT_TREE_STATE=clean
  log "make WHAT=\"cmd/kube-apiserver cmd/kube-controller-manager\" (several minutes on 2 cores)"
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager"
)
log "build took $(( $(date +%s) - start ))s"

OUT=""
for cand in "$TREE/_output/local/bin/$("$GOBIN_GO" env GOOS)/$("$GOBIN_GO" env GOARCH)" "$TREE/_output/bin" "$TREE/_output/local/go/bin"; do
  if [[ -x "$cand/kube-apiserver" ]]; then OUT="$cand"; break; fi
done
[[ -n "$OUT" ]] || { log "built binaries not found under $TREE/_output"; exit 1; }
for b in kube-apiserver kube-controller-manager; do
  install -m 0755 "$OUT/$b" "$BIN/$b.tmp" && mv "$BIN/$b.tmp" "$BIN/$b"
done
# The source tree and its build outputs take ~2 GB; keep them only when asked.
if [[ -z "${KUBE_PEER_KEEP_SRC:-}" ]]; then
  log "removing build tree $SRC (set KUBE_PEER_KEEP_SRC=1 to keep it)"
  rm -rf "$SRC"
fi
log "done: $BIN ($("$BIN/kube-apiserver" --version 2>/dev/null))"
