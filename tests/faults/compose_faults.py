#!/usr/bin/python3
"""The fault-injection suite against the docker-compose stack: brings
docker-compose.yml up (its own project, secrets and published port), runs
fault_injection_test against it (ComposeTarget: `docker kill` of each
service's container and of PostgreSQL's, then `docker start`), prints its
output with the fault table, and takes the stack down with its volumes.

    compose_faults.py BIN_DIR FAULT_TEST

BIN_DIR holds the built binaries (init-secrets.sh uses them), FAULT_TEST is
the fault_injection_test binary. The images come first
(`make image ARGS='omniforge postgres'`; ctest's deploy_images does it).
Needs a Docker engine (scripts/docker.sh starts dockerd as root; without
one the test is skipped, exit 77) and docker-compose. Exits with the
suite's status.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy"))

from compose_stack import Stack, check_nothing_left  # noqa: E402
from harness import Report  # noqa: E402

SERVICES = ("postgres", "conversation", "intent", "executor", "orchestrator")

report = Report("compose-faults")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir, fault_test = (os.path.abspath(a) for a in sys.argv[1:])
    docker = report.docker()
    if shutil.which("docker-compose") is None:
        report.fail("docker-compose is not installed (make deps)")
    postgres_image = report.images(docker)
    secrets_dir = os.path.join(os.path.dirname(bin_dir), "compose-faults-secrets")
    shutil.rmtree(secrets_dir, ignore_errors=True)
    report.run(["bash", "deploy/docker/init-secrets.sh", "-d", secrets_dir],
               env=dict(os.environ, OMNIFORGE_BIN_DIR=bin_dir))
    stack = Stack(report, bin_dir, docker, secrets_dir, (["docker-compose"], {}))
    stack.project = f"offaults{os.getpid()}"
    stack.env["COMPOSE_PROJECT_NAME"] = stack.project
    stack.env["OMNIFORGE_POSTGRES_IMAGE"] = postgres_image
    try:
        if stack.compose("up", "-d", "--no-build", check=False, timeout=300).returncode != 0:
            stack.dump_logs()
            report.fail("compose up -d failed (the services' logs above)")
        stack.wait_healthy(list(SERVICES))
        report.log(f"stack up and healthy on 127.0.0.1:{stack.port}")
        env = dict(os.environ,
                   OMNIFORGE_FAULTS_COMPOSE_ADDRESS=f"127.0.0.1:{stack.port}",
                   OMNIFORGE_FAULTS_COMPOSE_KEY_FILE=os.path.join(secrets_dir, "demo.key"),
                   OMNIFORGE_FAULTS_COMPOSE_DOCKER=docker,
                   OMNIFORGE_FAULTS_COMPOSE_CONTAINERS=",".join(
                       f"{s}={stack.container(s)}" for s in SERVICES))
        # The suite's output goes straight to ctest's log (the FAULT table).
        code = subprocess.run([fault_test, "--gtest_filter=FaultInjectionTest.*"], env=env,
                              timeout=1200).returncode
    finally:
        stack.compose("down", "-v", "--remove-orphans", check=False, timeout=300)
    check_nothing_left(report, docker, stack.project)
    shutil.rmtree(secrets_dir, ignore_errors=True)
    report.log(f"fault_injection_test exited {code}; compose down -v left nothing")
    return code


if __name__ == "__main__":
    sys.exit(main())
