#!/usr/bin/python3
"""Runs the pods of a Kubernetes overlay in Docker, as a kubelet would, and
chats through them. No cluster can start here (kind and k3s need registry
images), so this stands in for one:

    pod_smoke_test.py KUSTOMIZE_DIR BIN_DIR [--mutual-tls]

  1. renders KUSTOMIZE_DIR (kubectl kustomize) and the Secrets
     deploy/k8s/secrets makes from the files its init.sh writes, and, for
     the cert-manager Certificates of the render (the mutual-tls
     component), the Secrets cert-manager would issue (cert_manager.py:
     openssl, the internal CA first);
  2. starts PostgreSQL 15 in a container and prepares it as the overlay's
     database would be: with the CloudNativePG component, what the operator
     does from the rendered Cluster (the owner and database of
     bootstrap.initdb, its postInitApplicationSQL, its managed roles with
     the passwords of their Secrets, and its TLS: a CA in the Secret
     <cluster>-ca, ca.crt and ca.key, and a server certificate it signs
     for the names the operator's holds, which PostgreSQL serves with
     ssl on); without it, an external PostgreSQL set up with
     deploy/postgres-roles.sql and the DSNs of omniforge-database;
  3. runs the migration Job's container to completion, then every
     Deployment's container: the image (tagged as the overlay pins it),
     command and args, env and envFrom from the rendered ConfigMaps and
     Secrets, ConfigMap and Secret volumes as read-only files (only the
     keys of their items where they list some), emptyDir
     volumes (memory ones as tmpfs), the read-only root filesystem, the
     non-root user and group, dropped capabilities, no privilege
     escalation and the memory limit; each pod is reachable by its
     Services' names, as cluster DNS would resolve them;
  4. waits for every pod's readiness probe: a gRPC one as the kubelet
     would call it (grpc.health.v1 on the probe's port), an exec one run in
     the container (success: exit 0, within its timeoutSeconds); then runs
     its startup and liveness probes once, which must pass too;
  5. drives a chat turn with the demo key through the orchestrator (over
     TLS, the server verified against the CA of its Secret, where it serves
     TLS) and checks that it is answered and stored, that the orchestrator
     is on the turn bus in PostgreSQL (LISTEN), that each service is logged
     in as its own role, not the owner, and that no pod's environment holds
     an OMNIFORGE_* variable its service does not know; with the
     CloudNativePG component, that every connection of each service's role
     is on TLS (pg_stat_ssl) and that no pod and no Job logged "database
     connection not verified" (without it, each database service must log
     it: the test's external DSNs do not verify);
  6. where a service requires client certificates (mutual TLS), checks
     from the orchestrator's container that a call with the orchestrator's
     certificate is served while a plaintext call and a TLS call without a
     client certificate are refused. With --mutual-tls (the prod overlay),
     the conversation, intent and executor services must all require
     them, and the orchestrator must serve TLS.
The last line is `RESULT ...` with the times.
"""
import base64
import os
import re
import shutil
import sys
import tempfile
import time

import yaml

from cert_manager import CertManagerError, issue_certificates
from harness import (ROOT, Report, chat, free_port, identity_unconfigured, stored_reply,
                     unknown_environment)

PG_PASSWORD = "smoke-superuser"
report = Report("pod-smoke")
log, fail, run = report.log, report.fail, report.run


