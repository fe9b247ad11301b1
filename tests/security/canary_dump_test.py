#!/usr/bin/env python3
"""Nothing a user wrote is stored in the clear: the canary dump test.

Starts a stack of its own (scripts/stack.sh on free ports, its own
PostgreSQL cluster and state directory), walks the demo's journeys with a
unique canary string in the user's words (an agent drafted, revised,
approved and run; a recap; a risky action cancelled; a request of two
parts; a plan carried out by executor agents; a message written while the
conversation service is down, so it waits in the orchestrator's spool),
checks through the API that the words were stored, then dumps the whole
database (pg_dump) and the spool directory and looks for the canary as
text, as hex and as base64.

Names are identifiers and stay readable (docs/security.md): the canary is
put where a user's words go, not in a name. Found anywhere, it fails the
test.

    canary_dump_test.py BUILD_DIR
"""
import base64
import os
import random
import re
import shutil
import socket
import string
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Tables that may still hold users' words in the clear: none.
NOT_YET_SEALED = set()


def free_block(n):
    while True:
        base = random.randrange(20000, 32000)
        ok = True
        for port in range(base, base + n):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base


def forms(canary):
    """The canary as it could appear in a dump: text, hex (bytea), base64
    at each of the three byte alignments (the characters that depend on its
    neighbours left out)."""
    raw = canary.encode()
    found = {"text": canary, "hex": raw.hex()}
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        first_group = (shift + 2) // 3  # the first 3-byte group of canary bytes only
        last_group = (shift + len(raw)) // 3
        found[f"base64+{shift}"] = encoded[first_group * 4:last_group * 4]
    return found


