#!/usr/bin/python3
"""Runs docker-compose.yml for real: builds the images, brings the stack up,
chats through the published port, kills containers during turns and counts
what happened to the messages the stack acknowledged, then tears it down.

    compose_test.py BIN_DIR [--v2]

BIN_DIR holds the built binaries: the command-line client on the host
talks to the published orchestrator port. Without --v2 the stack runs with
`docker-compose` (Debian's v1) and every step below; with --v2 it runs with
`docker compose` (v2, Docker's CLI plugin: installed, or the one
scripts/deps.sh puts in tests/deploy/.tools/cli-plugins) and the steps
that depend on the compose tool: up and healthy, each service's role, a
turn answered and stored, a kill of the conversation service (the spool's
named volume), and down -v. The images come first
(`make image ARGS='omniforge postgres'`; ctest's deploy_images does it):
omniforge:latest, and PostgreSQL as postgres:15 when the engine has it,
else omniforge-postgres:15 (PostgreSQL from Debian's packages,
deploy/docker/postgres). Needs a Docker engine (scripts/docker.sh starts
dockerd as root) and the compose tool.

What must hold, each step printed as it passes:
  - the stack comes up healthy (migrations of the three schemas, each
    service logged in as its own non-superuser role, no OMNIFORGE_*
    variable a service does not know in its environment);
  - a chat turn with the demo key is answered, and the user's message and
    the reply are stored (read back from the conversation service, with a
    caller assertion signed by the orchestrator's key; without one the
    conversation service refuses the call);
  - while turns run, a kill of the orchestrator with the conversation
    service down (so its spool holds messages) loses no acknowledged
    message and stores none twice (the spool on its named volume drains
    once the service is back); a kill of each container alone, with the
    order and recovery time checked too, is the fault suite's
    (tests/faults/compose_faults.py, ctest faults_compose);
  - an orchestrator stopped with SIGTERM once the conversation service is
    back (a rolling update) has stored everything it acknowledged and left
    its spool empty by the time it has exited;
  - `docker-compose down -v` leaves no container, volume or network.
The last line is `RESULT ...` with the counts and the times.
"""
import atexit
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time

from compose_stack import Stack, check_nothing_left
from harness import (ROOT, SKIP, Report, acknowledged, identity_unconfigured, stored_reply,
                     unknown_environment)

# Each phase's conversation stays under one ListMessages page
# (compose_stack.MAX_MESSAGES): its first turn and at most MAX_TURNS notes,
# two messages each.
MAX_TURNS = 45

report = Report("compose-test")
log, fail, run = report.log, report.fail, report.run


def session_id(events):
    for e in events:
        if "session" in e:
            return e["session"].get("conversation_id", "")
    return ""


class Turns(threading.Thread):
    """Sends numbered notes to one conversation, one turn after another and
    at most one every PACE seconds, until stopped; records which the stack
    acknowledged and when each turn started."""

    PACE = 0.15

    def __init__(self, stack, conversation, phase):
        super().__init__(daemon=True)
        self.stack, self.conversation, self.phase = stack, conversation, phase
        self.stop = threading.Event()
        self.sent, self.acked, self.started, self.ended = [], [], [], []

    def run(self):
        i = 0
        while not self.stop.is_set() and i < MAX_TURNS:
            i += 1
            text = f"note {self.phase} {i}: remember the ferry leaves at {random.randint(1, 12)}pm"
            self.sent.append(text)
            begun = time.monotonic()
            self.started.append(begun)
            events, code = self.stack.chat(text, self.conversation)
            self.ended.append(time.monotonic())
            if code == 0 and acknowledged(events):
                self.acked.append(text)
            time.sleep(max(0.0, self.PACE - (time.monotonic() - begun)))


def count_stored(stack, conversation, texts, seconds):
    """Waits up to `seconds` for every text to be stored; returns
    (missing, duplicated) once all are there or time is up."""
    deadline = time.monotonic() + seconds
    while True:
        stored = stack.messages(conversation)
        if stored is not None:
            contents = [m.get("content", "") for m in stored if m.get("role") in ("ROLE_USER", "user")]
            missing = [t for t in texts if contents.count(t) == 0]
            duplicated = [t for t in texts if contents.count(t) > 1]
            if not missing or time.monotonic() > deadline:
                return missing, duplicated
        elif time.monotonic() > deadline:
            return list(texts), []
        time.sleep(0.5)


