-- tique's metadata and server-side timestamp oracle on PostgreSQL.
-- Idempotent; the advisory lock keeps concurrent installers from racing.
SELECT pg_advisory_xact_lock(7411, 2);

CREATE TABLE IF NOT EXISTS tq_tables (name TEXT PRIMARY KEY, ddl TEXT NOT NULL);
-- Views and indexes over tique tables: (name, kind 'view' or 'index', the table an index is on, the statement).
CREATE TABLE IF NOT EXISTS tq_objects (name TEXT PRIMARY KEY, kind TEXT NOT NULL, on_table TEXT, ddl TEXT NOT NULL);
-- Bumped by every schema change in the same engine transaction: a transaction's begin
-- reads it, and a connection reloads its catalog only when it moved.
CREATE TABLE IF NOT EXISTS tq_catalog (id INT PRIMARY KEY, version BIGINT NOT NULL);
INSERT INTO tq_catalog (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
-- Volatile, so a call reads with a snapshot of its own: called after tq_begin() in one
-- statement (SELECT ..., tq_catalog_version() FROM tq_begin()) it sees every schema change
-- whose transaction the start timestamp includes, which the statement's snapshot, taken
-- before tq_begin() ran, might not.
-- PL/pgSQL, as every function here that runs a query per call (tq_registration is inlined):
-- it keeps its statements' plans for the session, where a LANGUAGE sql function that
-- PostgreSQL cannot inline plans its query again on every call.
CREATE OR REPLACE FUNCTION tq_catalog_version() RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RETURN (SELECT version FROM tq_catalog WHERE id = 1);
END $$;
CREATE TABLE IF NOT EXISTS tq_committing (txid BIGINT NOT NULL, cts BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS tq_committing_txid ON tq_committing (txid);
CREATE INDEX IF NOT EXISTS tq_committing_cts ON tq_committing (cts);
CREATE TABLE IF NOT EXISTS tq_outcome (cts BIGINT PRIMARY KEY, txid BIGINT, did_commit BOOLEAN NOT NULL);
CREATE INDEX IF NOT EXISTS tq_outcome_txid ON tq_outcome (txid);
CREATE TABLE IF NOT EXISTS tq_rolled_back (txid BIGINT NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS tq_write_sets (txid BIGINT NOT NULL, cts BIGINT NOT NULL, key_hash BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS tq_write_sets_hash ON tq_write_sets (key_hash);
CREATE INDEX IF NOT EXISTS tq_write_sets_txid ON tq_write_sets (txid);
CREATE INDEX IF NOT EXISTS tq_write_sets_cts ON tq_write_sets (cts);
-- Hashed (table, key) read-sets of SERIALIZABLE writers (point reads), logged with the
-- write-set and certified against later committers' write-sets (tique/read_sets.py).
CREATE UNLOGGED TABLE IF NOT EXISTS tq_read_sets (txid BIGINT NOT NULL, cts BIGINT NOT NULL, key_hash BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS tq_read_sets_txid ON tq_read_sets (txid);
CREATE INDEX IF NOT EXISTS tq_read_sets_cts ON tq_read_sets (cts);

-- Durability: only the engine commit that carries a transaction's commit marker (the
-- INSERT into tq_outcome that decides it) commits with the server's synchronous_commit
-- setting; in a whole commit that is the same engine transaction as its writes and
-- write-set (tq_take_cts with p_durable). Every other commit of the protocol (the writes
-- and the write-set where they commit apart from the marker, publish, the checkpointer's
-- steps) commits asynchronously (synchronous_commit = off for that transaction only), and
-- begin and end write nothing at all (a reader is registered by an advisory lock, see
-- tq_begin). That is safe because the WAL is flushed in order: a marker flushed to disk
-- flushes every commit written before it, so by the time commit() returns, the
-- transaction's writes are as durable as its marker; and a crash that loses asynchronous
-- commits loses a suffix of the WAL, which recovery treats like any crash (undecided
-- commit timestamps are aborted, the checkpointer's steps are idempotent). A durable
-- writer thus waits for one flush, and a reader for none.

-- The oracle: transaction ids, start timestamps and commit timestamps, shared by
-- every client process. tq_clock.snapshot is the newest commit timestamp such that
-- every commit timestamp at or below it has an outcome.
CREATE SEQUENCE IF NOT EXISTS tq_txid_seq;
CREATE SEQUENCE IF NOT EXISTS tq_cts_seq;
CREATE TABLE IF NOT EXISTS tq_clock (id INT PRIMARY KEY, snapshot BIGINT NOT NULL, server_started TIMESTAMPTZ);
INSERT INTO tq_clock (id, snapshot, server_started) VALUES (1, 0, pg_postmaster_start_time()) ON CONFLICT (id) DO NOTHING;

-- A running transaction is registered by a session-level shared advisory lock on this
-- key of its start timestamp (the bigint form: classid holds the tag 29714 and the high
-- bits, objid the low 32 bits of a start timestamp below 2^48). Taking and releasing it
-- writes nothing, so begin and end are no engine commits; other sessions see it at once
-- (pg_locks), not at a commit; and the server drops it when the session dies, so a
-- client that died never holds the stable timestamp back. Commit timestamps' locks
-- (tq_take_cts) have classid 0, the latches objsubid 2.
CREATE OR REPLACE FUNCTION tq_registration(p_sts BIGINT) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
  SELECT (29714::bigint << 48) | p_sts;
$$;

-- Begin: a transaction id and the current snapshot, registered atomically with
-- respect to tq_stable (shared latch, held until this call's transaction ends, by
-- which time the registration is taken), so the checkpointer never misses a reader.
CREATE OR REPLACE FUNCTION tq_begin(OUT o_txid BIGINT, OUT o_sts BIGINT) LANGUAGE plpgsql AS $$
DECLARE s BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(7411, 0);
  o_txid := nextval('tq_txid_seq');
  SELECT c.snapshot INTO s FROM tq_clock c WHERE c.id = 1;
  -- Outcomes just above the clock are decided even if their owner has not published
  -- yet (or died right after its commit marker): the snapshot includes them.
  SELECT coalesce(max(x.cts), s) INTO o_sts
    FROM (SELECT o.cts, o.cts - row_number() OVER (ORDER BY o.cts) AS gap FROM tq_outcome o WHERE o.cts > s) AS x
    WHERE x.gap = s;
  PERFORM pg_advisory_lock_shared(tq_registration(o_sts));
  -- For statements sent in the same request, before the client has read these
  -- (tique.session.Unbound): the session's, kept when this commits.
  PERFORM set_config('tique.txid', o_txid::text, false);
  PERFORM set_config('tique.sts', o_sts::text, false);
END $$;

-- A transaction whose snapshot is no longer read (it ended, or its outcome is in) gives
-- up its registration (see tq_registration).
CREATE OR REPLACE FUNCTION tq_leave(p_sts BIGINT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
  RETURN pg_advisory_unlock_shared(tq_registration(p_sts));
END $$;

-- Commit timestamp: logged in tq_committing before it is returned (but see p_durable). The session-level
-- advisory lock on it is held until tq_publish, and the server drops it if the client
-- dies, which is how successors learn that an owner is gone without polling.
-- p_durable: the calling transaction also commits the outcome row (tique/transaction.py,
-- _commit_whole), so it commits with the server's synchronous_commit; otherwise it
-- carries the writes and the write-set only and commits asynchronously. A durable call
-- logs no tq_committing row: that row would commit with the outcome row or not at all, so
-- no resolver (tq_advance) or recovery (tq_recover) could ever find it without an
-- outcome, which is all it is read for; leaving it out saves its WAL in the flush every
-- writer waits for.
CREATE OR REPLACE FUNCTION tq_take_cts(p_txid BIGINT, p_durable BOOLEAN) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE c BIGINT;
BEGIN
  IF NOT p_durable THEN
    PERFORM set_config('synchronous_commit', 'off', true);  -- see Durability above
  END IF;
  -- Held until this call commits: tq_publish waits these out before it declares a
  -- timestamp with no committing row a gap (see there).
  PERFORM pg_advisory_xact_lock_shared(7411, 3);
  c := nextval('tq_cts_seq');
  PERFORM pg_advisory_lock(c);
  IF NOT p_durable THEN
    INSERT INTO tq_committing (txid, cts) VALUES (p_txid, c);
  END IF;
  RETURN c;
END $$;
CREATE OR REPLACE FUNCTION tq_take_cts(p_txid BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
BEGIN
  RETURN tq_take_cts(p_txid, FALSE);
END $$;

-- Key locks: the engine transaction that commits a write-set first takes an exclusive
-- transaction-level advisory lock on each of its key hashes (the two-integer form, whose
-- keys tique's other advisory locks leave alone but for the latches (7411, n), which a
-- hash collision would only make it wait for), in ascending hash order, so two such
-- transactions never wait for each other in a cycle. Of two overlapping writers of a key,
-- the second to lock it thus runs every later statement, certification included, only
-- after the first's write-set (and, in a whole commit, outcome) committed
-- (tique/transaction.py, the invariant).
-- A write-set of more than 64 keys takes one exclusive lock, (7411, 5), instead: a lock
-- per key would fill PostgreSQL's shared lock table (max_locks_per_transaction times the
-- connections; a bulk load of thousands of rows failed its commit with "out of shared
-- memory"). Every smaller write-set takes (7411, 5) shared before its key locks, so a
-- large writer still excludes every overlapping one; (7411, 5) comes first in every
-- transaction's order, so the order stays acyclic.
-- p_keys: the distinct hashes of one write-set, in ascending order (tq_lock_write_set, or
-- the statement that logs a whole commit's write-set, PostgresBackend.log_and_lock).
CREATE OR REPLACE FUNCTION tq_lock_keys(p_keys BIGINT[]) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE h BIGINT; n BIGINT := coalesce(cardinality(p_keys), 0);
BEGIN
  IF n > 64 THEN
    PERFORM pg_advisory_xact_lock(7411, 5);
    RETURN n;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(7411, 5);
  FOREACH h IN ARRAY coalesce(p_keys, '{}') LOOP
    PERFORM pg_advisory_xact_lock((h >> 32)::int, h::bit(32)::int);
  END LOOP;
  RETURN n;
END $$;
CREATE OR REPLACE FUNCTION tq_lock_write_set(p_txid BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
BEGIN
  RETURN tq_lock_keys(ARRAY(SELECT DISTINCT w.key_hash FROM tq_write_sets w WHERE w.txid = p_txid ORDER BY w.key_hash));
END $$;

-- Advances the snapshot to p_target once every commit timestamp up to it has an outcome:
-- waits (blocking inside the server, bounded by p_timeout_ms per predecessor) for each
-- undecided one, aborting owners that died or stalled past the timeout. Returns the
-- snapshot then, at least p_target. Shared by tq_publish and tq_await.
CREATE OR REPLACE FUNCTION tq_advance(p_target BIGINT, p_timeout_ms INT) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE s BIGINT; p BIGINT; owner BIGINT;
BEGIN
  LOOP
    SELECT c.snapshot INTO s FROM tq_clock c WHERE c.id = 1;
    IF s >= p_target THEN
      RETURN s;
    END IF;
    SELECT min(g) INTO p FROM generate_series(s + 1, p_target) AS g
      WHERE NOT EXISTS (SELECT 1 FROM tq_outcome o WHERE o.cts = g);
    IF p IS NULL THEN
      UPDATE tq_clock SET snapshot = greatest(snapshot, p_target) WHERE id = 1;
      RETURN p_target;
    END IF;
    BEGIN
      PERFORM set_config('lock_timeout', p_timeout_ms::text || 'ms', true);
      PERFORM pg_advisory_lock_shared(p);
      PERFORM pg_advisory_unlock_shared(p);
    EXCEPTION WHEN lock_not_available THEN
      NULL;
    END;
    PERFORM set_config('lock_timeout', '0', true);
    SELECT c.txid INTO owner FROM tq_committing c WHERE c.cts = p;
    IF owner IS NULL THEN
      -- No committing row: either a tq_take_cts call between nextval and its lock, or
      -- a call that died. Wait out the calls in flight, then look again.
      PERFORM pg_advisory_lock(7411, 3);
      PERFORM pg_advisory_unlock(7411, 3);
      SELECT c.txid INTO owner FROM tq_committing c WHERE c.cts = p;
      IF owner IS NOT NULL THEN
        CONTINUE;
      END IF;
    END IF;
    INSERT INTO tq_outcome (cts, txid, did_commit) VALUES (p, owner, FALSE) ON CONFLICT (cts) DO NOTHING;
  END LOOP;
END $$;

-- After the outcome of p_cts is written: release it, then advance the snapshot to p_cts
-- (tq_advance; p_cts itself is decided). Returns only when transactions that begin later
-- see p_cts.
CREATE OR REPLACE FUNCTION tq_publish(p_txid BIGINT, p_cts BIGINT, p_timeout_ms INT) RETURNS BIGINT LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);  -- see Durability above
  PERFORM pg_advisory_unlock(p_cts);
  RETURN tq_advance(p_cts, p_timeout_ms);
END $$;

-- Ordered certification (tique/read_sets.py): waits until every commit timestamp below
-- p_cts has an outcome (tq_advance to p_cts - 1), and returns the snapshot then. Unlike
-- tq_publish it leaves p_cts (still undecided) alone.
CREATE OR REPLACE FUNCTION tq_await(p_cts BIGINT, p_timeout_ms INT) RETURNS BIGINT LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);  -- see Durability above
  RETURN tq_advance(p_cts - 1, p_timeout_ms);
END $$;

-- The checkpointer's stable timestamp: at most every running transaction's start (the
-- registrations of this database, tq_registration). The exclusive latch waits out
-- begins in flight, so none is missed. A client that died holds no registration, and
-- its writes never committed without its commit timestamp (tq_take_cts commits with
-- them), which its successors or recovery abort: nothing of it is left to roll back.
CREATE OR REPLACE FUNCTION tq_stable(OUT o_stable BIGINT, OUT o_horizon BIGINT) LANGUAGE plpgsql AS $$
DECLARE s BIGINT; m BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(7411, 0);
  SELECT c.snapshot INTO s FROM tq_clock c WHERE c.id = 1;
  SELECT min(((l.classid::bigint & 65535) << 32) | l.objid::bigint) INTO m FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND (l.classid::bigint >> 16) = 29714
      AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
  o_stable := least(s, coalesce(m, s));
  SELECT coalesce(max(r.txid), 0) INTO o_horizon FROM tq_rolled_back r;
END $$;

-- Recovery: after a server restart (or when forced) every transaction that had begun
-- is over; those without a commit marker are aborted, and the snapshot moves to the
-- last commit timestamp handed out. Idempotent.
CREATE OR REPLACE FUNCTION tq_recover(p_force BOOLEAN) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE last_cts BIGINT; s BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(7411, 1);
  IF NOT p_force AND (SELECT server_started FROM tq_clock WHERE id = 1) = pg_postmaster_start_time() THEN
    RETURN FALSE;
  END IF;
  PERFORM pg_advisory_xact_lock(7411, 0);
  SELECT c.snapshot INTO s FROM tq_clock c WHERE c.id = 1;
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO last_cts FROM tq_cts_seq;
  INSERT INTO tq_outcome (cts, txid, did_commit)
    SELECT g, (SELECT c.txid FROM tq_committing c WHERE c.cts = g LIMIT 1), FALSE
    FROM generate_series(s + 1, last_cts) AS g
  ON CONFLICT (cts) DO NOTHING;
  UPDATE tq_clock SET snapshot = greatest(snapshot, last_cts), server_started = pg_postmaster_start_time() WHERE id = 1;
  RETURN TRUE;
END $$;
