#!/usr/bin/env bash
# Creates the secrets docker-compose.yml mounts, in deploy/docker/secrets/
# (git-ignored), keeping any that exist:
#   master.key         the conversation service's encryption master key (32 random bytes, hex)
#   orchestrator_master.key, executor_master.key, sandbox_master.key  the
#                      orchestrator's, the executor's and the sandbox MCP
#                      servers' (the same kind of key, each its own)
#   postgres_password  the password of PostgreSQL's omniforge user (the owner: migrations)
#   db_<service>_password  the passwords of the services' login roles
#                      (conversation, executor, orchestrator, and sandbox for the
#                      sandbox MCP servers; deploy/docker/postgres-roles.sh)
#   orchestrator_identity.key, executor_identity.key  the services' caller-assertion
#                      signing keys (32 random bytes, hex), and *_identity.pub their public keys
#   api_keys           the orchestrator's API key file (one key for TENANT/USER)
#   demo.key           that key, for clients (OMNIFORGE_API_KEY)
# The API key is made by omniforge-orchestrator keys create: from
# OMNIFORGE_BIN_DIR (default build/bin) when built, else from the image
# (OMNIFORGE_IMAGE, default omniforge:latest; docker-compose build first).
#
#   deploy/docker/init-secrets.sh [-d DIR] [TENANT [USER]]     default: demo demo-user
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$here/secrets"
if [[ "${1:-}" == -d ]]; then
  dir="${2:?-d needs a directory}"
  shift 2
fi
image="${OMNIFORGE_IMAGE:-omniforge:latest}"
bin_dir="${OMNIFORGE_BIN_DIR:-$here/../../build/bin}"
tenant="${1:-demo}"
user="${2:-demo-user}"

mkdir -p "$dir"
# The directory keeps other host users out; the files stay readable by the
# containers' non-root user, which compose bind-mounts them for.
chmod 700 "$dir"

for name in master.key orchestrator_master.key executor_master.key sandbox_master.key; do
  if [[ ! -s "$dir/$name" ]]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$dir/$name"
    echo "init-secrets: made $name"
  fi
done
if [[ ! -s "$dir/postgres_password" ]]; then
  od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$dir/postgres_password"
  echo "init-secrets: made postgres_password"
fi
for service in conversation executor orchestrator sandbox; do
  if [[ ! -s "$dir/db_${service}_password" ]]; then
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$dir/db_${service}_password"
    echo "init-secrets: made db_${service}_password"
  fi
done
# The caller-assertion keys (docs/security.md): the orchestrator's and the
# executor's signing keys (64 hex digits) and their public keys, which the
# services they call trust.
for service in orchestrator executor; do
  if [[ ! -s "$dir/${service}_identity.key" ]]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$dir/${service}_identity.key"
    echo "init-secrets: made ${service}_identity.key"
  fi
  if [[ -x "$bin_dir/omniforge" ]]; then
    "$bin_dir/omniforge" identity-key "$dir/${service}_identity.key" > "$dir/${service}_identity.pub"
  else
    docker run --rm -i "$image" omniforge identity-key /dev/stdin \
      < "$dir/${service}_identity.key" > "$dir/${service}_identity.pub"
  fi
done
if [[ ! -s "$dir/api_keys" ]]; then
  if [[ -x "$bin_dir/omniforge-orchestrator" ]]; then
    out="$("$bin_dir/omniforge-orchestrator" keys create --tenant "$tenant" --user "$user" --label compose)"
  else
    out="$(docker run --rm "$image" omniforge-orchestrator keys create \
      --tenant "$tenant" --user "$user" --label compose)"
  fi
  sed -n 's/^key:  *//p' <<<"$out" > "$dir/demo.key"
  sed -n 's/^line:  *//p' <<<"$out" > "$dir/api_keys"
  [[ -s "$dir/demo.key" && -s "$dir/api_keys" ]] || {
    echo "init-secrets: unexpected output of keys create" >&2
    exit 1
  }
  echo "init-secrets: made an API key for $tenant/$user in demo.key (its hash in api_keys)"
fi
chmod 644 "$dir/master.key" "$dir/postgres_password" "$dir"/db_*_password "$dir/api_keys" "$dir/demo.key" \
  "$dir"/*_identity.key "$dir"/*_identity.pub