def find_kubectl():
    for candidate in (os.environ.get("OMNIFORGE_KUBECTL"), os.path.join(ROOT, "tests/deploy/.tools/kubectl"),
                      shutil.which("kubectl")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    fail("no kubectl (make deps)")


def render(kubectl, directory):
    out = run([kubectl, "kustomize", directory]).stdout
    return [d for d in yaml.safe_load_all(out) if d]


class Cluster:
    """The rendered objects and the containers standing in for pods."""

    def __init__(self, objects, docker, work):
        self.objects = objects
        self.docker = docker
        self.work = work
        self.network = f"ofpods{os.getpid()}"
        self.containers = []
        self.images = []
        self.namespace = next((o["metadata"].get("namespace") for o in objects
                               if o["metadata"].get("namespace")), "omniforge")

    def of_kind(self, kind):
        return [o for o in self.objects if o["kind"] == kind]

    def named(self, kind, name):
        for o in self.of_kind(kind):
            if o["metadata"]["name"] == name:
                return o
        return None

    def secret_data(self, name, key, optional=False):
        secret = self.named("Secret", name)
        if secret is None:
            if optional:
                return None
            fail(f"Secret {name} is referenced but not made")
        if key in (secret.get("stringData") or {}):
            return secret["stringData"][key]
        if key in (secret.get("data") or {}):
            return base64.b64decode(secret["data"][key]).decode()
        if optional:
            return None
        fail(f"Secret {name} has no key {key}")

    def config_data(self, name, key, optional=False):
        config = self.named("ConfigMap", name)
        if config is None or key not in (config.get("data") or {}):
            if optional:
                return None
            fail(f"ConfigMap {name} (key {key}) is referenced but not made")
        return config["data"][key]

    def aliases(self, labels):
        """The names cluster DNS gives a pod: those of the Services that
        select it."""
        names = []
        for service in self.of_kind("Service"):
            selector = service["spec"].get("selector") or {}
            if selector and all(labels.get(k) == v for k, v in selector.items()):
                name = service["metadata"]["name"]
                names += [name, f"{name}.{self.namespace}", f"{name}.{self.namespace}.svc",
                          f"{name}.{self.namespace}.svc.cluster.local"]
        return names

    def environment(self, container):
        env = {}
        for source in container.get("envFrom") or []:
            if "configMapRef" in source:
                ref = source["configMapRef"]
                config = self.named("ConfigMap", ref["name"])
                if config is None and not ref.get("optional"):
                    fail(f"ConfigMap {ref['name']} is referenced but not made")
                env.update((config or {}).get("data") or {})
            if "secretRef" in source:
                ref = source["secretRef"]
                secret = self.named("Secret", ref["name"])
                if secret is None and not ref.get("optional"):
                    fail(f"Secret {ref['name']} is referenced but not made")
                for key in (secret or {}).get("data") or {}:
                    env[key] = base64.b64decode(secret["data"][key]).decode()
                env.update((secret or {}).get("stringData") or {})
        for e in container.get("env") or []:
            if "value" in e:
                # $(VAR) refers to a variable defined before it.
                env[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)),
                                        str(e["value"]))
            elif "secretKeyRef" in (e.get("valueFrom") or {}):
                ref = e["valueFrom"]["secretKeyRef"]
                value = self.secret_data(ref["name"], ref["key"], ref.get("optional", False))
                if value is not None:
                    env[e["name"]] = value
            elif "configMapKeyRef" in (e.get("valueFrom") or {}):
                ref = e["valueFrom"]["configMapKeyRef"]
                value = self.config_data(ref["name"], ref["key"], ref.get("optional", False))
                if value is not None:
                    env[e["name"]] = value
            else:
                fail(f"env {e['name']}: a source this test cannot give: {e}")
        return env

    def volume_args(self, pod_name, pod, container, claims=()):
        """--mount/--tmpfs arguments for the container's volume mounts; a
        StatefulSet's claims are directories of their own (its
        PersistentVolumes)."""
        volumes = {v["name"]: v for v in pod.get("volumes") or []}
        for claim in claims:
            volumes.setdefault(claim["metadata"]["name"], {"persistentVolumeClaim": claim})
        fs_group = (pod.get("securityContext") or {}).get("fsGroup")
        args = []
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount["name"])
            if volume is None:
                fail(f"{pod_name}: mounts {mount['name']}, which is no volume of the pod")
            target = mount["mountPath"]
            if "persistentVolumeClaim" in volume:
                host = tempfile.mkdtemp(prefix=f"{pod_name}-{mount['name']}-pv-", dir=self.work)
                os.chown(host, 0, fs_group or 0)
                os.chmod(host, 0o2775)
                args += ["--mount", f"type=bind,source={host},target={target}"]
                continue
            if "emptyDir" in volume:
                spec = volume["emptyDir"] or {}
                if spec.get("medium") == "Memory":
                    size = spec.get("sizeLimit", "64Mi").replace("Mi", "m").replace("Gi", "g")
                    args += ["--tmpfs", f"{target}:rw,size={size},mode=1777"]
                else:
                    host = tempfile.mkdtemp(prefix=f"{pod_name}-{mount['name']}-", dir=self.work)
                    os.chown(host, 0, fs_group or 0)
                    os.chmod(host, 0o2775)
                    args += ["--mount", f"type=bind,source={host},target={target}"]
                continue
            if "configMap" in volume or "secret" in volume:
                host = tempfile.mkdtemp(prefix=f"{pod_name}-{mount['name']}-", dir=self.work)
                if "configMap" in volume:
                    config = self.named("ConfigMap", volume["configMap"]["name"])
                    if config is None:
                        fail(f"{pod_name}: ConfigMap {volume['configMap']['name']} is not made")
                    files = dict(config.get("data") or {})
                    mode = volume["configMap"].get("defaultMode", 0o644)
                else:
                    name = volume["secret"]["secretName"]
                    secret = self.named("Secret", name)
                    if secret is None:
                        fail(f"{pod_name}: Secret {name} is not made")
                    files = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
                    files.update(secret.get("stringData") or {})
                    mode = volume["secret"].get("defaultMode", 0o644)
                source = volume.get("configMap") or volume["secret"]
                if source.get("items"):
                    # Only the keys listed, at their paths.
                    missing = [i["key"] for i in source["items"] if i["key"] not in files]
                    if missing:
                        fail(f"{pod_name}: volume {mount['name']} lists keys its source lacks: {missing}")
                    files = {i["path"]: files[i["key"]] for i in source["items"]}
                for key, text in files.items():
                    path = os.path.join(host, key)
                    with open(path, "w") as f:
                        f.write(text)
                    # The kubelet makes the files the pod's fsGroup's.
                    os.chown(path, 0, fs_group or 0)
                    os.chmod(path, mode)
                os.chmod(host, 0o755)
                args += ["--mount", f"type=bind,source={host},target={target},readonly"]
                continue
            fail(f"{pod_name}: volume {mount['name']}: a kind this test cannot give: {volume}")
        return args

    def run_pod(self, name, template, publish=None, detach=True, claims=()):
        pod = template["spec"]
        if len(pod["containers"]) != 1:
            fail(f"{name}: expected one container")
        container = pod["containers"][0]
        pod_security = pod.get("securityContext") or {}
        security = container.get("securityContext") or {}
        user = security.get("runAsUser", pod_security.get("runAsUser"))
        group = security.get("runAsGroup", pod_security.get("runAsGroup"))
        if not (security.get("runAsNonRoot") or pod_security.get("runAsNonRoot")) or not user:
            fail(f"{name}: does not run as a non-root user")
        args = [self.docker, "run", "--name", f"{self.network}-{name}", "--network", self.network,
                "--user", f"{user}:{group or user}", "--label", f"omniforge.pod-smoke={self.network}"]
        if detach:
            args += ["-d"]
        for alias in self.aliases(template["metadata"].get("labels") or {}):
            args += ["--network-alias", alias]
        if pod_security.get("fsGroup"):
            args += ["--group-add", str(pod_security["fsGroup"])]
        if security.get("readOnlyRootFilesystem"):
            args += ["--read-only"]
        if "ALL" in ((security.get("capabilities") or {}).get("drop") or []):
            args += ["--cap-drop", "ALL"]
        if security.get("allowPrivilegeEscalation") is False:
            args += ["--security-opt", "no-new-privileges"]
        memory = ((container.get("resources") or {}).get("limits") or {}).get("memory")
        if memory:
            args += ["--memory", memory.replace("Mi", "m").replace("Gi", "g")]
        env_file = os.path.join(self.work, f"{name}.env")
        with open(env_file, "w") as f:
            for key, value in self.environment(container).items():
                if "\n" in value:
                    fail(f"{name}: env {key} holds a newline")
                f.write(f"{key}={value}\n")
        args += ["--env-file", env_file]
        args += self.volume_args(name, pod, container, claims)
        if publish:
            args += ["-p", f"127.0.0.1:{publish[1]}:{publish[0]}"]
        command = container.get("command") or []
        if command:
            args += ["--entrypoint", command[0]]
        args += [container["image"], *command[1:], *(container.get("args") or [])]
        self.containers.append(f"{self.network}-{name}")
        return run(args, check=False, timeout=900)

    def grpc_port(self, template):
        container = template["spec"]["containers"][0]
        port = next((p["containerPort"] for p in container.get("ports") or [] if p.get("name") == "grpc"), None)
        if port is None:
            fail(f"{template['metadata']['labels']}: no port named grpc")
        return port

    def probe(self, name, template, kind):
        """Runs the container's probe of `kind` (readinessProbe, ...) once
        as the kubelet would: gRPC health on its port (the command-line
        client in the container, in plaintext as the kubelet speaks it), or
        its exec command in the container, which must exit 0 within the
        probe's timeoutSeconds (default 1). Returns (passed, output)."""
        probe = template["spec"]["containers"][0].get(kind)
        if probe is None:
            fail(f"{name}: no {kind}")
        if "grpc" in probe:
            command = ["omniforge", "--server", f"127.0.0.1:{probe['grpc']['port']}", "--timeout", "2", "health"]
        elif "exec" in probe:
            command = probe["exec"]["command"]
        else:
            fail(f"{name}: {kind} is neither a gRPC nor an exec probe: {probe}")
        started = time.monotonic()
        result = run([self.docker, "exec", f"{self.network}-{name}", *command], check=False, timeout=30)
        took = time.monotonic() - started
        if "exec" in probe and result.returncode == 0 and took > probe.get("timeoutSeconds", 1):
            return False, f"took {took:.1f} s, over its timeoutSeconds ({probe.get('timeoutSeconds', 1)})"
        return result.returncode == 0, result.stdout

    def tls_files(self, template, variable):
        """The files of the Secret volume the container's `variable` (a path,
        e.g. OMNIFORGE_SERVER_TLS_CERT_FILE) points into, and that Secret's
        name; (None, None) when the variable is unset."""
        container = template["spec"]["containers"][0]
        path = self.environment(container).get(variable)
        if not path:
            return None, None
        mount = next((m for m in container.get("volumeMounts") or []
                      if path.startswith(m["mountPath"].rstrip("/") + "/")), None)
        volume = next((v for v in template["spec"].get("volumes") or []
                       if mount and v["name"] == mount["name"] and "secret" in v), None)
        if volume is None:
            fail(f"{variable}={path} is in no mounted Secret")
        name = volume["secret"]["secretName"]
        secret = self.named("Secret", name)
        if secret is None:
            fail(f"Secret {name} is not made")
        files = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
        files.update(secret.get("stringData") or {})
        return files, name

    def logs(self, name, lines=30):
        return run([self.docker, "logs", "--tail", str(lines), f"{self.network}-{name}"],
                   check=False).stdout

    def psql(self, sql, database="omniforge", user="postgres", environment=None):
        args = [self.docker, "exec", "-i"]
        for key, value in (environment or {}).items():
            args += ["-e", f"{key}={value}"]
        args += [f"{self.network}-postgres", "psql", "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1", "-At"]
        return run(args, input=sql).stdout

    def teardown(self):
        for name in self.containers:
            run([self.docker, "rm", "-f", "-v", name], check=False)
        run([self.docker, "network", "rm", self.network], check=False)
        for image in self.images:
            run([self.docker, "rmi", image], check=False)


