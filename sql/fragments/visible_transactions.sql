-- The transactions whose cache versions a reader sees, each with the order its versions
-- rank by: those committed at or before its snapshot (by commit timestamp), and the
-- reader itself, above them all (its versions of earlier statements only: the
-- templates' tq_seq_limit). MonetDB's snapshot templates join it as `visible_transactions`
-- (sql/monetdb/snapshot_rank.sql says why a join and not a LEFT JOIN with every outcome).
SELECT txid, cts FROM tq_outcome WHERE did_commit AND cts <= CAST(:tq_sts AS BIGINT)
UNION ALL
SELECT CAST(:tq_txid AS BIGINT), CAST(:tq_sts AS BIGINT) + 1
