-- Checkpoint step 1 of a packed table on MonetDB, first statement: a storage row whose
-- key's newest stable version is live takes that version's values in place. The SET
-- list (every column but the key's) is filled per table by tique/checkpoint.py.
-- Unlike a delete and an append, this leaves storage without deleted rows, and MonetDB
-- answers an equality filter through a column's hash only on a table without them.
-- Readers meanwhile still find that version in the cache, which ranks above storage.
UPDATE storage_table
SET tq_set = tq_set
FROM stable_versions AS tq_stable_versions
WHERE tq_stable_versions.tq_rank = 1 AND NOT tq_stable_versions.tq_deleted
  AND TQ_KEY_MATCH(tq_stable_versions, storage_table)