class Stack:
    def __init__(self, build_dir, work):
        self.build_dir = build_dir
        self.env = dict(os.environ)
        self.env.update({
            "BUILD_DIR": build_dir,
            "OMNIFORGE_STATE_DIR": os.path.join(work, "state"),
            "OMNIFORGE_PG_DIR": os.path.join(work, "pg"),
            "OMNIFORGE_PORT_BASE": str(free_block(4)),
            "OMNIFORGE_METRICS_PORT_BASE": str(free_block(4)),
            "OMNIFORGE_PG_PORT": str(free_block(1)),
        })
        self.state = self.env["OMNIFORGE_STATE_DIR"]
        base = int(self.env["OMNIFORGE_PORT_BASE"])
        self.addr = {"orchestrator": base, "conversation": base + 1, "executor": base + 3}

    def stack(self, *args):
        subprocess.run(["bash", os.path.join(ROOT, "scripts/stack.sh"), *args], env=self.env,
                       check=True, stdout=subprocess.DEVNULL, timeout=180)

    def cli(self, *args, operator=False, check=True):
        env = dict(self.env)
        env["OMNIFORGE_ADDR"] = f"127.0.0.1:{self.addr['orchestrator']}"
        env["OMNIFORGE_CONVERSATION_ADDR"] = f"127.0.0.1:{self.addr['conversation']}"
        env["OMNIFORGE_EXECUTOR_ADDR"] = f"127.0.0.1:{self.addr['executor']}"
        with open(os.path.join(self.state, "demo.key")) as f:
            env["OMNIFORGE_API_KEY"] = f.read().strip()
        command = [os.path.join(self.build_dir, "bin", "omniforge")]
        if operator:
            command += ["--identity-key", os.path.join(self.state, "operator-identity.key"),
                        "--identity-key-id", "operator", "--tenant", "demo", "--user", "demo-user"]
        result = subprocess.run(command + list(args), env=env, capture_output=True, text=True,
                                timeout=60)
        if check and result.returncode != 0:
            raise RuntimeError(f"omniforge {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def chat(self, message, conversation=None, extra=()):
        args = ["chat", *extra] + (["--conversation", conversation] if conversation else [])
        return self.cli(*args, message)

    def pid(self, service):
        with open(os.path.join(self.state, "run", f"{service}.pid")) as f:
            return int(f.read().strip())


def conversation_of(output):
    m = re.search(r"^· conversation (\S+)", output, re.M)
    return m.group(1) if m else None


def journeys(stack, canary):
    """The demo's journeys with the canary in the user's words; returns the
    conversations they used."""
    seeds = [
        ("create_project", '{"name": "Website relaunch", "description": "The new marketing site"}'),
        ("create_agent", '{"name": "invoice-chaser", "description": "Lists overdue invoices", '
                         '"steps": [{"tool": "list_agents", "arguments": {}}]}'),
    ]
    for i, (tool, args) in enumerate(seeds):
        stack.cli("tools", "invoke", tool, args, "--idempotency-key", f"canary-seed-{i}",
                  operator=True)
    out = stack.chat(f"our Monday Notion updates take hours, ticket {canary} explains why — can you help?")
    first = conversation_of(out)
    stack.chat(f"make it run every monday at 9am and send it to the team channel ({canary})", first)
    stack.chat("yes, do that", first)
    stack.chat(f"where were we with {canary}?", first)
    out = stack.chat(f"list my agents, the ones for {canary}")
    second = conversation_of(out)
    stack.chat("run invoice-chaser", second)
    stack.chat("yes", second)
    stack.chat("delete invoice-chaser", second)
    stack.chat(f"cancel, keep it for {canary}", second)
    out = stack.chat(f"can one of my agents chase the overdue invoices of {canary} and also post "
                     "a weekly summary to slack?")
    third = conversation_of(out)
    stack.chat("2", third)
    listed = stack.cli("tools", "invoke", "search_projects", '{"query": "Website relaunch"}',
                       operator=True)
    project = re.search(r'"id": "([0-9a-f-]{36})"', listed).group(1)
    out = stack.chat(f"how is this project doing? {canary} asks",
                     extra=("--context", "project_audit", "--entity", project))
    return [c for c in (first, second, third, conversation_of(out)) if c]


def spooled_while_storage_is_down(stack, canary, conversation, work):
    """A message written while the conversation service is down waits in the
    spool; returns a copy of the spool directory taken then."""
    os.kill(stack.pid("conversation"), 9)
    time.sleep(0.5)
    stack.cli("chat", "--conversation", conversation,
              f"a note for later: {canary} while storage is down", check=False)
    copy = os.path.join(work, "spool-copy")
    shutil.copytree(os.path.join(stack.state, "spool"), copy)
    stack.stack("up")  # starts the conversation service again; the spool drains
    return copy


def occurrences(text, canary_forms):
    return {name: text.count(form) for name, form in canary_forms.items() if text.count(form)}


def main():
    build_dir = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="omniforge-canary-")
    os.chmod(work, 0o755)  # PostgreSQL runs as its own user
    stack = Stack(build_dir, work)
    canary = "QZ" + "".join(random.choice(string.ascii_uppercase + string.digits) for _ in range(14))
    failures = []
    try:
        stack.stack("up")
        conversations = journeys(stack, canary)
        spool = spooled_while_storage_is_down(stack, canary, conversations[0], work)
        # The words were stored: the API reads them back (after the spool drained).
        shown = ""
        for _ in range(100):
            shown = stack.cli("conversations", "show", conversations[0], "--limit", "50",
                              operator=True)
            if "while storage is down" in shown:
                break
            time.sleep(0.2)
        if canary not in shown or "while storage is down" not in shown:
            failures.append("the conversation does not read back the canary words (were they stored?)")

        canary_forms = forms(canary)
        spooled = ""
        for dirpath, _, files in os.walk(spool):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as f:
                    spooled += f.read().decode("latin-1")
        if not spooled:
            failures.append("the spool held nothing while storage was down")
        if occurrences(spooled, canary_forms):
            failures.append(f"the spool holds the canary: {occurrences(spooled, canary_forms)}")

        dump = subprocess.run(
            ["pg_dump", "-h", "127.0.0.1", "-p", stack.env["OMNIFORGE_PG_PORT"], "-U", "omniforge",
             "omniforge"], capture_output=True, text=True, check=True, timeout=120).stdout
        tables, table = {}, "(schema)"
        for line in dump.splitlines():
            m = re.match(r"^COPY (\S+) ", line)
            if m:
                table = m.group(1)
            elif line == "\\.":
                table = "(schema)"
            found = occurrences(line, canary_forms)
            for name, count in found.items():
                tables.setdefault(table, {}).setdefault(name, 0)
                tables[table][name] += count
        print(f"canary {canary}: {len(dump)} bytes of dump, {len(spooled)} bytes of spool")
        for table, found in sorted(tables.items()):
            allowed = table in NOT_YET_SEALED
            print(f"{'known' if allowed else 'FAIL '} {table}: {found}"
                  + ("  (not sealed yet: docs/security.md)" if allowed else ""))
            if not allowed:
                failures.append(f"{table} holds the canary: {found}")
    finally:
        try:
            stack.stack("down")
        finally:
            if not os.environ.get("KEEP_CANARY_WORK"):
                shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL " + failure)
    print("ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
