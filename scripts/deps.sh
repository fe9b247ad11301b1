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
  libfasttext-dev
  curl ca-certificates
)

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

# The official client SDKs that fidelity tests run against the fake LLM
# provider (tests/node), when Node.js is installed; those tests skip without
# node. Placed before the apt step, which exits early when nothing is missing.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
    [[ ! -d "$repo_root/tests/node/node_modules/openai" ]]; then
  if ! npm ci --prefix "$repo_root/tests/node" --no-audit --no-fund --silent; then
    echo "deps: npm ci failed in tests/node" >&2
    exit 1
  fi
  echo "deps: npm packages installed in tests/node"
fi

if ((${#missing[@]} == 0)); then
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
