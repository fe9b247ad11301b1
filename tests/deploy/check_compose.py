#!/usr/bin/python3
"""Checks the shape of docker-compose.yml as docker-compose resolved it.

    check_compose.py DEFAULT.yml OLLAMA.yml [SECRETS_DIR]

DEFAULT.yml and OLLAMA.yml are `docker-compose config` without and with the
ollama profile. What must hold: the four services and the migration step
run the omniforge image read-only, without capabilities, with their
secrets; the services have gRPC health checks and start in dependency order
(migrations before the database services, the orchestrator last); only the
orchestrator publishes a port; PostgreSQL is 15 and reachable on the
internal network only; the ollama profile adds Ollama and its model pull.
Each service's effective configuration (its config file with the compose
environment over it) names no loopback address for a remote dependency and
no secret it is not given, and its OMNIFORGE_MCP_SERVERS_* variables name
servers its file has. With SECRETS_DIR (what deploy/docker/init-secrets.sh -d made): every secret
the compose file mounts is a file there, the master key is 32 bytes in hex
and the API key file holds key-file lines.
Prints every problem and exits 1 when there is any.
"""
import os
import re
import sys

import yaml

SERVICES = {
    "conversation": 50051,
    "intent": 50052,
    "executor": 50053,
    "orchestrator": 50050,
}


