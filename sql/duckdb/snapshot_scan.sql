-- Snapshot of one table, anti-join/union formulation (paper, section 3.2.2), DuckDB's form:
-- sql/common/snapshot_scan.sql with its correlated NOT EXISTS written as the anti-join it
-- means. Storage rows without a visible cache version of their key, then the newest visible
-- cache version of each key. DuckDB plans a correlated subquery by decorrelating it into a
-- delim join on every call; the ANTI JOIN it binds directly (new_order's oldest order in a
-- district, TPC-C Delivery: 3.5-4.3 -> 2.4-2.5 ms engine CPU). A key's storage row has a
-- non-NULL key (its primary key, or the hidden row id), so `=` matches as the NOT EXISTS
-- did: the same storage rows are dropped.
SELECT TQ_COLUMNS(s)
FROM storage_table AS s
ANTI JOIN (
  SELECT TQ_KEY(c)
  FROM cache_table AS c
  LEFT JOIN tq_outcome AS o ON o.txid = c.tq_txid AND o.did_commit
  WHERE (c.tq_txid = CAST(:tq_txid AS BIGINT) AND c.tq_seq < CAST(:tq_seq_limit AS BIGINT))
     OR o.cts <= CAST(:tq_sts AS BIGINT)
) AS tq_visible ON TQ_KEY_MATCH(tq_visible, s)
UNION ALL
SELECT TQ_COLUMNS()
FROM visible_cache_versions AS tq_cached
WHERE tq_rank = 1 AND NOT tq_deleted
