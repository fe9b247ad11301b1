#!/usr/bin/env bash
# Makes a Debian 12 base image from the Debian archive, for hosts that cannot
# pull debian:12 (an air-gapped site, a registry that is not reachable):
#
#   deploy/docker/base-image.sh [NAME]        default NAME: omniforge-base:bookworm
#
# debootstrap --variant=minbase bookworm into a temporary directory, then
# `docker import`. The mirror is the one apt on this host uses (the first
# http(s) URI of /etc/apt/sources.list.d/debian.sources or sources.list),
# or OMNIFORGE_DEBIAN_MIRROR; security updates from
# OMNIFORGE_DEBIAN_SECURITY_MIRROR (default http://deb.debian.org/debian-security;
# an air-gapped site points it at its own copy, or images it builds miss
# them). Needs root (debootstrap). Keeps an image of that name that exists unless
# OMNIFORGE_BASE_REBUILD=1. The images then build with
#
#   docker build --network host --build-arg BASE_IMAGE=NAME ...
#
# (scripts/image.sh and the compose test pass it when debian:12 is absent).
set -euo pipefail

name="${1:-omniforge-base:bookworm}"
docker="${DOCKER:-docker}"

if [[ "${OMNIFORGE_BASE_REBUILD:-0}" != 1 ]] && "$docker" image inspect "$name" >/dev/null 2>&1; then
  echo "base-image: $name exists"
  exit 0
fi

mirror="${OMNIFORGE_DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
  mirror=$(grep -hoE 'https?://[^ ]+' /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null |
    grep -v -- '-security' | grep -v snapshot | head -n 1 || true)
fi
mirror="${mirror:-http://deb.debian.org/debian}"

[[ $(id -u) == 0 ]] || { echo "base-image: debootstrap needs root" >&2; exit 1; }
security="${OMNIFORGE_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
command -v debootstrap >/dev/null 2>&1 || {
  echo "base-image: debootstrap is not installed (apt-get install debootstrap)" >&2
  exit 1
}

root=$(mktemp -d /tmp/omniforge-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "base-image: debootstrap bookworm from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -n 20 "$root.log" >&2
  rm -f "$root.log"
  exit 1
}
rm -f "$root.log"
# What debian:12 has: apt sources of the same mirror (with updates and
# security), no package caches.
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | "$docker" import - "$name" >/dev/null
echo "base-image: made $name ($("$docker" image inspect -f '{{.Size}}' "$name" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
