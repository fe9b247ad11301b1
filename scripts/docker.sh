#!/usr/bin/env bash
# The Docker engine for the deployment tests and `make image`:
#
#   scripts/docker.sh ensure     start dockerd in the background when no engine
#                                answers (root, no systemd: CI and these machines)
#   scripts/docker.sh client     print the docker client to use
#
# The client: $DOCKER, else Debian's /usr/bin/docker (its BuildKit builds
# without a buildx plugin), else the first docker on PATH. The engine's log
# goes to ${OMNIFORGE_DOCKERD_LOG:-/tmp/omniforge-dockerd.log}.
set -euo pipefail

client() {
  if [[ -n "${DOCKER:-}" ]]; then
    echo "$DOCKER"
  elif [[ -x /usr/bin/docker ]]; then
    echo /usr/bin/docker
  else
    command -v docker || { echo "docker: no docker client (apt-get install docker.io)" >&2; return 1; }
  fi
}

ensure() {
  local docker
  docker=$(client)
  "$docker" info >/dev/null 2>&1 && return 0
  command -v dockerd >/dev/null 2>&1 || {
    echo "docker: no engine answers and dockerd is not installed (make deps installs docker.io)" >&2
    return 1
  }
  [[ $(id -u) == 0 ]] || { echo "docker: no engine answers; start dockerd (needs root)" >&2; return 1; }
  local log="${OMNIFORGE_DOCKERD_LOG:-/tmp/omniforge-dockerd.log}"
  echo "docker: starting dockerd (log: $log)" >&2
  setsid dockerd >"$log" 2>&1 < /dev/null &
  local i
  for ((i = 0; i < 60; i++)); do
    "$docker" info >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  tail -n 20 "$log" >&2
  echo "docker: dockerd did not answer within 30 s" >&2
  return 1
}

case "${1:-}" in
  ensure) ensure ;;
  client) client ;;
  *) echo "usage: $0 ensure|client" >&2; exit 2 ;;
esac