def check(config, with_ollama, problems):
    services = config.get("services", {})
    # docker-compose v1 lists a profile's services with their `profiles`
    # whether or not the profile is active.
    expected = set(SERVICES) | {"postgres", "migrate", "ollama", "ollama-pull"}
    if set(services) != expected:
        problems.append(f"services {sorted(services)}, expected {sorted(expected)}")
        return
    for name, svc in services.items():
        profiles = svc.get("profiles") or []
        wanted = ["ollama"] if name.startswith("ollama") else []
        if profiles != wanted:
            problems.append(f"{name}: profiles {profiles}, expected {wanted}")

    for name, svc in services.items():
        if name != "orchestrator" and svc.get("ports"):
            problems.append(f"{name}: publishes a port; only the orchestrator may")

    postgres = services["postgres"]
    if str(postgres.get("image", "")) not in ("postgres:15", "omniforge-postgres:15"):
        problems.append("postgres: neither postgres:15 nor omniforge-postgres:15")
    networks = config.get("networks", {})
    if not networks.get("backend", {}).get("internal"):
        problems.append("the backend network is not internal")
    if set(postgres.get("networks", {})) != {"backend"}:
        problems.append("postgres: must be on the internal backend network only")

    mounts = [m if isinstance(m, str) else f"{m.get('source')}:{m.get('target')}"
              for m in postgres.get("volumes") or []]
    if not any("postgres-roles.sh:/docker-entrypoint-initdb.d/" in m for m in mounts):
        problems.append("postgres: deploy/docker/postgres-roles.sh is not run at initdb "
                        "(the services' login roles)")
    if not any("postgres-roles.sql:/omniforge/postgres-roles.sql" in m for m in mounts):
        problems.append("postgres: deploy/postgres-roles.sql is not mounted at "
                        "/omniforge/postgres-roles.sql (postgres-roles.sh runs it)")
    for secret in ("db_conversation_password", "db_executor_password", "db_orchestrator_password",
                   "db_sandbox_password"):
        if secret not in [x if isinstance(x, str) else x.get("source") for x in postgres.get("secrets") or []]:
            problems.append(f"postgres: not given {secret} (the roles script sets it)")

    migrate = services["migrate"]
    command = " ".join(migrate.get("command") or [])
    for step in ("omniforge-conversation", "omniforge-executor", "omniforge-orchestrator"):
        if f"{step} --config" not in command or "migrate" not in command:
            problems.append(f"migrate: does not run {step} migrate")
    if "omniforge-sandbox-mcp migrate" not in command:
        problems.append("migrate: does not run omniforge-sandbox-mcp migrate (the sandbox schema)")
    if migrate.get("depends_on", {}).get("postgres", {}).get("condition") != "service_healthy":
        problems.append("migrate: does not wait for a healthy postgres")

    for name in list(SERVICES) + ["migrate"]:
        svc = services[name]
        if svc.get("image") != services["migrate"].get("image"):
            problems.append(f"{name}: not the image the migrate step builds")
        if not svc.get("read_only"):
            problems.append(f"{name}: root filesystem is writable")
        if "ALL" not in (svc.get("cap_drop") or []):
            problems.append(f"{name}: capabilities are not dropped")

    for name, port in SERVICES.items():
        svc = services[name]
        test = svc.get("healthcheck", {}).get("test") or []
        if test[:1] != ["CMD"] or "omniforge" not in test or "health" not in test or \
                f"127.0.0.1:{port}" not in test:
            problems.append(f"{name}: no gRPC health check on port {port}")
    deps = {name: services[name].get("depends_on", {}) for name in SERVICES}
    for name in ("conversation", "executor", "orchestrator"):
        if deps[name].get("migrate", {}).get("condition") != "service_completed_successfully":
            problems.append(f"{name}: does not wait for the migrations")
    if deps["executor"].get("conversation", {}).get("condition") != "service_healthy":
        problems.append("executor: does not wait for a healthy conversation service")
    for name in ("conversation", "intent", "executor"):
        if deps["orchestrator"].get(name, {}).get("condition") != "service_healthy":
            problems.append(f"orchestrator: does not wait for a healthy {name} service")

    ports = services["orchestrator"].get("ports") or []
    targets = [str(p.get("target")) if isinstance(p, dict) else str(p).split("/")[0].rsplit(":", 1)[-1]
               for p in ports]
    if targets != ["50050"]:
        problems.append(f"orchestrator: publishes {ports}, expected its gRPC port only")

    secrets = config.get("secrets", {})
    for secret in ("master_key", "orchestrator_master_key", "executor_master_key",
                   "postgres_password", "api_keys",
                   "db_conversation_password", "db_executor_password", "db_orchestrator_password"):
        if secret not in secrets:
            problems.append(f"secret {secret} is not defined")

    def env(name):
        return services[name].get("environment") or {}

    def secrets_of(name):
        return [s if isinstance(s, str) else s.get("source")
                for s in services[name].get("secrets") or []]

    # Each service that seals what users wrote has its own master key, and
    # no other service is given it.
    for service, secret in (("conversation", "master_key"),
                            ("orchestrator", "orchestrator_master_key"),
                            ("executor", "executor_master_key")):
        if secret not in secrets_of(service):
            problems.append(f"{service}: no {secret} secret")
        if env(service).get("OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE") != f"/run/secrets/{secret}":
            problems.append(f"{service}: OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE is not the secret")
        for other in services:
            if other not in (service, "migrate") and secret in secrets_of(other):
                problems.append(f"{other}: is given {secret}, {service}'s master key")
    if env("orchestrator").get("OMNIFORGE_AUTH_API_KEYS_FILE") != "/run/secrets/api_keys":
        problems.append("orchestrator: OMNIFORGE_AUTH_API_KEYS_FILE is not the secret")
    for key, target in (("CONVERSATION", "conversation:50051"), ("INTENT", "intent:50052"),
                        ("EXECUTOR", "executor:50053")):
        if env("orchestrator").get(f"OMNIFORGE_DOWNSTREAM_{key}") != f"dns:///{target}":
            problems.append(f"orchestrator: OMNIFORGE_DOWNSTREAM_{key} is not dns:///{target}")

    # Every service that keeps state in PostgreSQL is given the database
    # (not the loopback address of the config baked into the image) and
    # its password, and does not migrate on start (the migrate step does).
    # Each logs in as its own role with its own password; only the migrate
    # step has the owner's.
    def secret_names(name):
        return [s if isinstance(s, str) else s.get("source") for s in services[name].get("secrets") or []]

    for name in ("conversation", "executor", "orchestrator"):
        dsn = str(env(name).get("OMNIFORGE_DATABASE_DSN", ""))
        if "host=postgres" not in dsn:
            problems.append(f"{name}: OMNIFORGE_DATABASE_DSN does not name the postgres service")
        if not re.search(rf"(^|\s)user=omniforge_{name}(\s|$)", dsn):
            problems.append(f"{name}: does not log in as its own role omniforge_{name}")
        secret = f"db_{name}_password"
        if env(name).get("PGPASSWORD_FILE") != f"/run/secrets/{secret}" or \
                secret not in secret_names(name):
            problems.append(f"{name}: its database password secret ({secret}) is not given")
        if "postgres_password" in secret_names(name):
            problems.append(f"{name}: is given the database owner's password")
        if str(env(name).get("OMNIFORGE_DATABASE_MIGRATE_ON_START")).lower() != "false":
            problems.append(f"{name}: migrates on start; the migrate step does")
    # Caller assertions: the services that are called trust the public keys
    # of those that call them (conversation: the orchestrator's and the
    # executor's; intent and executor: the orchestrator's), which sign with
    # their own key, and every key file a service names is a secret it is
    # given. A service without trusted keys would believe identity metadata.
    trusted = {"conversation": {"orchestrator", "executor"}, "intent": {"orchestrator"},
               "executor": {"orchestrator"}}
    for name, issuers in trusted.items():
        entries = dict(e.split("=", 1) for e in
                       str(env(name).get("OMNIFORGE_IDENTITY_TRUSTED_KEYS", "")).split(",") if "=" in e)
        if set(entries) != issuers:
            problems.append(f"{name}: trusts the identity keys {sorted(entries)}, "
                            f"expected {sorted(issuers)}")
        for path in entries.values():
            if path.removeprefix("/run/secrets/") not in secret_names(name):
                problems.append(f"{name}: its trusted key {path} is not a secret it is given")
    for name in ("orchestrator", "executor"):
        key = str(env(name).get("OMNIFORGE_IDENTITY_SIGNING_KEY_FILE", ""))
        if key != f"/run/secrets/{name}_identity_key" or \
                f"{name}_identity_key" not in secret_names(name):
            problems.append(f"{name}: does not sign with its own identity key secret")
        if env(name).get("OMNIFORGE_IDENTITY_SIGNING_KEY_ID") != name:
            problems.append(f"{name}: its identity key id is not '{name}'")
    for name in ("conversation", "intent", "executor", "orchestrator"):
        for secret in secret_names(name):
            if secret.endswith("_identity_key") and secret != f"{name}_identity_key":
                problems.append(f"{name}: is given another service's signing key ({secret})")
    # Messages acknowledged while conversation storage is down wait in the
    # spool: on a named volume, not on the container's tmpfs.
    spool_dir = env("orchestrator").get("OMNIFORGE_SPOOL_DIR", "")
    mounts = services["orchestrator"].get("volumes") or []
    on_volume = any(isinstance(m, dict) and m.get("type") == "volume" and m.get("target") == spool_dir
                    or isinstance(m, str) and m.split(":")[1:2] == [spool_dir] and
                    not m.startswith((".", "/"))
                    for m in mounts)
    if not spool_dir or not on_volume:
        problems.append(f"orchestrator: the spool ({spool_dir or 'spool.dir of the image'}) "
                        "is not on a named volume")

    if with_ollama:
        pull = services["ollama-pull"]
        if pull.get("depends_on", {}).get("ollama", {}).get("condition") != "service_healthy":
            problems.append("ollama-pull: does not wait for a healthy ollama")
        if "backend" not in (services["ollama"].get("networks") or {}):
            problems.append("ollama: not on the services' network")


