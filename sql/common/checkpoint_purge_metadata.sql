-- Checkpoint step 4 (after every cache is purged): metadata no live transaction can need.
-- A stable timestamp is at most every running transaction's start timestamp, so no
-- one certifies against, or reads through, what is removed here (a read-set is
-- read only by its own transaction's certification, whose commit timestamp is above it).
DELETE FROM tq_write_sets WHERE cts <= CAST(:tq_stable AS BIGINT);
DELETE FROM tq_read_sets WHERE cts <= CAST(:tq_stable AS BIGINT);
DELETE FROM tq_outcome WHERE cts <= CAST(:tq_stable AS BIGINT);
DELETE FROM tq_committing WHERE cts <= CAST(:tq_stable AS BIGINT);
DELETE FROM tq_rolled_back WHERE txid <= CAST(:tq_horizon AS BIGINT)
