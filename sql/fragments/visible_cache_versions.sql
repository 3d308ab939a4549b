-- The cache's versions a reader sees, each ranked among its key's (tq_rank = 1: the key's
-- newest visible version, which may be a tombstone): those of transactions committed at or
-- before its snapshot (by commit timestamp), and its own of earlier statements (the
-- templates' tq_seq_limit), above them all. The scan snapshots read it as `tq_cached`.
SELECT TQ_COLUMNS(c), c.tq_deleted,
       rank() OVER (
         PARTITION BY TQ_KEY(c)
         ORDER BY CASE WHEN c.tq_txid = CAST(:tq_txid AS BIGINT)
                       THEN CAST(:tq_sts AS BIGINT) + 1 ELSE o.cts END DESC,
                  c.tq_seq DESC) AS tq_rank
FROM cache_table AS c
LEFT JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
WHERE (c.tq_txid = CAST(:tq_txid AS BIGINT) AND c.tq_seq < CAST(:tq_seq_limit AS BIGINT))
     OR o.cts <= CAST(:tq_sts AS BIGINT)
