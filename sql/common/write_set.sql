-- The hashed (table, key) write-set of one transaction in one table, logged in
-- Write_Sets with its commit timestamp before it certifies: this row set is how
-- concurrent certifiers learn that the transaction is committing.
SELECT DISTINCT CAST(:tq_txid AS BIGINT) AS txid, CAST(:tq_cts AS BIGINT) AS cts, TQ_KEY_HASH(c) AS key_hash
FROM cache_table AS c
WHERE c.tq_txid = CAST(:tq_txid AS BIGINT)
