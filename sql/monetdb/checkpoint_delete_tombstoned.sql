-- Checkpoint step 1 of a packed table on MonetDB, second statement: drop the storage
-- rows whose key's newest stable version is a tombstone (the others were updated in
-- place). Readers meanwhile still find the tombstone in the cache, which ranks above storage.
DELETE FROM storage_table
WHERE EXISTS (
  SELECT 1
  FROM (
    SELECT TQ_KEY(c), c.tq_deleted,
           rank() OVER (PARTITION BY TQ_KEY(c) ORDER BY o.cts DESC, c.tq_seq DESC) AS tq_rank
    FROM cache_table AS c
    JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
    WHERE o.cts <= CAST(:tq_stable AS BIGINT)
  ) AS tq_stable_versions
  WHERE tq_stable_versions.tq_rank = 1 AND tq_stable_versions.tq_deleted
    AND TQ_KEY_MATCH(tq_stable_versions, storage_table)
)
