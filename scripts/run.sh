#!/usr/bin/env bash
# `make run`: starts the local stack (scripts/stack.sh up) and walks a demo
# conversation through it with the omniforge CLI, then says how to go on.
# Ports and directories come from the environment (scripts/stack_env.sh).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/stack_env.sh"
# The CLI reads the services' addresses from these.
export OMNIFORGE_ADDR OMNIFORGE_CONVERSATION_ADDR OMNIFORGE_EXECUTOR_ADDR
OMNIFORGE_ADDR="$(addr orchestrator)"
OMNIFORGE_CONVERSATION_ADDR="$(addr conversation)"
OMNIFORGE_EXECUTOR_ADDR="$(addr executor)"
# Direct calls to the services name their user with an assertion signed by
# a key they trust: the demo signs with the operator's (scripts/stack.sh
# makes it; the services trust it beside the orchestrator's).
BASE=("$BUILD_DIR/bin/omniforge" --identity-key "$STATE_DIR/operator-identity.key"
      --identity-key-id operator)
CLI=("${BASE[@]}" --tenant demo --user demo-user)

bash "$ROOT/scripts/stack.sh" up

step() { printf '\n== %s\n' "$*"; }

# `chat MESSAGE [--conversation ID]`: one turn through the orchestrator,
# shown as it streams; prints nothing else.
export OMNIFORGE_API_KEY
OMNIFORGE_API_KEY="$(cat "$STATE_DIR/demo.key")"
chat() { "$BUILD_DIR/bin/omniforge" chat "$@"; }
# The conversation a turn's output names ("· conversation <id>").
conversation_of() { sed -n 's/^· conversation //p' <<<"$1" | head -n 1; }

step "The demo user's workspace: two agents that work on its projects, and a project with tasks"
# Each call carries an idempotency key, so running the demo again seeds
# nothing twice.
seed() {
  "${CLI[@]}" tools invoke "$1" "$2" \
    --idempotency-key "demo-seed-$1-$3" >/dev/null 2>&1 || true
}
seed create_project_template '{"name": "Launch checklist", "description": "For product and website launches", "tasks": [{"title": "Write the announcement"}, {"title": "Update the pricing page"}, {"title": "Brief the support team"}]}' 3
seed create_project '{"name": "Website relaunch", "description": "The new marketing site", "template": "Launch checklist"}' 4
seed create_project_template '{"name": "Invoice follow-ups", "description": "Customers whose invoices are overdue", "tasks": [{"title": "Acme Corp: invoice 1042, 30 days overdue"}, {"title": "Globex: invoice 1057, 14 days overdue"}, {"title": "Initech: invoice 1063, 7 days overdue"}]}' 5
seed create_project '{"name": "Overdue invoices", "description": "Invoices to chase", "template": "Invoice follow-ups"}' 6
seed create_project_template '{"name": "Weekly deals", "description": "Deals closed this week", "tasks": [{"title": "Northwind: 40 seats, 12,000 EUR"}, {"title": "Contoso: renewal, 8,500 EUR"}]}' 7
seed create_project '{"name": "Deals closed this week", "description": "The sales team logs each closed deal here", "template": "Weekly deals"}' 8
# An agent is a runnable definition: without a model, a run does its steps.
seed create_agent '{"name": "weekly-sales-digest", "description": "Sums up the deals closed each week for the sales team", "schedule": "every Monday 08:00", "steps": [{"tool": "list_tasks", "arguments": {"project": "Deals closed this week"}}]}' 1
seed create_agent '{"name": "invoice-chaser", "description": "Lists the customers whose invoices are overdue", "steps": [{"tool": "list_tasks", "arguments": {"project": "Overdue invoices", "status": "todo"}}]}' 2
# A workspace seeded by an older demo has the agents without steps: give them theirs.
seed update_agent '{"agent": "weekly-sales-digest", "description": "Sums up the deals closed each week for the sales team", "steps": [{"tool": "list_tasks", "arguments": {"project": "Deals closed this week"}}]}' 1
seed update_agent '{"agent": "invoice-chaser", "description": "Lists the customers whose invoices are overdue", "steps": [{"tool": "list_tasks", "arguments": {"project": "Overdue invoices", "status": "todo"}}]}' 2
"${CLI[@]}" tools invoke list_agents '{}' 2>/dev/null \
  | sed -n 's/^ *"name": "\(.*\)",*$/  agent: \1/p'

step "1. A problem in the user's own words: omniforge proposes an agent and waits"
out=$(chat "our Monday Notion updates take hours — can you help?")
echo "$out"
id=$(conversation_of "$out")

step "2. Later answers fill in the draft; a yes creates the agent with all of them"
chat --conversation "$id" "make it run every monday at 9am and send it to the team channel"
out=$(chat --conversation "$id" "yes, do that")
echo "$out"
agent=$(sed -n "s/.*the agent '\([^']*\)' is created.*/\1/p" <<<"$out" | head -n 1)

step "3. \"where were we?\": a recap of the goal, what was done and what is still open"
chat --conversation "$id" "run ${agent:-monday-notion-updates} now"
chat --conversation "$id" "where were we?"
chat --conversation "$id" "yes"

step "4. A risky action waits for approval; \"cancel\" leaves everything as it was"
out=$(chat "list my agents")
echo "$out"
id2=$(conversation_of "$out")
chat --conversation "$id2" "run the first one"
chat --conversation "$id2" "yes"
chat --conversation "$id2" "delete ${agent:-monday-notion-updates}"
chat --conversation "$id2" "cancel"

