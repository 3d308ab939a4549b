-- Certification (as sql/common/certify.sql) counted, for a commit that logs its write-set,
-- commits it and certifies in one request (tique/transaction.py, _commit_in_requests): the
-- number of (our key, their write of it) pairs, where theirs is another transaction's
-- write-set carrying a commit timestamp above our start and no abort outcome; or -1 when
-- the request logged a write-set (tq_logged) and none of ours is there: the server ran
-- on after the COMMIT of our writes failed, and the commit must decide nothing. One
-- pass over our write-set, the check of its presence costing no operator of its own
-- (MonetDB's cost at these sizes is per plan operator, not per row).
SELECT CASE WHEN CAST(:tq_logged AS BOOLEAN) AND COUNT(*) = 0 THEN -1 ELSE COUNT(theirs.key_hash) END AS conflicts
FROM tq_write_sets AS mine
LEFT JOIN (SELECT t.key_hash
           FROM tq_write_sets AS t
           LEFT JOIN tq_outcome AS o ON o.cts = t.cts
           WHERE t.txid <> CAST(:tq_txid AS BIGINT)
             AND t.cts > CAST(:tq_sts AS BIGINT)
             AND (o.did_commit IS NULL OR o.did_commit)) AS theirs
  ON theirs.key_hash = mine.key_hash
WHERE mine.txid = CAST(:tq_txid AS BIGINT)
