-- First committer wins: a conflict is another transaction that wrote one of our keys
-- and committed, or is committing, after our start (it holds a commit timestamp above
-- our snapshot and has no abort outcome). Every transaction logs its write-set and
-- its commit timestamp before it certifies, so of two overlapping writers of a key
-- the one that certifies second always sees the first.
SELECT 1
FROM tq_write_sets AS mine
JOIN tq_write_sets AS theirs ON theirs.key_hash = mine.key_hash AND theirs.txid <> mine.txid
JOIN tq_committing AS c ON c.txid = theirs.txid
LEFT JOIN tq_outcome AS o ON o.cts = c.cts
WHERE mine.txid = CAST(:tq_txid AS BIGINT)
  AND c.cts > CAST(:tq_sts AS BIGINT)
  AND (o.committed IS NULL OR o.committed)
LIMIT 1
