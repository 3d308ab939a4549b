-- Snapshot of one table, rank() formulation (paper, Listing 1), as MonetDB reads it; the
-- other engines read sql/common/snapshot_rank.sql, which differs only in the cache side.
-- Suits point and key lookups: the engine pushes key filters below the UNION ALL,
-- so the window ranks at most a handful of versions per key.
-- Own writes (of earlier statements: tq_seq_limit) rank above every committed version (ordered by statement sequence);
-- committed versions rank by commit timestamp; storage rows rank last.
-- The innermost level carries every physical column: the key it ranks by may be the
-- hidden row id, which a read does not project.
-- The cache side joins the transactions whose versions the reader sees, each with the
-- order its versions rank by: those committed at or before the snapshot (by commit
-- timestamp) and the reader itself (above them all; its versions of earlier statements
-- only). An inner join with that set, not a LEFT JOIN with every outcome filtered after
-- it, because a point read's cost on MonetDB is its plan's operators, not its rows: the
-- outer join's unmatched side, its appends and the CASE cost about 20% of a prepared
-- point read's server CPU (tests/test_point_snapshot.py holds what it must read).
-- The reader's own outcome is never among the committed ones: it is written at its
-- commit, with a commit timestamp above every snapshot it read at. A statement of a
-- transaction that has not written the keys it reads runs without the reader's row and
-- the condition on its own versions (tique/rewrite/own_versions.py). PostgreSQL gains
-- nothing from this form (a point read's server CPU within noise) and its per-row
-- LATERAL reads (TPC-C Stock-Level) ran slower with it, so it keeps the LEFT JOIN.
SELECT TQ_COLUMNS()
FROM (
  SELECT TQ_COLUMNS(), tq_deleted,
         rank() OVER (PARTITION BY TQ_KEY() ORDER BY tq_ord DESC, tq_seq DESC) AS tq_rank
  FROM (
    SELECT TQ_ALL_COLUMNS(s), FALSE AS tq_deleted, CAST(0 AS BIGINT) AS tq_ord, 0 AS tq_seq
    FROM storage_table AS s
    UNION ALL
    SELECT TQ_ALL_COLUMNS(c), c.tq_deleted, o.cts AS tq_ord, c.tq_seq
    FROM cache_table AS c
    JOIN visible_transactions AS o ON o.txid = c.tq_txid
    WHERE c.tq_txid <> CAST(:tq_txid AS BIGINT) OR c.tq_seq < CAST(:tq_seq_limit AS BIGINT)
  ) AS tq_versions
) AS tq_ranked
WHERE tq_rank = 1 AND NOT tq_deleted
