-- tique's metadata on MonetDB. Append-only on the hot path: MonetDB aborts concurrent
-- UPDATE/DELETE on one table, and an INSERT ... SELECT that reads a table others
-- append to, but plain concurrent INSERT ... VALUES never conflict (tique sends its
-- internal INSERT ... SELECTs as a read, then an INSERT ... VALUES). Only the commit
-- markers (tq_outcome) and the catalog must survive a restart; the rest is UNLOGGED
-- where the server supports it (recovery rebuilds what it needs from tq_outcome and
-- the caches).
CREATE TABLE IF NOT EXISTS tq_tables (name VARCHAR(1024) PRIMARY KEY, ddl TEXT NOT NULL);
-- Views and indexes over tique tables: (name, kind 'view' or 'index', the table an index is on, the statement).
CREATE TABLE IF NOT EXISTS tq_objects (name VARCHAR(1024) PRIMARY KEY, kind VARCHAR(16) NOT NULL, on_table VARCHAR(1024), ddl TEXT NOT NULL);
-- Bumped by every schema change in the same engine transaction: a transaction's begin
-- reads it, and a connection reloads its catalog only when it moved.
CREATE TABLE IF NOT EXISTS tq_catalog (version BIGINT NOT NULL);
INSERT INTO tq_catalog (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM tq_catalog);
-- No primary key: MonetDB aborts concurrent inserts into a keyed table. The oracle
-- arbitrates instead (op 13): an owner writes its marker only after claiming its
-- commit timestamp, which a resolver can no longer abort once claimed.
CREATE TABLE IF NOT EXISTS tq_outcome (cts BIGINT NOT NULL, txid BIGINT, did_commit BOOLEAN NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS tq_committing (txid BIGINT NOT NULL, cts BIGINT NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS tq_rolled_back (txid BIGINT NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS tq_write_sets (txid BIGINT NOT NULL, cts BIGINT NOT NULL, key_hash BIGINT NOT NULL);
-- Read-sets of SERIALIZABLE writers (tique/read_sets.py): appended with INSERT ... VALUES only.
CREATE UNLOGGED TABLE IF NOT EXISTS tq_read_sets (txid BIGINT NOT NULL, cts BIGINT NOT NULL, key_hash BIGINT NOT NULL);
