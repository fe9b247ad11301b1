#!/usr/bin/env bash
# `make run`: starts the local stack (scripts/stack.sh up) and walks a demo
# conversation through it with the omniforge CLI, then says how to go on.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
STATE_DIR="${OMNIFORGE_STATE_DIR:-/tmp/omniforge}"
BASE=("$BUILD_DIR/bin/omniforge" --server 127.0.0.1:50051)
CLI=("${BASE[@]}" --tenant demo --user demo-user)

bash "$ROOT/scripts/stack.sh" up

step() { printf '\n== %s\n' "$*"; }

step "A user starts a conversation"
id=$("${CLI[@]}" conversations create --title "Monday Notion updates")
echo "conversation $id"

step "The user describes a problem in their own words; the intent service reads it"
"${CLI[@]}" intent analyze --agent "weekly-sales-digest=Emails the sales team closed deals every Monday" \
  "our Monday Notion updates take hours, can you help?"
"${CLI[@]}" conversations append "$id" --role user --idempotency-key "demo-$id-1" \
  "our Monday Notion updates take hours, can you help?"
echo "(the same append retried with its idempotency key is stored once:)"
"${CLI[@]}" conversations append "$id" --role user --idempotency-key "demo-$id-1" \
  "our Monday Notion updates take hours, can you help?"

step "The assistant proposes; a short \"yes, do that\" is understood from the history"
"${CLI[@]}" conversations append "$id" --role assistant \
  "I can build an agent that drafts them from your Notion pages every Monday at 9:00. Want me to create it?"
"${CLI[@]}" intent analyze --conversation "$id" "yes, do that"

step "A secret pasted by mistake is flagged, never logged"
secret="sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456"
"${CLI[@]}" --json conversations append "$id" --role user "sure, here is our token: $secret" \
  | grep -o '"secrets_detected":\[[^]]*\]' || true
echo "(times the token appears in the service log: $(grep -c "$secret" "$STATE_DIR/logs/conversation.log" || true))"

step "Another tenant cannot see it (NOT_FOUND, exactly like a missing id)"
"${BASE[@]}" --tenant someone-else --user demo-user conversations show "$id" || true

step "The context window a planner would read (recent exchanges + token budget)"
"${CLI[@]}" conversations window "$id" --budget 2000

step "The user's conversations, most recently active first"
"${CLI[@]}" conversations list --page-size 5

cat <<TXT

omniforge's conversation memory is running on 127.0.0.1:50051 and intent
analysis on 127.0.0.1:50052 (metrics: http://127.0.0.1:9091/metrics and
:9092/metrics, logs: $STATE_DIR/logs). Try it yourself:
  $BUILD_DIR/bin/omniforge conversations show $id
  $BUILD_DIR/bin/omniforge conversations append $id --role user "hello"
  $BUILD_DIR/bin/omniforge intent analyze --conversation $id "actually make it weekly"
  $BUILD_DIR/bin/omniforge --help
Stop everything with: make down
TXT
