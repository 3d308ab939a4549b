-- Snapshot of one table, anti-join/union formulation (paper, section 3.2.2).
-- Suits scans and analytics: the (large) storage table is only anti-joined against
-- the keys that have a visible cache version, never sorted or ranked; only the
-- (small) cache is ranked.
SELECT TQ_COLUMNS(s)
FROM storage_table AS s
WHERE NOT EXISTS (
  SELECT 1
  FROM cache_table AS c
  LEFT JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
  WHERE TQ_KEY_MATCH(c, s)
    AND ((c.tq_txid = CAST(:tq_txid AS BIGINT) AND c.tq_seq < CAST(:tq_seq_limit AS BIGINT))
         OR o.cts <= CAST(:tq_sts AS BIGINT))
)
UNION ALL
SELECT TQ_COLUMNS()
FROM visible_cache_versions AS tq_cached
WHERE tq_rank = 1 AND NOT tq_deleted
