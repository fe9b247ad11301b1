#!/usr/bin/env bash
# `make bench`: runs every benchmark and prints their RESULT lines; the
# database ones against their own PostgreSQL cluster (127.0.0.1:55434,
# durable settings). Arguments go to conversation_bench.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export OMNIFORGE_PG_PORT=55434 OMNIFORGE_PG_DIR=/tmp/omniforge-bench-pg
bash "$ROOT/scripts/pg.sh" start
trap 'bash "$ROOT/scripts/pg.sh" stop' EXIT
export OMNIFORGE_TEST_PG_DSN="host=127.0.0.1 port=55434 user=omniforge dbname=postgres"
"$BUILD_DIR/bin/conversation_bench" "$@"
# Executor InvokeTool latency over gRPC for a built-in read tool.
"$BUILD_DIR/bin/executor_bench"
# The scheduler: 10,000 agents due in the same minute, two replicas.
"$BUILD_DIR/bin/schedule_bench"
# Chat turns through the public API over the four binaries: the planner on
# the fake provider, then the local policy.
"$BUILD_DIR/bin/chat_bench"
"$BUILD_DIR/bin/chat_bench" --mode local
# Fairness: one tenant's 300 streams against another tenant's p99 turn time,
# under per-tenant limits and without them.
"$BUILD_DIR/bin/fairness_bench"
# Turns under injected temporary faults (model, stream, MCP server): the
# share that completes.
"$BUILD_DIR/bin/fault_bench"
# The plan engine: a 6-step plan of 3 branches over the executor binary
# (its agents on the fake provider), wall time against the steps' sum.
"$BUILD_DIR/bin/plan_bench"
# The LLM client against the fake provider (no database).
"$BUILD_DIR/bin/llm_bench"
# Intent analysis over loopback gRPC: accuracy on the dev split and the
# follow-up set, latency p50/p99 (a fresh service in local mode).
"$BUILD_DIR/bin/omniforge-intent-eval" --spawn
# The local intent model alone: training time, dev accuracy, prediction latency.
"$BUILD_DIR/bin/intent_model_bench"