def make_secrets(kubectl, bin_dir, work, dsn_host):
    """The Secrets of deploy/k8s/secrets, from the files its init.sh makes,
    with the external database's DSNs filled in."""
    secrets_dir = os.path.join(work, "secrets")
    os.makedirs(secrets_dir)
    shutil.copy(os.path.join(ROOT, "deploy/k8s/secrets/kustomization.yaml"), secrets_dir)
    files = os.path.join(secrets_dir, "files")
    run(["bash", "deploy/k8s/secrets/init.sh", "-d", files],
        env=dict(os.environ, OMNIFORGE_BIN_DIR=bin_dir))
    passwords = {s: open(os.path.join(files, f"db_{s}_password")).read().strip()
                 for s in ("conversation", "executor", "orchestrator", "sandbox")}
    passwords["owner"] = "smoke-owner-" + passwords["conversation"][:8]
    with open(os.path.join(files, "database.env"), "a") as f:
        for service in ("conversation", "executor", "orchestrator", "sandbox"):
            f.write(f"{service}-dsn=host={dsn_host} port=5432 dbname=omniforge "
                    f"user=omniforge_{service} password={passwords[service]}\n")
        f.write(f"migrate-dsn=host={dsn_host} port=5432 dbname=omniforge user=omniforge "
                f"password={passwords['owner']}\n")
    key = open(os.path.join(files, "demo.key")).read().strip()
    return render(kubectl, secrets_dir), passwords, key


