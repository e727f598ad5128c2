-- sluice's schema, version 1. The database, not the application, is the last
-- line against a double spend: every rule below holds even for a raw psql
-- session that bypasses the Go code.
--
-- Times are bigint nanoseconds since the Unix epoch (columns end in _ns), not
-- timestamptz: timestamptz keeps microseconds, and the Store contract ends a
-- lease at exactly lease_until, to the nanosecond, as the in-memory store
-- does. Rounding would make the two stores disagree at the boundary.

CREATE TYPE op_state AS ENUM (
	'requested', 'validated', 'signing', 'signed',
	'broadcasting', 'broadcast', 'confirmed', 'failed', 'rejected'
);

-- state_transitions is the transition table, a copy of sluice.Transitions()
-- in states.go (the single source of truth). A drift test parses the INSERT
-- below and compares it with the Go table, so keep one pair per line.
CREATE TABLE state_transitions (
	from_state op_state NOT NULL,
	to_state   op_state NOT NULL,
	PRIMARY KEY (from_state, to_state)
);

INSERT INTO state_transitions (from_state, to_state) VALUES
	('requested', 'validated'),
	('requested', 'rejected'),
	('validated', 'signing'),
	('validated', 'rejected'),
	('signing', 'signed'),
	('signing', 'failed'),
	('signed', 'broadcasting'),
	('signed', 'signing'),
	('signed', 'failed'),
	('broadcasting', 'broadcast'),
	('broadcasting', 'signing'),
	('broadcasting', 'failed'),
	('broadcast', 'confirmed'),
	('broadcast', 'signing'),
	('broadcast', 'failed');

-- sluice_now_ns is the store's clock in production: the transaction's now().
-- Every statement reads COALESCE($injected, sluice_now_ns()), so tests can
-- drive time by hand while production uses the database's clock only.
CREATE FUNCTION sluice_now_ns() RETURNS bigint
LANGUAGE sql STABLE AS $$
	SELECT (extract(epoch FROM now()) * 1000000)::bigint * 1000
$$;

CREATE TABLE operations (
	id           uuid PRIMARY KEY,
	-- seq is insertion order: Claim takes the oldest first.
	seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	to_address   bytea NOT NULL CHECK (length(to_address) = 21),
	-- NUMERIC(38,0): an integer of base units, never a float; wide enough
	-- for any token's supply, so no amount is ever silently truncated.
	amount       numeric(38, 0) NOT NULL CHECK (amount > 0),
	asset        text NOT NULL,
	request_hash text NOT NULL CHECK (request_hash <> ''),
	state        op_state NOT NULL,

	token          bigint NOT NULL DEFAULT 0 CHECK (token >= 0),
	claimed_by     text CHECK (claimed_by <> ''),
	lease_until_ns bigint,
	not_before_ns  bigint NOT NULL,

	txid      bytea CHECK (length(txid) = 32),
	raw_data  bytea,
	signature bytea,
	builds    integer NOT NULL DEFAULT 0 CHECK (builds >= 0),
	reason    text NOT NULL DEFAULT '',

	created_at_ns bigint NOT NULL,
	updated_at_ns bigint NOT NULL,

	-- A lease is a holder and an end, or neither.
	CONSTRAINT lease_whole CHECK ((claimed_by IS NULL) = (lease_until_ns IS NULL)),
	-- Invariant: token > 0 whenever claimed_by is set.
	CONSTRAINT claim_has_token CHECK (claimed_by IS NULL OR token > 0),
	-- A terminal row holds no lease: entering it clears the lease.
	CONSTRAINT terminal_unleased CHECK (claimed_by IS NULL OR state NOT IN ('confirmed', 'failed', 'rejected')),
	-- The write-ahead rule stores the txid with the bytes it hashes; a txid
	-- that its raw_data cannot produce would send recovery after the wrong
	-- transaction.
	CONSTRAINT envelope_whole CHECK ((txid IS NULL) = (raw_data IS NULL)),
	CONSTRAINT txid_is_hash CHECK (txid IS NULL OR txid = sha256(raw_data)),
	CONSTRAINT signature_needs_envelope CHECK (signature IS NULL OR txid IS NOT NULL)
);

-- The claim query's index: only live (non-terminal) rows, in age order. It
-- stays small however many withdrawals have finished.
CREATE INDEX operations_live ON operations (seq)
	WHERE state NOT IN ('confirmed', 'failed', 'rejected');

-- A current txid belongs to one operation ...
CREATE UNIQUE INDEX operations_txid ON operations (txid) WHERE txid IS NOT NULL;

-- ... and every txid ever stored, current or retired, belongs to one
-- operation forever: a rebuild of another operation reusing a retired txid
-- would give two withdrawals one on-chain fate. Rows here are never updated
-- or deleted (see the append-only trigger).
CREATE TABLE txid_owners (
	txid         bytea PRIMARY KEY CHECK (length(txid) = 32),
	operation_id uuid NOT NULL REFERENCES operations (id),
	UNIQUE (txid, operation_id)
);

-- An operation may hold a txid only if it owns it. Deferred, so the store can
-- write the row and then claim the txid in the same transaction; the store
-- sets it IMMEDIATE right after, to learn the answer before commit.
ALTER TABLE operations ADD CONSTRAINT operations_txid_owner
	FOREIGN KEY (txid, id) REFERENCES txid_owners (txid, operation_id)
	DEFERRABLE INITIALLY DEFERRED;

