-- The cache's versions by committed transactions at or below the stable timestamp, each
-- ranked among its key's (tq_rank = 1: the key's newest stable version, which may be a
-- tombstone). The checkpoint templates read it as `stable_versions`.
SELECT TQ_COLUMNS(c), c.tq_deleted,
       rank() OVER (PARTITION BY TQ_KEY(c) ORDER BY o.cts DESC, c.tq_seq DESC) AS tq_rank
FROM cache_table AS c
JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
WHERE o.cts <= CAST(:tq_stable AS BIGINT)