def prepare_database(cluster, passwords):
    """PostgreSQL as the overlay expects it. Returns what it emulated."""
    pg = cluster.of_kind("Cluster")
    if pg:
        # What the CloudNativePG operator does for this Cluster.
        spec = pg[0]["spec"]
        initdb = spec["bootstrap"]["initdb"]
        owner, database = initdb["owner"], initdb["database"]
        cluster.psql(f"CREATE ROLE {owner} LOGIN PASSWORD '{passwords['owner']}';"
                     f"CREATE DATABASE {database} OWNER {owner};", database="postgres")
        for statement in initdb.get("postInitApplicationSQL") or []:
            cluster.psql(statement, database=database)
        for role in (spec.get("managed") or {}).get("roles") or []:
            password = cluster.secret_data(role["passwordSecret"]["name"], "password")
            username = cluster.secret_data(role["passwordSecret"]["name"], "username")
            if username != role["name"]:
                fail(f"Secret {role['passwordSecret']['name']}: username {username}, role {role['name']}")
            flags = " ".join([
                "LOGIN" if role.get("login") else "NOLOGIN",
                "SUPERUSER" if role.get("superuser") else "NOSUPERUSER",
                "BYPASSRLS" if role.get("bypassrls") else "NOBYPASSRLS"])
            cluster.psql(f"CREATE ROLE {role['name']} {flags} PASSWORD '{password}';" +
                         "".join(f"GRANT {r} TO {role['name']};" for r in role.get("inRoles") or []),
                         database=database)
        # The operator's Secret for the owner, which the migration Job reads.
        uri = f"postgresql://{owner}:{passwords['owner']}@{pg[0]['metadata']['name']}-rw:5432/{database}"
        cluster.objects.append({"apiVersion": "v1", "kind": "Secret",
                                "metadata": {"name": f"{pg[0]['metadata']['name']}-app"},
                                "stringData": {"uri": uri, "username": owner,
                                               "password": passwords["owner"]}})
        return f"CloudNativePG Cluster {pg[0]['metadata']['name']} (operator emulated)"
    cluster.psql("CREATE DATABASE omniforge;", database="postgres")
    with open(os.path.join(ROOT, "deploy/postgres-roles.sql")) as f:
        cluster.psql(f.read(), environment={
            "OMNIFORGE_OWNER_PASSWORD": passwords["owner"],
            "OMNIFORGE_CONVERSATION_PASSWORD": passwords["conversation"],
            "OMNIFORGE_EXECUTOR_PASSWORD": passwords["executor"],
            "OMNIFORGE_ORCHESTRATOR_PASSWORD": passwords["orchestrator"],
            "OMNIFORGE_SANDBOX_PASSWORD": passwords["sandbox"]})
    return "external PostgreSQL (deploy/postgres-roles.sql)"


