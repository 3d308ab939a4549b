-- Checkpoint step 2: the newest stable version of each key goes to storage,
-- unless it is a tombstone.
INSERT INTO storage_table (TQ_COLUMNS())
SELECT TQ_COLUMNS()
FROM (
  SELECT TQ_COLUMNS(c), c.tq_deleted,
         rank() OVER (PARTITION BY TQ_KEY(c) ORDER BY o.cts DESC, c.tq_seq DESC) AS tq_rank
  FROM cache_table AS c
  JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
  WHERE o.cts <= CAST(:tq_stable AS BIGINT)
) AS tq_stable_versions
WHERE tq_rank = 1 AND NOT tq_deleted
