-- Checkpoint step 1 of a packed table on MonetDB, second statement: drop the storage
-- rows whose key's newest stable version is a tombstone (the others were updated in
-- place). Readers meanwhile still find the tombstone in the cache, which ranks above storage.
DELETE FROM storage_table
WHERE EXISTS (
  SELECT 1
  FROM stable_versions AS tq_stable_versions
  WHERE tq_stable_versions.tq_rank = 1 AND tq_stable_versions.tq_deleted
    AND TQ_KEY_MATCH(tq_stable_versions, storage_table)
)