def kill_phase(stack, victims, then_stop_orchestrator=False):
    """A conversation of its own; turns run in it; each victim is killed in
    order while they do; then the killed containers are started again.
    With then_stop_orchestrator, once they are back the orchestrator gets
    SIGTERM (`docker stop`, as in a rolling update), and what it
    acknowledged must be stored by the time it has exited, its spool empty.
    Returns (acked, sent, missing, duplicated)."""
    phase = "+".join(victims) + ("+sigterm_orchestrator" if then_stop_orchestrator else "")
    events, code = stack.chat(f"list my agents ({phase})")
    conversation = session_id(events)
    if code != 0 or not conversation:
        fail(f"kill {phase}: the conversation's first turn failed: {events}")
    turns = Turns(stack, conversation, phase)
    turns.start()
    time.sleep(1.0)
    killed_at = None
    for victim in victims:
        stack.kill(victim)
        killed_at = killed_at or time.monotonic()
        time.sleep(2.0)
    turns.stop.set()
    turns.join(timeout=90)
    # Turns in flight at the kill or started after it.
    after = sum(1 for end in turns.ended if end >= killed_at)
    if after < 1:
        fail(f"kill {phase}: no turn ran at or after the kill; the kill was not during turns")
    for victim in victims:
        stack.start(victim)
    if then_stop_orchestrator:
        stack.wait_healthy(["conversation"])
        run([stack.docker, "stop", "-t", "20", stack.container("orchestrator")])
        missing, duplicated = count_stored(stack, conversation, turns.acked, 0)
        left = spool_bytes(stack)
        if left:
            fail(f"{phase}: the stopped orchestrator left {left} bytes in its spool")
        stack.start("orchestrator")
    stack.wait_healthy(["conversation", "intent", "executor", "orchestrator"])
    if not then_stop_orchestrator:
        missing, duplicated = count_stored(stack, conversation, turns.acked, 90)
    log(f"kill {phase}: {len(turns.sent)} turns sent ({after} in flight at the kill or after it), {len(turns.acked)} acknowledged, "
        f"{len(missing)} of them lost, {len(duplicated)} stored twice")
    return turns.acked, turns.sent, missing, duplicated


def spool_bytes(stack):
    """The size of the orchestrator's spool file on its volume (0 when
    there is none), read by a container of the image."""
    out = run([stack.docker, "run", "--rm", "-v", f"{stack.project}_spool:/spool",
               "--entrypoint", "sh", "omniforge:latest", "-c",
               "stat -c %s /spool/appends.log 2>/dev/null || echo 0"]).stdout.strip()
    return int(out.split()[-1])