def cnpg_server_names(pg, namespace):
    """The names CloudNativePG's server certificate holds: the Cluster's
    -rw, -r and -ro Services, short, namespaced and with .svc (what every
    release of the operator puts in; newer ones add .svc.cluster.local),
    and spec.certificates.serverAltDNSNames."""
    name = pg["metadata"]["name"]
    names = [f"{name}-{kind}{suffix}" for kind in ("rw", "r", "ro")
             for suffix in ("", f".{namespace}", f".{namespace}.svc")]
    return names + ((pg["spec"].get("certificates") or {}).get("serverAltDNSNames") or [])


def issue_cnpg_tls(cluster, image, work):
    """What the CloudNativePG operator makes for the Cluster's TLS: a CA
    (ECDSA P-256) in the Secret <cluster>-ca (ca.crt and ca.key, as the
    operator keeps them; the pods mount ca.crt alone) and a server
    certificate it signs with cnpg_server_names. Returns the directory of
    the server's tls.crt and tls.key, owned by the image's postgres user
    (PostgreSQL refuses a key others can read); None without a Cluster."""
    pg = cluster.of_kind("Cluster")
    if not pg:
        return None
    name = pg[0]["metadata"]["name"]
    key = {"algorithm": "ECDSA", "size": 256}
    requests = [
        {"kind": "Issuer", "metadata": {"name": "pg-selfsigned"}, "spec": {"selfSigned": {}}},
        {"kind": "Certificate", "metadata": {"name": f"{name}-ca"},
         "spec": {"isCA": True, "commonName": name, "secretName": "ca", "privateKey": key,
                  "duration": "87600h", "issuerRef": {"name": "pg-selfsigned"}}},
        {"kind": "Issuer", "metadata": {"name": "pg-ca"}, "spec": {"ca": {"secretName": "ca"}}},
        {"kind": "Certificate", "metadata": {"name": f"{name}-server"},
         "spec": {"commonName": f"{name}-rw", "dnsNames": cnpg_server_names(pg[0], cluster.namespace),
                  "usages": ["server auth", "digital signature", "key encipherment"],
                  "secretName": "server", "privateKey": key, "issuerRef": {"name": "pg-ca"}}}]
    try:
        issued = {s["metadata"]["name"]: s["stringData"] for s in issue_certificates(requests, work)}
    except CertManagerError as e:
        fail(f"the Cluster's certificates: {e}")
    cluster.objects.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{name}-ca"},
                            "stringData": {"ca.crt": issued["ca"]["tls.crt"],
                                           "ca.key": issued["ca"]["tls.key"]}})
    uid = int(run([cluster.docker, "run", "--rm", "--entrypoint", "id", image, "-u", "postgres"]).stdout.split()[-1])
    directory = os.path.join(work, "postgres-tls")
    os.makedirs(directory)
    for file in ("tls.crt", "tls.key"):
        path = os.path.join(directory, file)
        with open(path, "w") as f:
            f.write(issued["server"][file])
        os.chown(path, uid, -1)
        os.chmod(path, 0o600)
    os.chmod(directory, 0o755)
    return directory


