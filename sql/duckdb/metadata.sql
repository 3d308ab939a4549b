-- tique's metadata on DuckDB. Every table here is append-only on the hot path;
-- only the checkpointer deletes, and only rows no running transaction can need.
CREATE TABLE IF NOT EXISTS tq_tables (name VARCHAR PRIMARY KEY, ddl VARCHAR NOT NULL);
-- Views and indexes over tique tables: (name, kind 'view' or 'index', the table an index is on, the statement).
-- (The catalog version lives in process memory: one process opens a DuckDB file.)
CREATE TABLE IF NOT EXISTS tq_objects (name VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, on_table VARCHAR, ddl VARCHAR NOT NULL);
-- Commit timestamps handed out (server-side oracles log them here; the in-process
-- oracle keeps its pending ones in memory and recovers them from tq_write_sets).
CREATE TABLE IF NOT EXISTS tq_committing (txid BIGINT NOT NULL, cts BIGINT NOT NULL);
-- The commit marker (committed) or abort marker; one row per commit timestamp, so
-- the first of the owner and a timeout resolver to insert one wins.
CREATE TABLE IF NOT EXISTS tq_outcome (cts BIGINT PRIMARY KEY, txid BIGINT, did_commit BOOLEAN NOT NULL);
-- Transactions that ended without a commit timestamp but may have left cache rows.
CREATE TABLE IF NOT EXISTS tq_rolled_back (txid BIGINT NOT NULL);
-- Hashed (table, key) write-sets of transactions that are certifying or certified.
CREATE TABLE IF NOT EXISTS tq_write_sets (txid BIGINT NOT NULL, cts BIGINT NOT NULL, key_hash BIGINT NOT NULL);
-- Hashed (table, key) read-sets of SERIALIZABLE writers (point reads), logged with the
-- write-set and certified against later committers' write-sets (tique/read_sets.py).
CREATE TABLE IF NOT EXISTS tq_read_sets (txid BIGINT NOT NULL, cts BIGINT NOT NULL, key_hash BIGINT NOT NULL);
