-- Read-set certification, keys (tique/read_sets.py): a conflict is a transaction that
-- wrote a key we read and committed, or is committing, between our start timestamp and
-- our commit timestamp (write-snapshot isolation). Run only once every commit timestamp
-- below ours has an outcome (ordered certification, tique/transaction.py), so every such
-- write-set is logged and its outcome known.
SELECT 1 AS tq_conflict
FROM tq_read_sets AS mine
JOIN tq_write_sets AS theirs ON theirs.key_hash = mine.key_hash AND theirs.txid <> mine.txid
LEFT JOIN tq_outcome AS o ON o.cts = theirs.cts
WHERE mine.txid = CAST(:tq_txid AS BIGINT)
  AND theirs.cts > CAST(:tq_sts AS BIGINT)
  AND theirs.cts < CAST(:tq_cts AS BIGINT)
  AND (o.did_commit IS NULL OR o.did_commit)