def start_postgres(cluster, image, tls_dir=None):
    """PostgreSQL 15 in a container, reachable by the names the overlay
    dials; with tls_dir (issue_cnpg_tls), serving TLS with its
    certificate as the Cluster's instances do."""
    names = ["omniforge-db"]
    for pg in cluster.of_kind("Cluster"):
        name = f"{pg['metadata']['name']}-rw"
        names += [name, f"{name}.{cluster.namespace}", f"{name}.{cluster.namespace}.svc",
                  f"{name}.{cluster.namespace}.svc.cluster.local"]
    args = [cluster.docker, "run", "-d", "--name", f"{cluster.network}-postgres", "--network",
            cluster.network, "-e", "POSTGRES_USER=postgres", "-e", f"POSTGRES_PASSWORD={PG_PASSWORD}"]
    for name in names:
        args += ["--network-alias", name]
    command = []
    if tls_dir:
        args += ["--mount", f"type=bind,source={tls_dir},target=/etc/postgres-tls,readonly"]
        command = ["postgres", "-c", "ssl=on", "-c", "ssl_cert_file=/etc/postgres-tls/tls.crt",
                   "-c", "ssl_key_file=/etc/postgres-tls/tls.key"]
    cluster.containers.append(f"{cluster.network}-postgres")
    run(args + [image] + command)
    deadline = time.monotonic() + 60
    while run([cluster.docker, "exec", f"{cluster.network}-postgres", "pg_isready", "-U", "postgres"],
              check=False).returncode != 0 or \
            run([cluster.docker, "exec", f"{cluster.network}-postgres", "psql", "-U", "postgres", "-c",
                 "SELECT 1"], check=False).returncode != 0:
        if time.monotonic() > deadline:
            fail("PostgreSQL did not start:\n" + cluster.logs("postgres"))
        time.sleep(0.5)


NOT_VERIFIED = "database connection not verified"


def check_database_tls(cluster, deployments, job_logs):
    """With the CloudNativePG component: every connection of each database
    service's role is on TLS (pg_stat_ssl), and neither a service nor a Job
    logged that its database connection is not verified (its DSN says
    verify-full). Without it (this test's external DSNs leave sslmode at
    libpq's default), each database service must log that warning."""
    logs = dict(job_logs)
    for deployment in deployments:
        name = deployment["metadata"]["name"]
        logs[name] = cluster.logs(name, lines="all")
    database_services = [n for n in logs if any(s in n for s in ("conversation", "executor", "orchestrator"))]
    if not cluster.of_kind("Cluster"):
        silent = [n for n in database_services if NOT_VERIFIED not in logs[n]]
        if silent:
            fail(f"{', '.join(silent)}: no '{NOT_VERIFIED}' warning for a DSN without verify-full")
        log(f"without verify-full, {', '.join(sorted(database_services))} warn '{NOT_VERIFIED}'")
        return
    rows = cluster.psql("SELECT a.usename, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)"
                        " WHERE a.datname = 'omniforge' AND a.usename IS NOT NULL").split()
    on_ssl = {}
    for row in rows:
        role, ssl = row.split("|")
        on_ssl.setdefault(role, set()).add(ssl)
    for service in ("conversation", "executor", "orchestrator"):
        role = f"omniforge_{service}"
        if on_ssl.get(role) != {"t"}:
            fail(f"{role}'s connections are not all on TLS (pg_stat_ssl.ssl: {sorted(on_ssl.get(role, []))})")
    warned = [n for n, text in logs.items() if NOT_VERIFIED in text]
    if warned:
        fail(f"{', '.join(warned)}: '{NOT_VERIFIED}':\n" + "\n".join(logs[n] for n in warned))
    log(f"every service's connection on TLS (pg_stat_ssl), none warns '{NOT_VERIFIED}'")


def wait_ready(cluster, deployments):
    """Every pod's readiness probe passes (90 s at most); then its startup
    and liveness probes, run once, pass too."""
    pending = {d["metadata"]["name"]: d["spec"]["template"] for d in deployments}
    last = {}
    deadline = time.monotonic() + 90
    while pending:
        for name, template in list(pending.items()):
            passed, last[name] = cluster.probe(name, template, "readinessProbe")
            if passed:
                del pending[name]
        if pending and time.monotonic() > deadline:
            fail("not ready after 90 s: " + ", ".join(
                f"{n} (its probe: {last[n].strip()}):\n{cluster.logs(n)}" for n in pending))
        time.sleep(0.5)
    for deployment in deployments:
        name, template = deployment["metadata"]["name"], deployment["spec"]["template"]
        for kind in ("startupProbe", "livenessProbe"):
            if kind in template["spec"]["containers"][0]:
                passed, output = cluster.probe(name, template, kind)
                if not passed:
                    fail(f"{name}: its {kind} fails on a ready pod: {output}")


