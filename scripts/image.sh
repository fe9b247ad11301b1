#!/usr/bin/env bash
# Container images from what `make build` made (`make image`), on a Debian 12
# host, without compiling again:
#
#   scripts/image.sh [omniforge|postgres]...     default: omniforge
#
#   omniforge  the one image of every service (deploy/docker/Dockerfile,
#              BINARIES=prebuilt): the stripped binaries of $BUILD_DIR/bin and
#              the Debian packages their shared libraries come from, tagged
#              omniforge:<version> (what the binaries' --version says) and
#              omniforge:latest
#   postgres   omniforge-postgres:15, PostgreSQL 15 from Debian's packages
#              (deploy/docker/postgres), for where postgres:15 cannot be pulled
#
# The base images: $OMNIFORGE_BASE_IMAGE when set, else debian:12 and
# debian:12-slim when the engine has them, else a Debian 12 base made from
# the Debian archive (deploy/docker/base-image.sh, omniforge-base:bookworm).
# Builds use --network host (apt inside the build reaches the archive).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-build}"
[[ "$build_dir" = /* ]] || build_dir="$root/$build_dir"
bash "$root/scripts/docker.sh" ensure
docker=$(bash "$root/scripts/docker.sh" client)
export DOCKER="$docker" DOCKER_BUILDKIT=1

base="${OMNIFORGE_BASE_IMAGE:-}"
if [[ -z "$base" ]] && ! "$docker" image inspect debian:12 debian:12-slim >/dev/null 2>&1; then
  base=omniforge-base:bookworm
  bash "$root/deploy/docker/base-image.sh" "$base"
fi
base_args=()
[[ -z "$base" ]] || base_args=(--build-arg "BASE_IMAGE=$base" --build-arg "RUNTIME_IMAGE=$base")

binaries=(omniforge-conversation omniforge-intent omniforge-executor omniforge-orchestrator omniforge
          omniforge-sandbox-mcp)

image_omniforge() {
  # The Dockerfile takes build/image/ of the repository (its build context)
  # whichever build directory the binaries come from.
  local stage="$root/build/image" b version tag
  for b in "${binaries[@]}"; do
    [[ -x "$build_dir/bin/$b" ]] || { echo "image: $build_dir/bin/$b is missing (make build)" >&2; return 1; }
  done
  rm -rf "$stage"
  mkdir -p "$stage/bin"
  for b in "${binaries[@]}"; do
    objcopy --strip-debug "$build_dir/bin/$b" "$stage/bin/$b"
  done
  bash "$root/deploy/docker/runtime-packages.sh" "$stage"/bin/* > "$stage/runtime-packages.txt"
  version=$("$build_dir/bin/omniforge" --version | awk '{ print $2 }')
  # A tag is [A-Za-z0-9_.-]: 0.1.0+12.abc1234 becomes 0.1.0-12.abc1234.
  tag=$(tr -c 'A-Za-z0-9_.\n-' '-' <<<"$version")
  "$docker" build --network host --progress plain "${base_args[@]}" \
    --build-arg BINARIES=prebuilt --build-arg "OMNIFORGE_VERSION=$version" \
    -f "$root/deploy/docker/Dockerfile" -t "omniforge:$tag" -t omniforge:latest "$root" \
    > "$stage.log" 2>&1 || { tail -n 30 "$stage.log" >&2; return 1; }
  # The image holds the binaries just staged, not an older build's.
  local inside
  inside=$("$docker" run --rm "omniforge:$tag" omniforge --version | awk '{ print $2 }')
  [[ "$inside" == "$version" ]] || {
    echo "image: omniforge:$tag reports $inside, the binaries $version" >&2
    return 1
  }
  echo "image: omniforge:$tag (and omniforge:latest), $("$docker" image inspect -f '{{.Size}}' "omniforge:$tag" |
    awk '{ printf "%.0f MB", $1 / 1e6 }')"
}

image_postgres() {
  local args=()
  [[ -z "$base" ]] || args=(--build-arg "BASE_IMAGE=$base")
  mkdir -p "$build_dir"
  "$docker" build --network host --progress plain "${args[@]}" -t omniforge-postgres:15 \
    "$root/deploy/docker/postgres" > "$build_dir/image-postgres.log" 2>&1 ||
    { tail -n 30 "$build_dir/image-postgres.log" >&2; return 1; }
  echo "image: omniforge-postgres:15"
}

(($# > 0)) || set -- omniforge
for what in "$@"; do
  case "$what" in
    omniforge) image_omniforge ;;
    postgres) image_postgres ;;
    *) echo "usage: $0 [omniforge|postgres]..." >&2; exit 2 ;;
  esac
done
