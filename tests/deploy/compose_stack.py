"""A docker-compose stack of docker-compose.yml under a project name of its
own (compose_test.py, tests/faults/compose_faults.py): its containers,
their health, kills and starts, chat turns through the published port and
the stored messages read back."""
import json
import os
import time

from harness import chat, free_port

# The most messages one ListMessages page returns (`conversations show
# --limit`).
MAX_MESSAGES = 100


class Stack:
    """One compose project of its own: its name, secrets and port."""

    def __init__(self, report, bin_dir, docker, secrets_dir, compose):
        self.report = report
        self.bin_dir = bin_dir
        self.docker = docker
        self.compose_command, compose_env = compose
        self.project = f"ofcompose{os.getpid()}"
        self.port = free_port()
        self.secrets_dir = secrets_dir
        self.ids = {}
        self.env = dict(os.environ,
                        COMPOSE_PROJECT_NAME=self.project,
                        OMNIFORGE_SECRETS_DIR=secrets_dir,
                        OMNIFORGE_PUBLISH_PORT=str(self.port),
                        OMNIFORGE_IMAGE="omniforge:latest",
                        DOCKER_HOST=os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
                        **compose_env)
        with open(os.path.join(secrets_dir, "demo.key")) as f:
            self.key = f.read().strip()

    def compose(self, *args, check=True, timeout=600):
        return self.report.run([*self.compose_command, "-p", self.project, *args], check=check, env=self.env,
                   timeout=timeout)

    def container(self, service):
        """The service's container id (kept: a kill and a start keep it, and
        docker-compose v1 takes a second or two to list it)."""
        if service not in self.ids:
            # v2 lists a container that has exited (migrate) only with -a.
            listing = ["ps", "-q"] if self.compose_command == ["docker-compose"] else ["ps", "-aq"]
            out = self.compose(*listing, service).stdout.split()
            if len(out) != 1:
                self.report.fail(f"expected one {service} container, found {out}")
            self.ids[service] = out[0]
        return self.ids[service]

    def health(self, service):
        cid = self.container(service)
        return self.report.run([self.docker, "inspect", "-f",
                    "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}", cid],
                   check=False).stdout.strip()

    def wait_healthy(self, services, seconds=120):
        deadline = time.monotonic() + seconds
        while True:
            states = {s: self.health(s) for s in services}
            if all(state == "running healthy" for state in states.values()):
                return
            if time.monotonic() > deadline:
                self.dump_logs()
                self.report.fail(f"not healthy after {seconds} s: {states}")
            time.sleep(0.5)

    def dump_logs(self):
        out = self.compose("logs", "--no-color", "--tail", "40", check=False).stdout
        print(out, flush=True)

    def kill(self, service):
        self.report.run([self.docker, "kill", self.container(service)])

    def start(self, service):
        self.report.run([self.docker, "start", self.container(service)])

    def chat(self, message, conversation=""):
        """One turn with the client on the host. Returns (events, exit code)."""
        code, events, _ = chat(self.bin_dir, self.port, self.key, message, conversation)
        return events, code

    def show(self, conversation, signed=True):
        """`omniforge conversations show` run inside the conversation
        service's container (its port is not published); signed, with the
        orchestrator's identity key given on standard input, as an operator
        would."""
        key = []
        if signed:
            key = ["--identity-key", "/dev/stdin", "--identity-key-id", "orchestrator"]
        with open(os.path.join(self.secrets_dir, "orchestrator_identity.key")) as f:
            secret = f.read() if signed else ""
        return self.report.run([self.docker, "exec", "-i", self.container("conversation"), "omniforge",
                    "--server", "127.0.0.1:50051", "--tenant", "demo", "--user", "demo-user",
                    *key, "--timeout", "10", "--json", "conversations", "show", conversation,
                    "--limit", str(MAX_MESSAGES)], check=False, input=secret)

    def messages(self, conversation):
        """The conversation's stored messages (None when they cannot be read)."""
        result = self.show(conversation)
        if result.returncode != 0:
            return None
        return parse_messages(result.stdout)


def parse_messages(text):
    """The messages of `omniforge --json conversations show`: JSON objects,
    one or more, holding a messages list."""
    decoder = json.JSONDecoder()
    found, at = [], 0
    text = text.strip()
    while at < len(text):
        value, end = decoder.raw_decode(text, at)
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
        if isinstance(value, dict):
            found.extend(value.get("messages", []))
    return found


def check_nothing_left(report, docker, project):
    """Fails the test when the compose project left a container, volume or
    network behind."""
    label = f"label=com.docker.compose.project={project}"
    left = {
        "containers": report.run([docker, "ps", "-aq", "--filter", label]).stdout.split(),
        "volumes": report.run([docker, "volume", "ls", "-q", "--filter", label]).stdout.split(),
        "networks": report.run([docker, "network", "ls", "-q", "--filter", label]).stdout.split(),
    }
    leftovers = {k: v for k, v in left.items() if v}
    if leftovers:
        report.fail(f"compose down -v left {leftovers}")
