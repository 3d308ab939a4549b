-- The hashed (table, key) write-set of one transaction in one table, for Write_Sets.
SELECT DISTINCT CAST(:tq_txid AS BIGINT) AS txid, TQ_KEY_HASH(c) AS key_hash
FROM cache_table AS c
WHERE c.tq_txid = CAST(:tq_txid AS BIGINT)
