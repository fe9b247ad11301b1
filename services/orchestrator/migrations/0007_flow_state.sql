-- flows: the whole state of each flow (what waits for the user, the plan,
-- the flow set aside, the context box) as one jsonb document, and its
-- revision, incremented by each save: a save names the revision it read
-- and writes nothing when the row moved on since (compare-and-set).
-- box and status are still written beside the state. Rows written before
-- this migration have no state (NULL) and revision 0: their box and status
-- still read, and the next save fills the state in.

ALTER TABLE orchestration.flows
  ADD COLUMN state    jsonb,
  ADD COLUMN revision bigint NOT NULL DEFAULT 0 CHECK (revision >= 0);