step "5. A request of two parts that one agent covers in part: which fits, why, and the options"
out=$(chat "can one of my agents chase the overdue invoices and also post a weekly summary to slack?")
echo "$out"
id3=$(conversation_of "$out")
chat --conversation "$id3" "2"

step "6. A meeting in plain words, over the sandbox calendar and contacts: which John, a conflict, the free times, a preview, booked after yes"
out=$(chat "schedule a 30-minute call with Sarah and John tomorrow at 2pm")
echo "$out"
id4=$(conversation_of "$out")
chat --conversation "$id4" "John Smith"
chat --conversation "$id4" "the first one"
chat --conversation "$id4" "yes"

step "7. Work of several steps becomes a plan, carried out by executor agents side by side"
project=$("${CLI[@]}" tools invoke search_projects '{"query": "Website relaunch"}' 2>/dev/null \
  | sed -n 's/^ *"id": "\([0-9a-f-]*\)",*$/\1/p' | head -n 1)
chat --context project_audit --entity "${project:-unknown}" "how is this project doing?"

step "8. Agents run on their own: two that run every minute fire once, then are paused; the one that failed is told at the next turn"
# In the demo only: a schedule of every minute, so a slot comes soon.
# release-watch reads a project that does not exist: its scheduled run fails.
seed create_agent '{"name": "launch-watch", "description": "The open tasks of the Website relaunch", "schedule": "every minute", "steps": [{"tool": "list_tasks", "arguments": {"project": "Website relaunch", "status": "todo"}}]}' 9
seed create_agent '{"name": "release-watch", "description": "The open tasks of the Spring release", "schedule": "every minute", "steps": [{"tool": "list_tasks", "arguments": {"project": "Spring release", "status": "todo"}}]}' 10
# The id of an agent's newest scheduled run ("" when none) and whether that
# run has ended.
newest_scheduled() {
  local out
  out=$("${CLI[@]}" tools invoke list_runs "{\"agent\": \"$1\", \"limit\": 5}" 2>/dev/null || true)
  awk '/"id":/ { gsub(/[",]/, "", $2); id = $2 } /"trigger": "schedule"/ { print id; exit }' <<<"$out"
}
run_ended() {
  local out
  out=$("${CLI[@]}" tools invoke get_run "{\"run_id\": \"$1\"}" 2>/dev/null || true)
  grep -Eq '"status": "(succeeded|partial|failed)"' <<<"$out"
}
declare -A before
for watch in launch-watch release-watch; do
  before[$watch]=$(newest_scheduled "$watch")
  "${CLI[@]}" tools invoke resume_agent "{\"agent\": \"$watch\"}" >/dev/null 2>&1 || true
done
echo "waiting for their next slot (at most a minute) ..."
for _ in $(seq 1 75); do
  done_watches=0
  for watch in launch-watch release-watch; do
    newest=$(newest_scheduled "$watch")
    if [[ -n "$newest" && "$newest" != "${before[$watch]}" ]] && run_ended "$newest"; then
      done_watches=$((done_watches + 1))
    fi
  done
  if [[ "$done_watches" == "2" ]]; then break; fi
  sleep 1
done
for watch in launch-watch release-watch; do
  "${CLI[@]}" tools invoke pause_agent "{\"agent\": \"$watch\"}" >/dev/null 2>&1 || true
done
chat "did launch-watch run ok?"

step "Memory: the conversation is stored, in order, with what was decided"
"${CLI[@]}" conversations show "$id" --limit 6

step "A secret pasted by mistake is masked before it is stored or read, flagged, never logged"
secret="sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456"
"$BUILD_DIR/bin/omniforge" --json chat --conversation "$id" "sure, here is our token: $secret" |
  grep -o '"code": *"CHAT_ERROR_CODE_SECRET_MASKED"' | head -n 1 || true
"${CLI[@]}" conversations show "$id" --limit 2 | grep -o 'user: sure, here is our token: .*' | head -n 1 || true
"${CLI[@]}" --json conversations show "$id" --limit 2 | grep -o '"secrets_detected":\[[^]]*\]' | head -n 1 || true
echo "(times the token appears in the service logs: $(cat "$STATE_DIR"/logs/*.log | grep -c "$secret" || true))"

step "Another tenant cannot see it (NOT_FOUND, exactly like a missing id)"
"${BASE[@]}" --tenant someone-else --user demo-user conversations show "$id" || true

step "A user merely named is not believed: the services want an assertion signed by a key they trust"
"$BUILD_DIR/bin/omniforge" --tenant demo --user demo-user conversations show "$id" || true

cat <<TXT

omniforge is running: the chat API on $(addr orchestrator) (orchestrator), with
conversation memory on $(addr conversation), intent analysis on $(addr intent) and the
executor on $(addr executor) (metrics on :${METRICS_PORTS[orchestrator]}-:${METRICS_PORTS[executor]}, logs in $STATE_DIR/logs).
Chat yourself:
  export OMNIFORGE_API_KEY=\$(cat $STATE_DIR/demo.key) OMNIFORGE_ADDR=$OMNIFORGE_ADDR
  $BUILD_DIR/bin/omniforge chat                          # one message per line
  $BUILD_DIR/bin/omniforge chat --conversation $id "where were we?"
  $BUILD_DIR/bin/omniforge --help
Stop everything with: make down
TXT
