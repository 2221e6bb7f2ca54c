#!/usr/bin/env bash
# Build a base image for the Dockerfile from Debian's packages, for machines that can reach
# Debian's archive but no container registry: debootstrap a minimal bookworm with Python 3.11
# and its venv module, then `podman import` it. Prints the image's name, which the build takes
# as its base:
#
#   base=$(deploy/image/build-base.sh)
#   podman build --build-arg BASE_IMAGE="$base" -t driftgate .
#
# The image is named after this script's hash: a second run finds it and builds nothing
# (`podman rmi` it to refresh the packages). The debootstrapped tree is also kept as a tarball
# under $DRIFTGATE_BASE_CACHE (default /var/tmp/driftgate-base), so an emptied image store
# only re-imports it. Needs root, debootstrap and podman.
#
# The mirror is $DEBIAN_MIRROR, else the first Debian archive in /etc/apt/sources.list*,
# else deb.debian.org.
set -euo pipefail

SUITE=bookworm
PACKAGES=python3,python3-venv,ca-certificates

key=$(sha256sum "$0" | cut -c1-12)
image="localhost/driftgate-base:$SUITE-$key"
cache_dir="${DRIFTGATE_BASE_CACHE:-/var/tmp/driftgate-base}"
tarball="$cache_dir/$SUITE-$key.tar"

say() { echo "build-base: $*" >&2; }

if podman image exists "$image"; then
  say "$image exists"
  echo "$image"
  exit 0
fi

mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  local found
  # deb822 files (URIs: ...) and one-line ones (deb URI SUITE ...): the archive, not security.
  found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
            /etc/apt/sources.list.d/*.list 2>/dev/null \
          | awk '/^URIs:/ { print $2 } /^deb / { print $2 }' \
          | grep -E '/debian/?$' | head -n 1 || true)
  echo "${found:-http://deb.debian.org/debian}"
}

if [ ! -s "$tarball" ]; then
  root=$(mktemp -d /var/tmp/driftgate-base-root.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  from=$(mirror)
  say "debootstrap $SUITE ($PACKAGES) from $from: a few minutes, once"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$from" >&2
  # What a container does not need: the downloaded packages, the package lists, the logs.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/var/log/* "$root"/tmp/*
  mkdir -p "$cache_dir"
  tar --numeric-owner -C "$root" -cf "$tarball.partial" .
  mv "$tarball.partial" "$tarball"
fi

say "importing $tarball as $image"
podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  "$tarball" "$image" >&2
echo "$image"
