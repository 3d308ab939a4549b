-- Checkpoint step 1: drop storage rows that a stable cache version replaces.
-- Readers meanwhile still find that version in the cache, which ranks above storage.
DELETE FROM storage_table
WHERE EXISTS (
  SELECT 1
  FROM cache_table AS c
  JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
  WHERE o.cts <= CAST(:tq_stable AS BIGINT) AND TQ_KEY_MATCH(c, storage_table)
)