# Where each service keeps its remote dependencies in its configuration:
# with the compose file's environment on top of the config file baked into
# the image (or mounted), none may be a loopback address.
REMOTE_KEYS = {
    "conversation": ["database.dsn"],
    "executor": ["database.dsn", "conversation.address"],
    "orchestrator": ["database.dsn", "downstream.conversation", "downstream.intent",
                     "downstream.executor"],
    "intent": [],
}
LOOPBACK = re.compile(r"(^|[\s/=@:])(127\.\d+\.\d+\.\d+|localhost|\[?::1\]?)([\s:/]|$)")


def env_name(path):
    return "OMNIFORGE_" + path.upper().replace(".", "_")


def flatten(node, prefix=""):
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


def config_file(svc, name, root):
    """The repository file behind the service's OMNIFORGE_CONFIG: the image
    copies deploy/local/ to /etc/omniforge/local/; bind mounts add others."""
    path = (svc.get("environment") or {}).get("OMNIFORGE_CONFIG",
                                              f"/etc/omniforge/local/{name}.yaml")
    mounts = {"/etc/omniforge/local": os.path.join(root, "deploy/local")}
    for volume in svc.get("volumes") or []:
        if isinstance(volume, dict) and volume.get("type") == "bind":
            mounts[volume["target"]] = volume["source"]
        elif isinstance(volume, str) and volume.startswith((".", "/")):
            source, target = volume.split(":")[:2]
            mounts[target] = os.path.join(root, source)
    for target, source in sorted(mounts.items(), key=lambda m: -len(m[0])):
        if path.startswith(target + "/"):
            return os.path.join(source, path[len(target) + 1:])
    return None


