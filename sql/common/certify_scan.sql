-- Read-set certification, one scanned table (tique/read_sets.py): a conflict is a
-- transaction that committed, or is committing, between our start and our commit
-- timestamp and has versions in the table's cache. Its versions are still there: the
-- checkpointer purges only versions at or below the stable timestamp, which is at most
-- our start timestamp while we run.
SELECT 1 AS tq_conflict
FROM tq_write_sets AS theirs
LEFT JOIN tq_outcome AS o ON o.cts = theirs.cts
WHERE theirs.txid <> CAST(:tq_txid AS BIGINT)
  AND theirs.cts > CAST(:tq_sts AS BIGINT)
  AND theirs.cts < CAST(:tq_cts AS BIGINT)
  AND (o.did_commit IS NULL OR o.did_commit)
  AND EXISTS (SELECT 1 FROM cache_table AS c WHERE c.tq_txid = theirs.txid)
