"""What the tests that run the deployments in Docker share
(compose_test.py, pod_smoke_test.py): reporting, commands, the Docker
engine and its images, and chat turns with the command-line client on the
host."""
import json
import os
import socket
import subprocess

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# ctest's SKIP_RETURN_CODE of the docker-labelled tests.
SKIP = 77


class Report:
    """Progress lines and the failure that ends the test, under a prefix."""

    def __init__(self, prefix):
        self.prefix = prefix

    def log(self, message):
        print(f"{self.prefix}: {message}", flush=True)

    def fail(self, message):
        print(f"{self.prefix}: FAILED: {message}", flush=True)
        raise SystemExit(1)

    def run(self, args, check=True, capture=True, input=None, env=None, timeout=600):
        """Runs a command in the repository root; with check, its failure
        (and its output) fails the test."""
        result = subprocess.run(args, cwd=ROOT, input=input, env=env, timeout=timeout, text=True,
                                stdout=subprocess.PIPE if capture else None,
                                stderr=subprocess.STDOUT if capture else None)
        if check and result.returncode != 0:
            self.fail(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout or ''}")
        return result

    def docker(self):
        """The docker client, with an engine answering (scripts/docker.sh).
        Without one that can be had here (not root, no docker.io) the test
        is skipped (exit 77) saying why; CI (.ci/run) starts one first."""
        ensure = self.run(["bash", "scripts/docker.sh", "ensure"], check=False)
        if ensure.returncode != 0:
            print(f"{self.prefix}: SKIPPED: no Docker engine: {ensure.stdout.strip()}", flush=True)
            raise SystemExit(SKIP)
        return self.run(["bash", "scripts/docker.sh", "client"]).stdout.strip()

    def images(self, docker):
        """Checks that omniforge:latest is built; returns the PostgreSQL
        image to use: postgres:15 when the engine has it, else
        omniforge-postgres:15."""
        have = lambda image: self.run([docker, "image", "inspect", image], check=False).returncode == 0
        if not have("omniforge:latest"):
            self.fail("omniforge:latest is not built (make image)")
        for image in ("postgres:15", "omniforge-postgres:15"):
            if have(image):
                return image
        self.fail("neither postgres:15 nor omniforge-postgres:15 is there "
                  "(make image ARGS='omniforge postgres')")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chat(bin_dir, port, key, message, conversation="", tls_ca="", tls_server_name=""):
    """One turn with the client on the host against the orchestrator on
    127.0.0.1:port; with tls_ca, over TLS, the server's certificate
    verified against that CA file and checked for tls_server_name (default:
    127.0.0.1). Returns (exit code, events, stderr)."""
    args = [os.path.join(bin_dir, "omniforge"), "--timeout", "30", "--json"]
    if tls_ca:
        args += ["--tls-ca", tls_ca]
    if tls_server_name:
        args += ["--tls-server-name", tls_server_name]
    args += ["chat", "--chat-server", f"127.0.0.1:{port}", "--api-key", key, message]
    if conversation:
        args += ["--conversation", conversation]
    result = subprocess.run(args, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=60)
    events = []
    for line in result.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return result.returncode, events, result.stderr


def acknowledged(events):
    """A turn acknowledged its user message when it reached `done` without a
    fatal error: the message was stored or fsynced to the spool first."""
    done = any("done" in e for e in events)
    fatal = any(e.get("error", {}).get("fatal") for e in events)
    return done and not fatal


def stored_reply(events):
    """The id of the turn's stored reply ('' when there is none)."""
    return next((e["done"].get("assistant_message_id", "") for e in events if "done" in e), "")


# What a service logs at start when its environment holds OMNIFORGE_*
# variables that name no key of its configuration (libs/core/config.h).
UNKNOWN_ENVIRONMENT = "name no configuration key of this service"


def unknown_environment(log_text):
    """The variables a service's log says name no key of it."""
    found = []
    for line in log_text.splitlines():
        if UNKNOWN_ENVIRONMENT in line:
            try:
                found += json.loads(line[line.index("{"):]).get("variables", "").split(",")
            except (ValueError, json.JSONDecodeError):
                found.append(line)
    return found


# What a service logs at start when it would believe identity metadata
# alone, or sign none of its calls (libs/core/caller_identity.cc).
IDENTITY_UNCONFIGURED = ("identity.trusted_keys is empty", "identity.signing_key_file is empty")


def identity_unconfigured(log_text):
    """The warnings a service's log holds about caller-assertion keys it
    was not given."""
    return [w for w in IDENTITY_UNCONFIGURED if w in log_text]
