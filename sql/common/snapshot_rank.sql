-- Snapshot of one table, rank() formulation (paper, Listing 1).
-- Suits point and key lookups: the engine pushes key filters below the UNION ALL,
-- so the window ranks at most a handful of versions per key.
-- Own writes (of earlier statements: tq_seq_limit) rank above every committed version (ordered by statement sequence);
-- committed versions rank by commit timestamp; storage rows rank last.
-- The innermost level carries every physical column: the key it ranks by may be the
-- hidden row id, which a read does not project.
SELECT TQ_COLUMNS()
FROM (
  SELECT TQ_COLUMNS(), tq_deleted,
         rank() OVER (PARTITION BY TQ_KEY() ORDER BY tq_ord DESC, tq_seq DESC) AS tq_rank
  FROM (
    SELECT TQ_ALL_COLUMNS(s), FALSE AS tq_deleted, CAST(0 AS BIGINT) AS tq_ord, 0 AS tq_seq
    FROM storage_table AS s
    UNION ALL
    SELECT TQ_ALL_COLUMNS(c), c.tq_deleted,
           CASE WHEN c.tq_txid = CAST(:tq_txid AS BIGINT)
                THEN CAST(:tq_sts AS BIGINT) + 1 ELSE o.cts END AS tq_ord,
           c.tq_seq
    FROM cache_table AS c
    LEFT JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
    WHERE (c.tq_txid = CAST(:tq_txid AS BIGINT) AND c.tq_seq < CAST(:tq_seq_limit AS BIGINT))
       OR o.cts <= CAST(:tq_sts AS BIGINT)
  ) AS tq_versions
) AS tq_ranked
WHERE tq_rank = 1 AND NOT tq_deleted
