-- Where a turn's failure happened, beside what it was (kind):
--   component  the part that failed: conversation (memory), executor (tools,
--              the agent list), intent, llm (the planner's model), plans,
--              orchestration (the flow store), or turn (a guardrail the turn
--              itself enforced);
--   stage      the step of the turn: store_user_message, read_window,
--              read_flow, list_agents, analyze_intent, planner_stream,
--              tool_call, plan, store_reply, store_flow;
--   tool       the tool being called, when the failure is a tool call's.
-- Rows of an orchestrator of the previous release (during a rolling update)
-- get empty values.
ALTER TABLE orchestration.error_log
  ADD COLUMN component text NOT NULL DEFAULT '',
  ADD COLUMN stage text NOT NULL DEFAULT '',
  ADD COLUMN tool text NOT NULL DEFAULT '';