def check_effective(config, root, problems):
    """Each service's configuration as it starts: its file, then the
    compose environment over it (OMNIFORGE_<KEY_PATH>), then the secrets
    its *_FILE variables name."""
    services = config.get("services", {})
    for name, keys in REMOTE_KEYS.items():
        svc = services[name]
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        path = config_file(svc, name, root)
        if path is None or not os.path.isfile(path):
            problems.append(f"{name}: its config file ({path}) is not in the image or mounted")
            continue
        with open(path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f) or {}
        effective = flatten(loaded)
        servers = ((loaded.get("mcp") or {}).get("servers") or {})
        prefixes = [env_name(f"mcp.servers.{server}") + "_" for server in servers]
        for var in env:
            if var.startswith("OMNIFORGE_MCP_SERVERS_") and \
                    not any(var.startswith(prefix) for prefix in prefixes):
                problems.append(f"{name}: {var} names an MCP server {path} does not have")
        for key in list(effective) + keys:
            if env_name(key) in env:
                effective[key] = env[env_name(key)]
        for key in keys:
            value = str(effective.get(key) or "")
            if not value:
                problems.append(f"{name}: {key} is empty as it starts")
            elif LOOPBACK.search(value):
                problems.append(f"{name}: {key} is {value!r} as it starts: a loopback address "
                                "inside a container")
        mounted = [s if isinstance(s, str) else s.get("source") for s in svc.get("secrets") or []]
        for var, value in env.items():
            if var.endswith("_FILE") and value.startswith("/run/secrets/") and \
                    value[len("/run/secrets/"):] not in mounted:
                problems.append(f"{name}: {var} names a secret it is not given")


def check_secrets(config, secrets_dir, problems):
    for name, secret in (config.get("secrets") or {}).items():
        source = secret.get("file", "")
        if os.path.dirname(os.path.abspath(source)) != os.path.abspath("deploy/docker/secrets"):
            problems.append(f"secret {name}: {source} is not in deploy/docker/secrets")
        if not os.path.isfile(os.path.join(secrets_dir, os.path.basename(source))):
            problems.append(f"secret {name}: init-secrets.sh made no {os.path.basename(source)}")
    with open(os.path.join(secrets_dir, "master.key"), encoding="ascii") as f:
        if not re.fullmatch(r"[0-9a-f]{64}", f.read().strip()):
            problems.append("master.key is not 32 bytes in hex")
    with open(os.path.join(secrets_dir, "api_keys"), encoding="ascii") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
        if not lines or not all(re.fullmatch(r"\S+ sha256:[0-9a-f]{64} \S+ \S+( .*)?", line) for line in lines):
            problems.append(f"api_keys does not hold key-file lines: {lines}")


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    problems = []
    for path, with_ollama in ((sys.argv[1], False), (sys.argv[2], True)):
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f)
        found = []
        check(config, with_ollama, found)
        if not found:
            check_effective(config, os.getcwd(), found)
        problems += [f"{'ollama profile' if with_ollama else 'default'}: {p}" for p in found]
        if len(sys.argv) == 4 and not with_ollama:
            check_secrets(config, sys.argv[3], problems)
    for problem in problems:
        print(problem)
    print(f"docker-compose.yml: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
