-- The assessment of each finished plan step (plans/assessment.h): how well
-- it did, judged from its evidence. Stored as
-- {"score": 0..100, "verdict": "complete" | "partial" | "blocked",
--  "detail": <sealed>}: the score and verdict stay readable to SQL, the
-- reasons and the evidence (words of the user, the model and the tools) are
-- sealed with the tenant's key like the step's other columns. NULL until
-- the step finishes, and for steps that finished before this release.
-- The table's grants to omniforge_orchestrator (0003, moved in 0010) and
-- its row-level security cover the new column.
ALTER TABLE orchestration.plan_steps ADD COLUMN assessment jsonb;