def compose_tool(v2, docker):
    """(command, environment) of the compose tool: Debian's docker-compose
    (v1), or with v2 Docker's `docker compose` plugin, from the one
    scripts/deps.sh unpacks (DOCKER_CONFIG pointing at a directory whose
    cli-plugins is it) or else the installed one. Without v2 at hand the
    v2 test is skipped, saying why."""
    if not v2:
        if shutil.which("docker-compose") is None:
            fail("docker-compose is not installed (make deps)")
        return ["docker-compose"], {}
    env = {}
    plugins = os.path.join(ROOT, "tests", "deploy", ".tools", "cli-plugins")
    if os.access(os.path.join(plugins, "docker-compose"), os.X_OK):
        config = tempfile.mkdtemp(prefix="compose-v2-")
        atexit.register(shutil.rmtree, config, True)
        os.symlink(plugins, os.path.join(config, "cli-plugins"))
        env["DOCKER_CONFIG"] = config
    version = run([docker, "compose", "version"], check=False, env=dict(os.environ, **env))
    if version.returncode != 0 or not re.search(r"version v?2\.", version.stdout):
        print(f"compose-test: SKIPPED: no docker compose v2 (make deps): {version.stdout.strip()}",
              flush=True)
        raise SystemExit(SKIP)
    log(f"with {version.stdout.strip()}")
    return [docker, "compose"], env


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--v2"):
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir = os.path.abspath(sys.argv[1])
    v2 = len(sys.argv) == 3
    docker = report.docker()
    compose = compose_tool(v2, docker)
    postgres_image = report.images(docker)

    secrets_dir = os.path.join(os.path.dirname(bin_dir), "compose-test-secrets")
    shutil.rmtree(secrets_dir, ignore_errors=True)
    run(["bash", "deploy/docker/init-secrets.sh", "-d", secrets_dir],
        env=dict(os.environ, OMNIFORGE_BIN_DIR=bin_dir))
    stack = Stack(report, bin_dir, docker, secrets_dir, compose)
    stack.env["OMNIFORGE_POSTGRES_IMAGE"] = postgres_image

    counts = {}
    started = time.monotonic()
    try:
        if stack.compose("up", "-d", "--no-build", check=False, timeout=300).returncode != 0:
            stack.dump_logs()
            fail("compose up -d failed (the services' logs above)")
        stack.wait_healthy(["postgres", "conversation", "intent", "executor", "orchestrator"])
        up_seconds = time.monotonic() - started
        log(f"stack up and healthy in {up_seconds:.0f} s on 127.0.0.1:{stack.port}")
        check_roles(stack)
        for service in ("migrate", "conversation", "intent", "executor", "orchestrator"):
            logs = run([docker, "logs", stack.container(service)]).stdout
            if unknown_environment(logs):
                fail(f"{service}: its environment holds variables that name no key of it: "
                     f"{unknown_environment(logs)}")
            if service != "migrate" and identity_unconfigured(logs):
                fail(f"{service}: runs without its caller-assertion keys: "
                     f"{identity_unconfigured(logs)}")

        events, code = stack.chat("list my agents")
        conversation = session_id(events)
        if code != 0 or not acknowledged(events) or not conversation:
            fail(f"the first chat turn was not answered (exit {code}): {events}")
        reply = "".join(e["text"].get("delta", e["text"].get("text", "")) for e in events if "text" in e)
        if not reply or not stored_reply(events):
            fail(f"the first turn has no reply or no stored reply: {events}")
        stored = stack.messages(conversation) or []
        roles = [m.get("role") for m in stored]
        if len(stored) < 2 or "list my agents" not in \
                [m.get("content") for m in stored]:
            fail(f"the first turn is not stored: {stored}")
        log(f"a chat turn answered ({len(reply)} characters) and stored ({roles})")
        told = stack.show(conversation, signed=False)
        if told.returncode == 0 or "UNAUTHENTICATED" not in told.stdout:
            fail(f"the conversation service believed a user it was merely told: {told.stdout}")
        log("a call naming the user without a signed assertion is refused (UNAUTHENTICATED)")

        # A kill of each container under load is the fault suite's
        # (faults_compose); here what depends on the compose file: the
        # spool's named volume across an orchestrator kill, and a rolling
        # update's SIGTERM.
        phases = [(["conversation", "orchestrator"], False), (["conversation"], True)]
        if v2:  # the kills are the engine's; the spool's volume is compose's
            phases = [(["conversation"], False)]
        lost_total = 0
        for victims, then_stop in phases:
            acked, sent, missing, duplicated = kill_phase(stack, victims, then_stop)
            name = "+".join(victims) + ("+sigterm_orchestrator" if then_stop else "")
            counts[name] = (len(acked), len(missing), len(duplicated))
            if not acked:
                fail(f"kill {name}: no turn was acknowledged at all")
            lost_total += len(missing) + len(duplicated)
            if missing or duplicated:
                stack.dump_logs()
                fail(f"kill {name}: lost {missing[:5]}, stored twice {duplicated[:5]}")
    finally:
        down_started = time.monotonic()
        stack.compose("down", "-v", "--remove-orphans", check=False, timeout=300)
        down_seconds = time.monotonic() - down_started
    check_nothing_left(report, docker, stack.project)
    log(f"compose down -v left nothing ({down_seconds:.0f} s)")
    shutil.rmtree(secrets_dir, ignore_errors=True)
    total = time.monotonic() - started
    summary = " ".join(f"{name.replace('+', '_')}_acked={a} {name.replace('+', '_')}_lost={m}"
                       for name, (a, m, _) in counts.items())
    print(f"RESULT compose={'v2' if v2 else 'v1'} up_s={up_seconds:.0f} total_s={total:.0f} "
          f"lost={lost_total} {summary}", flush=True)
    return 0


def check_roles(stack):
    """Each service (and the sandbox servers) is logged in as its own role:
    not a superuser, not the owner of the tables."""
    result = run([stack.docker, "exec", stack.container("postgres"), "psql", "-U", "omniforge",
                  "-d", "omniforge", "-At", "-c",
                  "SELECT usename || ' ' || r.rolsuper || ' ' || r.rolbypassrls FROM pg_stat_activity a"
                  " JOIN pg_roles r ON r.rolname = a.usename WHERE a.datname = 'omniforge'"
                  " AND a.usename <> 'omniforge' GROUP BY usename, r.rolsuper, r.rolbypassrls"])
    logins = {line.split()[0]: line.split()[1:] for line in result.stdout.split("\n") if line}
    # The sandbox servers the executor starts to list their tools (with
    # their database password and master key) count as one.
    for service in ("conversation", "executor", "orchestrator", "sandbox"):
        role = f"omniforge_{service}"
        if logins.get(role) != ["false", "false"]:
            fail(f"{service}: not logged in as {role} without superuser or BYPASSRLS: {logins}")
    owners = run([stack.docker, "exec", stack.container("postgres"), "psql", "-U", "omniforge",
                  "-d", "omniforge", "-At", "-c",
                  "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname IN"
                  " ('conversation', 'platform', 'orchestration', 'sandbox')"]).stdout.split()
    if any(o.startswith("omniforge_") for o in owners):
        fail(f"a service role owns tables: {owners}")
    log(f"services logged in as {sorted(logins)}; tables owned by {owners}")


if __name__ == "__main__":
    sys.exit(main())
