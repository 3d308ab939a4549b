-- Certification and the commit marker in one statement: the outcome row records
-- whether the write-set certified (see certify.sql). Inserting it is the single atomic
-- commit point; one row per commit timestamp, so if a timeout resolver already wrote
-- an abort for this timestamp, this insert fails and the transaction is aborted.
INSERT INTO tq_outcome (cts, txid, did_commit)
SELECT CAST(:tq_cts AS BIGINT), CAST(:tq_txid AS BIGINT), NOT EXISTS (TQ_CERTIFY())
RETURNING did_commit