-- The append-only event log. Every transition writes one row in the same
-- transaction as the row it audits.
CREATE TABLE events (
	seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	operation_id uuid NOT NULL REFERENCES operations (id),
	from_state   op_state,          -- NULL: the creation event
	to_state     op_state NOT NULL,
	token        bigint NOT NULL CHECK (token >= 0),
	worker       text NOT NULL,
	at_ns        bigint NOT NULL,
	txid         bytea,
	retired_txid bytea,
	note         text NOT NULL,
	-- Evidence (proof of death), on rebuilds only; all or nothing.
	has_evidence       boolean NOT NULL DEFAULT false,
	ev_txid            bytea,
	ev_expiration_ns   bigint,
	ev_margin_ns       bigint,
	ev_solid_number    bigint,
	ev_solid_time_ns   bigint,
	ev_lookup          integer,
	CONSTRAINT evidence_whole CHECK (has_evidence = (ev_txid IS NOT NULL AND ev_margin_ns IS NOT NULL
		AND ev_solid_number IS NOT NULL AND ev_lookup IS NOT NULL))
);

CREATE INDEX events_by_operation ON events (operation_id, seq);

-- The guards raise SQLSTATE SL001 (illegal transition or terminal row) and
-- SL002 (any other forbidden write); the store maps SL001 to
-- sluice.ErrIllegalTransition. SET search_path FROM CURRENT pins the
-- functions to this schema, so a session with another search_path cannot
-- point them at other tables.

-- operations_guard enforces the transition table and the immutability of
-- terminal rows and of the request on every UPDATE, whoever issues it.
CREATE FUNCTION operations_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF OLD.state IN ('confirmed', 'failed', 'rejected') THEN
		RAISE EXCEPTION 'operation % is terminal (%): no write may change it', OLD.id, OLD.state
			USING ERRCODE = 'SL001';
	END IF;
	IF NEW.state <> OLD.state AND NOT EXISTS (
		SELECT 1 FROM state_transitions t WHERE t.from_state = OLD.state AND t.to_state = NEW.state
	) THEN
		RAISE EXCEPTION 'illegal transition % -> % on operation %', OLD.state, NEW.state, OLD.id
			USING ERRCODE = 'SL001';
	END IF;
	IF NEW.id <> OLD.id OR NEW.seq <> OLD.seq OR NEW.to_address <> OLD.to_address
		OR NEW.amount <> OLD.amount OR NEW.asset <> OLD.asset
		OR NEW.request_hash <> OLD.request_hash OR NEW.created_at_ns <> OLD.created_at_ns THEN
		RAISE EXCEPTION 'operation %: the request never changes after intake', OLD.id
			USING ERRCODE = 'SL002';
	END IF;
	-- A token that went back could un-fence a zombie.
	IF NEW.token < OLD.token THEN
		RAISE EXCEPTION 'operation %: fencing token % may not go back to %', OLD.id, OLD.token, NEW.token
			USING ERRCODE = 'SL002';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER operations_guard BEFORE UPDATE ON operations
	FOR EACH ROW EXECUTE FUNCTION operations_guard();

-- operations_birth: a row is born requested, unclaimed, with no envelope, so
-- that raw SQL cannot create a withdrawal that skipped validation.
CREATE FUNCTION operations_birth() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF NEW.state <> 'requested' OR NEW.token <> 0 OR NEW.claimed_by IS NOT NULL
		OR NEW.txid IS NOT NULL OR NEW.builds <> 0 THEN
		RAISE EXCEPTION 'operation %: a new row starts requested, unclaimed, without an envelope', NEW.id
			USING ERRCODE = 'SL002';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER operations_birth BEFORE INSERT ON operations
	FOR EACH ROW EXECUTE FUNCTION operations_birth();

-- events_guard: the log records only edges of the table (or a creation), so
-- it cannot claim a history the state machine forbids.
CREATE FUNCTION events_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF NEW.from_state IS NULL THEN
		IF NEW.to_state <> 'requested' THEN
			RAISE EXCEPTION 'creation event of % must enter requested, not %', NEW.operation_id, NEW.to_state
				USING ERRCODE = 'SL001';
		END IF;
	ELSIF NOT EXISTS (
		SELECT 1 FROM state_transitions t WHERE t.from_state = NEW.from_state AND t.to_state = NEW.to_state
	) THEN
		RAISE EXCEPTION 'illegal transition % -> % in the event log of %', NEW.from_state, NEW.to_state, NEW.operation_id
			USING ERRCODE = 'SL001';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER events_guard BEFORE INSERT ON events
	FOR EACH ROW EXECUTE FUNCTION events_guard();

-- append_only refuses every UPDATE and DELETE on the audit log and on txid
-- ownership: history is not rewritten, and a txid is never given back.
CREATE FUNCTION append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'SL002';
END
$$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
	FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER txid_owners_append_only BEFORE UPDATE OR DELETE ON txid_owners
	FOR EACH ROW EXECUTE FUNCTION append_only();
-- TRUNCATE skips row triggers; refuse it too.
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
	FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER txid_owners_no_truncate BEFORE TRUNCATE ON txid_owners
	FOR EACH STATEMENT EXECUTE FUNCTION append_only();
