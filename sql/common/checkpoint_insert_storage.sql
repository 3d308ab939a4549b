-- Checkpoint step 2: the newest stable version of each key goes to storage,
-- unless it is a tombstone.
INSERT INTO storage_table (TQ_COLUMNS())
SELECT TQ_COLUMNS()
FROM stable_versions AS tq_stable_versions
WHERE tq_rank = 1 AND NOT tq_deleted
