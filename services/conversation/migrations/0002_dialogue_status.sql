-- Agent dialogues carry a status: 1 active, 2 completed, 3 failed,
-- 4 cancelled (omniforge.conversation.v1.DialogueStatus). Chats have none.
ALTER TABLE conversation.conversations ADD COLUMN status smallint;

-- Dialogues stored before this column ended, if they ended, with an executor
-- message whose metadata says how; the rest are still active.
UPDATE conversation.conversations cv
   SET status = CASE last.metadata ->> 'status'
                  WHEN 'completed' THEN 2
                  WHEN 'failed' THEN 3
                  ELSE 1
                END
  FROM conversation.conversations d
  LEFT JOIN LATERAL (
    SELECT m.metadata FROM conversation.messages m
    WHERE m.tenant_id = d.tenant_id AND m.conversation_id = d.id
    ORDER BY m.seq DESC LIMIT 1
  ) last ON true
 WHERE d.kind = 2 AND cv.tenant_id = d.tenant_id AND cv.id = d.id;

ALTER TABLE conversation.conversations ADD CONSTRAINT dialogue_status_matches_kind
  CHECK (CASE WHEN kind = 2 THEN status BETWEEN 1 AND 4 ELSE status IS NULL END);