def public_tls(cluster, orchestrator, work):
    """chat()'s TLS options for the orchestrator's port: none when it
    serves plaintext; else the CA of its certificate's Secret and a name of
    that certificate (its first dnsName)."""
    files, secret = cluster.tls_files(orchestrator["spec"]["template"], "OMNIFORGE_SERVER_TLS_CERT_FILE")
    if files is None:
        return {}
    certificate = next((c for c in cluster.of_kind("Certificate") if c["spec"]["secretName"] == secret), None)
    if certificate is None or not certificate["spec"].get("dnsNames") or "ca.crt" not in files:
        fail(f"the orchestrator serves TLS with Secret {secret}, which no Certificate with dnsNames makes")
    path = os.path.join(work, "orchestrator-ca.crt")
    with open(path, "w") as f:
        f.write(files["ca.crt"])
    log(f"the chat turn over TLS, the orchestrator verified as {certificate['spec']['dnsNames'][0]}")
    return {"tls_ca": path, "tls_server_name": certificate["spec"]["dnsNames"][0]}


def check_mutual_tls(cluster, deployments, orchestrator, required):
    """Each service that requires client certificates, called from the
    orchestrator's container at the address the orchestrator dials: served
    with the orchestrator's certificate, refused in plaintext and over TLS
    without a client certificate. With `required`, every service but the
    orchestrator must be one."""
    caller = orchestrator["spec"]["template"]["spec"]["containers"][0]
    env = cluster.environment(caller)
    checked = []
    for deployment in deployments:
        name = deployment["metadata"]["name"]
        if "orchestrator" in name:
            continue
        if not cluster.environment(deployment["spec"]["template"]["spec"]["containers"][0]).get(
                "OMNIFORGE_SERVER_TLS_CLIENT_CA_FILE"):
            if required:
                fail(f"{name} does not require client certificates (server.tls_client_ca_file)")
            continue
        address = env.get(f"OMNIFORGE_DOWNSTREAM_{name.removeprefix('omniforge-').upper()}", "")
        if not address:
            fail(f"{name} requires client certificates, and the orchestrator does not call it")
        ca = env.get("OMNIFORGE_CLIENT_TLS_CA_FILE")
        cert, key = env.get("OMNIFORGE_CLIENT_TLS_CERT_FILE"), env.get("OMNIFORGE_CLIENT_TLS_KEY_FILE")
        if not (ca and cert and key):
            fail(f"the orchestrator calls {name}, which requires a client certificate, without one")
        health = lambda *tls: run([cluster.docker, "exec", f"{cluster.network}-{orchestrator['metadata']['name']}",
                                   "omniforge", "--server", address, "--timeout", "5", *tls, "health"],
                                  check=False, timeout=30)
        served = health("--tls-ca", ca, "--tls-cert", cert, "--tls-key", key)
        if served.returncode != 0:
            fail(f"{name} at {address} refuses the orchestrator's certificate: {served.stdout}")
        for what, tls in (("a plaintext call", ()), ("a TLS call without a client certificate", ("--tls-ca", ca))):
            refused = health(*tls)
            if refused.returncode == 0:
                fail(f"{name} at {address} served {what}: mutual TLS is not on")
        checked.append(name)
    if checked:
        log(f"mutual TLS on: {', '.join(checked)} serve the orchestrator's certificate and refuse "
            "plaintext calls and TLS calls without a client certificate")


