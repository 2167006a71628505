#!/usr/bin/env bash
# Builds the gtpqos image from deploy/Containerfile. The binaries are made
# here, not in a build container, so the build pulls no base image from any
# registry: a static gtpqos (CGO_ENABLED=0) and busybox-static's busybox
# (for the health check's wget) are staged into a context directory, and
# the Containerfile copies them onto scratch.
#
# Usage: scripts/image.sh TAG            stage bin/image/ and build TAG with the
#                                        first of podman, buildah or a docker
#                                        engine that answers; with none, one
#                                        line and exit 0
#        scripts/image.sh --context DIR  only stage the context into DIR
# Environment: GO (default go), BUSYBOX (default /bin/busybox, from Debian's
# busybox-static: make deps installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
BUSYBOX=${BUSYBOX:-/bin/busybox}

# stage DIR: the static gtpqos and busybox, checked static.
stage() {
  local dir=$1
  mkdir -p "$dir"
  CGO_ENABLED=0 "$GO" build -trimpath -ldflags '-s -w' -o "$dir/gtpqos" ./cmd/gtpqos
  if [ ! -x "$BUSYBOX" ]; then
    echo "image: no $BUSYBOX: install Debian's busybox-static (make deps) or set BUSYBOX to a static busybox" >&2
    exit 1
  fi
  cp "$BUSYBOX" "$dir/busybox"
  chmod 0755 "$dir/gtpqos" "$dir/busybox"
  # The image has no libc and no loader: refuse a dynamically linked binary.
  if command -v ldd >/dev/null 2>&1; then
    local f
    for f in "$dir/gtpqos" "$dir/busybox"; do
      if ldd "$f" >/dev/null 2>&1; then
        echo "image: $f is dynamically linked; the image is scratch and has no loader" >&2
        exit 1
      fi
    done
  fi
}

if [ "${1:-}" = --context ]; then
  stage "${2:?usage: scripts/image.sh --context DIR}"
  exit 0
fi
tag=${1:?usage: scripts/image.sh TAG | --context DIR}

if command -v podman >/dev/null 2>&1; then
  builder=(podman build)
  size=(podman images --noheading --format '{{.Size}}' "$tag")
elif command -v buildah >/dev/null 2>&1; then
  builder=(buildah bud)
  size=(buildah images --noheading --format '{{.Size}}' "$tag")
elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  builder=(docker build)
  size=(docker images --format '{{.Size}}' "$tag")
else
  echo "make image: skipped: no podman or buildah, and no docker engine answering (docker info failed)"
  exit 0
fi

ctx=bin/image
rm -rf "$ctx"
stage "$ctx"
"${builder[@]}" -f deploy/Containerfile -t "$tag" "$ctx"
echo "image: built $tag with ${builder[0]}; size $("${size[@]}")"
