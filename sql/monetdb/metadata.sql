-- tique's metadata on MonetDB. Append-only on the hot path: MonetDB aborts concurrent
-- UPDATE/DELETE on one table, but concurrent INSERTs never conflict. Only the commit
-- markers (tq_outcome) and the catalog must survive a restart; the rest is UNLOGGED
-- where the server supports it (recovery rebuilds what it needs from tq_outcome and
-- the caches).
CREATE TABLE IF NOT EXISTS tq_tables (name VARCHAR(1024) PRIMARY KEY, ddl TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tq_outcome (cts BIGINT PRIMARY KEY, txid BIGINT, did_commit BOOLEAN NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS tq_committing (txid BIGINT NOT NULL, cts BIGINT NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS tq_rolled_back (txid BIGINT NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS tq_write_sets (txid BIGINT NOT NULL, cts BIGINT NOT NULL, key_hash BIGINT NOT NULL);
