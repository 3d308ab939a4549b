-- Snapshot of one table, anti-join/union formulation (paper, section 3.2.2), as MonetDB
-- reads it; the other engines read sql/common/snapshot_scan.sql.
SELECT TQ_COLUMNS(s)
FROM storage_table AS s
WHERE NOT EXISTS (
  SELECT 1
  FROM cache_table AS c
  JOIN visible_transactions AS o ON o.txid = c.tq_txid
  WHERE TQ_KEY_MATCH(c, s)
    AND (c.tq_txid <> CAST(:tq_txid AS BIGINT) OR c.tq_seq < CAST(:tq_seq_limit AS BIGINT))
)
UNION ALL
SELECT TQ_COLUMNS()
FROM (
  SELECT TQ_COLUMNS(c), c.tq_deleted,
         rank() OVER (PARTITION BY TQ_KEY(c) ORDER BY o.cts DESC, c.tq_seq DESC) AS tq_rank
  FROM cache_table AS c
  JOIN visible_transactions AS o ON o.txid = c.tq_txid
  WHERE c.tq_txid <> CAST(:tq_txid AS BIGINT) OR c.tq_seq < CAST(:tq_seq_limit AS BIGINT)
) AS tq_cached
WHERE tq_rank = 1 AND NOT tq_deleted