def main():
    mutual_tls = "--mutual-tls" in sys.argv[3:]
    if len(sys.argv) != 3 + mutual_tls:
        print(__doc__, file=sys.stderr)
        return 2
    directory, bin_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    started = time.monotonic()
    kubectl = find_kubectl()
    docker = report.docker()
    objects = render(kubectl, directory)
    postgres_image = report.images(docker)
    work = tempfile.mkdtemp(prefix="omniforge-pod-smoke-")
    os.chmod(work, 0o755)
    secrets, passwords, key = make_secrets(kubectl, bin_dir, work, "omniforge-db")
    cluster = Cluster(objects + secrets, docker, work)
    try:
        issued = issue_certificates(objects, work)
    except CertManagerError as e:
        fail(f"cert-manager would not issue the certificates: {e}")
    cluster.objects += issued
    # The image the overlay pins, as a registry would serve it: the one just
    # built, under a repository of the test's own (omniforge-smoke:<tag>),
    # so that no image of the machine's is retagged.
    containers = [c for o in cluster.objects if o["kind"] in ("Deployment", "StatefulSet", "Job")
                  for c in o["spec"]["template"]["spec"]["containers"]]
    images = sorted({c["image"] for c in containers})
    for container in containers:
        name = container["image"].rsplit("/", 1)[-1]
        if ":" not in name or name.endswith(":latest"):
            fail(f"{container['image']}: not pinned to a tag")
        container["image"] = f"omniforge-smoke:{name.split(':', 1)[1]}"
    smoke_images = sorted({c["image"] for c in containers})
    for image in smoke_images:
        run([docker, "tag", "omniforge:latest", image])
    cluster.images = smoke_images
    run([docker, "network", "create", cluster.network])
    try:
        start_postgres(cluster, postgres_image, issue_cnpg_tls(cluster, postgres_image, work))
        emulated = prepare_database(cluster, passwords)
        log(f"{os.path.relpath(directory, ROOT)}: namespace {cluster.namespace}, {emulated}, image {images}")

        job_logs = {}
        for job in cluster.of_kind("Job"):
            name = job["metadata"]["name"]
            result = cluster.run_pod(name, job["spec"]["template"], detach=False)
            if result.returncode != 0:
                fail(f"Job {name} failed:\n{result.stdout}")
            job_logs[name] = result.stdout
            log(f"Job {name} completed")

        port = free_port()
        deployments = cluster.of_kind("Deployment") + cluster.of_kind("StatefulSet")
        for deployment in deployments:
            name = deployment["metadata"]["name"]
            template = deployment["spec"]["template"]
            publish = None
            if "orchestrator" in name:
                publish = (cluster.grpc_port(template), port)
            result = cluster.run_pod(name, template, publish=publish,
                                     claims=deployment["spec"].get("volumeClaimTemplates") or [])
            if result.returncode != 0:
                fail(f"{name} did not start:\n{result.stdout}")
        wait_ready(cluster, deployments)
        ready_seconds = time.monotonic() - started
        kinds = sorted({"exec" if "exec" in d["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
                        else "gRPC" for d in deployments})
        log(f"{len(deployments)} pods ready, their {'/'.join(kinds)} probes passing "
            f"({ready_seconds:.0f} s from the start)")

        orchestrator = next(d for d in deployments if "orchestrator" in d["metadata"]["name"])
        tls = public_tls(cluster, orchestrator, work)
        if mutual_tls and not tls:
            fail("the orchestrator serves plaintext (no server.tls_cert_file)")
        code, events, stderr = chat(bin_dir, port, key, "list my agents", **tls)
        if code != 0 or not stored_reply(events):
            fail(f"the chat turn was not answered and stored (exit {code}): {events} {stderr}\n" +
                 cluster.logs(next(d["metadata"]["name"] for d in deployments
                                   if "orchestrator" in d["metadata"]["name"])))
        logins = cluster.psql("SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = 'omniforge'"
                              " AND usename IS NOT NULL").split()
        for service in ("conversation", "executor", "orchestrator"):
            if f"omniforge_{service}" not in logins:
                fail(f"{service} is not logged in as omniforge_{service}: {logins}")
        # The sandbox servers the executor starts to list their tools (the
        # `_catalog` session), with their database and master key.
        if "omniforge_sandbox" not in logins:
            fail(f"no sandbox server is logged in as omniforge_sandbox: {logins}\n" +
                 cluster.logs(next(d["metadata"]["name"] for d in deployments
                                   if "executor" in d["metadata"]["name"]), lines=200))
        if "omniforge" in logins:
            fail(f"a service is logged in as the owner: {logins}")
        # The orchestrator's own connections: its flows, plans, usage and the
        # turn bus (LISTEN) that lets another replica cancel a turn.
        listening = cluster.psql("SELECT count(*) FROM pg_stat_activity WHERE usename ="
                                 " 'omniforge_orchestrator' AND query ILIKE 'LISTEN%'").strip()
        if listening in ("", "0"):
            fail("the orchestrator does not listen on the turn bus: it runs without its database")
        log(f"a chat turn answered and stored; the orchestrator on the turn bus; logins: {sorted(logins)}")
        # Each pod's environment names only keys its service reads, and each
        # service has its caller-assertion keys (it believes no identity it
        # is merely told; the turn above went through with signed calls).
        for deployment in deployments:
            name = deployment["metadata"]["name"]
            pod_log = cluster.logs(name, lines=1000)
            stray = unknown_environment(pod_log)
            if stray:
                fail(f"{name}: its environment holds variables that name no key of it: {stray}")
            if identity_unconfigured(pod_log):
                fail(f"{name}: runs without its caller-assertion keys: {identity_unconfigured(pod_log)}")
        check_database_tls(cluster, deployments, job_logs)
        check_mutual_tls(cluster, deployments, orchestrator, mutual_tls)
    finally:
        cluster.teardown()
        shutil.rmtree(work, ignore_errors=True)
    total = time.monotonic() - started
    print(f"RESULT overlay={os.path.basename(directory)} pods={len(deployments)} "
          f"ready_s={ready_seconds:.0f} total_s={total:.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
