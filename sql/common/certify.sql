-- First committer wins: a conflict is another transaction that wrote one of our keys
-- and committed, or is committing, after our start (its write-set carries a commit
-- timestamp above our start timestamp, and it has no abort outcome). Every transaction
-- logs its write-set before it certifies, so of two overlapping writers of a key the
-- one that certifies second always sees the other.
SELECT 1
FROM tq_write_sets AS mine
JOIN tq_write_sets AS theirs ON theirs.key_hash = mine.key_hash AND theirs.txid <> mine.txid
LEFT JOIN tq_outcome AS o ON o.cts = theirs.cts
WHERE mine.txid = CAST(:tq_txid AS BIGINT)
  AND theirs.cts > CAST(:tq_sts AS BIGINT)
  AND (o.did_commit IS NULL OR o.did_commit)
LIMIT 1
