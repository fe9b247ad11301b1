#!/usr/bin/env bash
# Creates the files deploy/k8s/secrets/kustomization.yaml makes Secrets of,
# in DIR (default: files/ beside this script, git-ignored), keeping any that
# exist:
#   master.key    32 random bytes, hex (the conversation service's master key)
#   orchestrator_master.key, executor_master.key, sandbox_master.key  the same
#                 kind, each service's own (the sandbox MCP servers' last)
#   orchestrator_identity.key, executor_identity.key  caller-assertion signing keys
#                 (32 random bytes, hex); *_identity.pub their public keys
#   api_keys      one API key for TENANT/USER (its secret in demo.key, for the client)
#   database.env  <service>-dsn= and migrate-dsn= to fill in for an external PostgreSQL
#   db_<service>_password  the passwords of the services' login roles with the
#                 CloudNativePG component (omniforge_conversation, _executor, _orchestrator,
#                 _sandbox)
#   llm.env       provider keys to fill in (empty: local mode)
# The API key is made by omniforge-orchestrator: from OMNIFORGE_BIN_DIR
# (default build/bin), else from the image (OMNIFORGE_IMAGE, with docker).
#
#   deploy/k8s/secrets/init.sh [-d DIR] [TENANT [USER]]     default: demo demo-user
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
dir="$here/files"
if [[ "${1:-}" == -d ]]; then
  dir="${2:?-d needs a directory}"
  shift 2
fi
tenant="${1:-demo}"
user="${2:-demo-user}"
bin_dir="${OMNIFORGE_BIN_DIR:-$root/build/bin}"

mkdir -p "$dir"
chmod 700 "$dir"
umask 077

for name in master.key orchestrator_master.key executor_master.key sandbox_master.key; do
  if [[ ! -s "$dir/$name" ]]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$dir/$name"
    echo "secrets: made $name"
  fi
done
# The caller-assertion keys: the orchestrator's and the executor's signing
# keys and their public keys (printed by `omniforge identity-key`).
for service in orchestrator executor; do
  if [[ ! -s "$dir/${service}_identity.key" ]]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$dir/${service}_identity.key"
    echo "secrets: made ${service}_identity.key"
  fi
  if [[ -x "$bin_dir/omniforge" ]]; then
    "$bin_dir/omniforge" identity-key "$dir/${service}_identity.key" > "$dir/${service}_identity.pub"
  else
    docker run --rm -i "${OMNIFORGE_IMAGE:-omniforge:latest}" omniforge identity-key /dev/stdin \
      < "$dir/${service}_identity.key" > "$dir/${service}_identity.pub"
  fi
done
if [[ ! -s "$dir/api_keys" ]]; then
  if [[ -x "$bin_dir/omniforge-orchestrator" ]]; then
    out="$("$bin_dir/omniforge-orchestrator" keys create --tenant "$tenant" --user "$user" --label k8s)"
  else
    out="$(docker run --rm "${OMNIFORGE_IMAGE:-omniforge:latest}" omniforge-orchestrator keys create \
      --tenant "$tenant" --user "$user" --label k8s)"
  fi
  sed -n 's/^key:  *//p' <<<"$out" > "$dir/demo.key"
  sed -n 's/^line:  *//p' <<<"$out" > "$dir/api_keys"
  [[ -s "$dir/demo.key" && -s "$dir/api_keys" ]] || {
    echo "secrets: unexpected output of keys create" >&2
    exit 1
  }
  echo "secrets: made an API key for $tenant/$user (the key in demo.key, its hash in api_keys)"
fi
if [[ ! -e "$dir/database.env" ]]; then
  cat > "$dir/database.env" <<'ENV'
# An external PostgreSQL (unused with the CloudNativePG component): one login
# role per service, none of them the schema owner nor a superuser
# (deploy/postgres-roles.sql makes them; the migrations grant each its own
# schema), and the owner for the migrations.
# conversation-dsn=host=pg.example.internal dbname=omniforge user=omniforge_conversation password=... sslmode=verify-full
# executor-dsn=host=pg.example.internal dbname=omniforge user=omniforge_executor password=... sslmode=verify-full
# orchestrator-dsn=host=pg.example.internal dbname=omniforge user=omniforge_orchestrator password=... sslmode=verify-full
# sandbox-dsn=host=pg.example.internal dbname=omniforge user=omniforge_sandbox password=... sslmode=verify-full
# migrate-dsn=host=pg.example.internal dbname=omniforge user=omniforge password=... sslmode=verify-full
ENV
  echo "secrets: made database.env (fill in the <service>-dsn keys and migrate-dsn for an external PostgreSQL)"
fi
for service in conversation executor orchestrator sandbox; do
  if [[ ! -s "$dir/db_${service}_password" ]]; then
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n' > "$dir/db_${service}_password"
    echo "secrets: made db_${service}_password"
  fi
done
if [[ ! -e "$dir/llm.env" ]]; then
  cat > "$dir/llm.env" <<'ENV'
# Provider keys for the llm: sections (api_key_env), e.g.:
# OPENAI_API_KEY=sk-...
# ANTHROPIC_API_KEY=...
ENV
  echo "secrets: made llm.env (empty: local mode)"
fi
