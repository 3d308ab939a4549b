-- Checkpoint step 3: remove versions now in storage (or superseded by it), and the
-- writes of transactions that aborted or were rolled back (never of one that committed,
-- whatever else says so).
DELETE FROM cache_table
WHERE tq_txid IN (SELECT txid FROM tq_outcome WHERE cts <= CAST(:tq_stable AS BIGINT) AND did_commit)
   OR tq_txid IN (SELECT txid FROM tq_outcome WHERE NOT did_commit AND txid IS NOT NULL)
   OR (tq_txid IN (SELECT txid FROM tq_rolled_back WHERE txid <= CAST(:tq_horizon AS BIGINT))
       AND tq_txid NOT IN (SELECT txid FROM tq_outcome WHERE did_commit))
