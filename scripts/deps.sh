#!/usr/bin/env bash
# Installs, from Debian's packages, what gtpqos's tests, demo and VM harness
# need. Installs only what is missing; safe to run again. Needs root.
set -euo pipefail
pkgs=(iproute2 iputils-ping qemu-system-x86 busybox-static iperf3 cpio kmod xz-utils)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "deps: missing Debian packages ${missing[*]}; run as root (or: sudo make deps)" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
