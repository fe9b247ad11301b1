-- DeleteConversation removes what the orchestrator keeps of a conversation:
-- its flows (states and context boxes), its plans and their steps. The
-- service's role could already delete plans and steps; flows were only
-- added and updated. Row-level security still confines the delete to the
-- caller's tenant. The error log, the approval audit trail and the usage
-- rows stay append-only.
GRANT DELETE ON orchestration.flows TO omniforge_orchestrator;
