-- Checkpoint step 2 of a packed table on MonetDB: the newest stable version of each key
-- that storage does not hold goes to storage, unless it is a tombstone (step 1 updated
-- the keys storage holds in place). The packed key is no column of the PRIMARY KEY, so
-- the anti-join never goes through that key's hash index (which still finds deleted
-- rows: see tique/rewrite/snapshot.py).
INSERT INTO storage_table (TQ_COLUMNS())
SELECT TQ_COLUMNS()
FROM stable_versions AS tq_stable_versions
WHERE tq_rank = 1 AND NOT tq_deleted
  AND NOT EXISTS (SELECT 1 FROM storage_table AS s WHERE TQ_KEY_MATCH(s, tq_stable_versions))
