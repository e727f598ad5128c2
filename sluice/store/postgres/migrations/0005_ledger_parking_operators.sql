-- Version 5: the customer ledger (accounts, credits, holds), parking,
-- operators' resolutions, and what the event log records of them (the hold
-- action, the stuck policy's decision, proof by a failure receipt).
--
-- The database keeps, against raw SQL too: every account balanced
-- (balance + held + paid = deposited, each >= 0); credits, holds and the
-- event log append-only where history is concerned; a hold closed at most
-- once (held -> settled | released, never back), by an event of its own
-- operation that says so, with its numbers fixed at creation; the request's
-- customer fixed; the park count and the first send time never going back.
-- Which close (settle or release) is the pipeline's judgement, as in
-- store.Memory: the database checks the structure only.

-- hold_closing_state: the states whose entry must close the operation's hold
-- (sluice.HoldFor is not HoldKeep for exactly these). A drift test compares
-- the list with sluice.HoldFor.
CREATE FUNCTION hold_closing_state(s op_state) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT s IN ('confirmed', 'failed', 'rejected')
$$;

-- operator_transitions are the edges only an operator takes (Store.Resolve),
-- a copy of sluice.OperatorTransitions() in states.go: a drift test parses
-- the INSERT below and compares it with the Go table, so keep one pair per
-- line. An operator may also take any automation edge into failed, which
-- state_transitions already holds.
CREATE TABLE operator_transitions (
	from_state op_state NOT NULL,
	to_state   op_state NOT NULL,
	PRIMARY KEY (from_state, to_state)
);

INSERT INTO operator_transitions (from_state, to_state) VALUES
	('requested', 'failed'),
	('validated', 'failed'),
	('review', 'failed'),
	('review', 'confirmed');

-- The automation edges into review (parked past its bounds).
INSERT INTO state_transitions (from_state, to_state) VALUES
	('validated', 'review'),
	('signing', 'review'),
	('signed', 'review'),
	('broadcasting', 'review');

-- sluice.HoldState and the closing HoldActions (HoldKeep is NULL).
CREATE TYPE hold_state AS ENUM ('held', 'settled', 'released');
CREATE TYPE hold_action AS ENUM ('settle', 'release');
-- sluice.Action, by name: a drift test compares it with the Go names.
CREATE TYPE decision_action AS ENUM ('wait', 'rebuild', 'cancel', 'review');

-- A customer id as sluice.CustomerID.Valid accepts it.
CREATE DOMAIN customer_id AS text CHECK (VALUE ~ '^[A-Za-z0-9._:-]{1,64}$');

-- accounts: one customer's ledger. Intake moves an amount from balance to
-- held, a settle from held to paid, a release from held back to balance;
-- only a credit changes deposited.
CREATE TABLE accounts (
	customer  customer_id PRIMARY KEY,
	balance   numeric(38, 0) NOT NULL DEFAULT 0 CHECK (balance >= 0),
	held      numeric(38, 0) NOT NULL DEFAULT 0 CHECK (held >= 0),
	paid      numeric(38, 0) NOT NULL DEFAULT 0 CHECK (paid >= 0),
	deposited numeric(38, 0) NOT NULL DEFAULT 0 CHECK (deposited >= 0),
	CONSTRAINT accounts_balanced CHECK (balance + held + paid = deposited)
);

-- credits: every deposit, once per ref (the store's idempotency key).
CREATE TABLE credits (
	ref           text PRIMARY KEY CHECK (length(ref) BETWEEN 1 AND 128),
	customer      customer_id NOT NULL REFERENCES accounts (customer),
	amount        numeric(38, 0) NOT NULL CHECK (amount > 0),
	created_at_ns bigint NOT NULL
);

-- The request's customer. A row from before this version gets the legacy
-- customer: sluice knew no customers then, so none can be named. See the
-- reconstruction at the end of this file. ADD COLUMN with a constant
-- default fills existing rows without an UPDATE (the guard refuses any
-- write to a terminal row); the default is dropped at once, so every new
-- row names its customer.
ALTER TABLE operations ADD COLUMN customer customer_id NOT NULL DEFAULT 'legacy:pre-0005';
ALTER TABLE operations ALTER COLUMN customer DROP DEFAULT;
-- FirstSentAt (chain time, as the caller gives it), the park count and the
-- current spell.
ALTER TABLE operations ADD COLUMN first_sent_at_ns bigint;
ALTER TABLE operations ADD COLUMN parks integer NOT NULL DEFAULT 0 CHECK (parks >= 0);
ALTER TABLE operations ADD COLUMN park_reason text NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN parked_since_ns bigint;

-- The List index: the rows of one state in id order.
CREATE INDEX operations_by_state ON operations (state, id);

-- holds: the amount intake took for one operation. Its numbers are the
-- request's, fixed at creation; it is closed at most once.
CREATE TABLE holds (
	operation_id uuid PRIMARY KEY REFERENCES operations (id),
	customer     customer_id NOT NULL REFERENCES accounts (customer),
	amount       numeric(38, 0) NOT NULL CHECK (amount > 0),
	state        hold_state NOT NULL DEFAULT 'held',
	-- The event that settled or released it.
	closed_seq   bigint UNIQUE REFERENCES events (seq),
	CONSTRAINT hold_closed_by_event CHECK ((state = 'held') = (closed_seq IS NULL))
);

CREATE INDEX holds_by_customer ON holds (customer) WHERE state = 'held';

-- The event log records what the transition did to the hold, the stuck
-- policy's decision behind it (all or nothing, like the evidence), and a
-- proof of death by a failure receipt.
ALTER TABLE events ADD COLUMN hold_action hold_action;
ALTER TABLE events ADD COLUMN has_decision boolean NOT NULL DEFAULT false;
ALTER TABLE events ADD COLUMN dec_action decision_action;
ALTER TABLE events ADD COLUMN dec_reason text;
ALTER TABLE events ADD COLUMN dec_waited_ns bigint;
ALTER TABLE events ADD COLUMN dec_rebuilds integer;
ALTER TABLE events ADD CONSTRAINT decision_whole CHECK (has_decision = (dec_action IS NOT NULL AND dec_reason IS NOT NULL
	AND dec_waited_ns IS NOT NULL AND dec_rebuilds IS NOT NULL));
ALTER TABLE events ADD COLUMN ev_receipt text;
ALTER TABLE events ADD COLUMN ev_block_number bigint;

-- operations_guard, version 5. The trigger cannot tell who writes, so it
-- allows the union of the automation edges (state_transitions) and the
-- operator's (operator_transitions); the store's CAS refuses the
-- operator-only edges in code (sluice.CanTransition), and only Resolve
-- takes them (sluice.OperatorCanTransition). A terminal row is a brick
-- except for an operator edge out of it (a review resolved); a retry
-- (same state, the token bumped) is an UPDATE like a claim's.
CREATE OR REPLACE FUNCTION operations_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF OLD.state IN ('confirmed', 'failed', 'rejected', 'review') AND NOT (NEW.state <> OLD.state AND EXISTS (
		SELECT 1 FROM operator_transitions t WHERE t.from_state = OLD.state AND t.to_state = NEW.state
	)) THEN
		RAISE EXCEPTION 'operation % is terminal (%): no write may change it', OLD.id, OLD.state
			USING ERRCODE = 'SL001';
	END IF;
	IF NEW.state <> OLD.state AND NOT EXISTS (
		SELECT 1 FROM state_transitions t WHERE t.from_state = OLD.state AND t.to_state = NEW.state
	) AND NOT EXISTS (
		SELECT 1 FROM operator_transitions t WHERE t.from_state = OLD.state AND t.to_state = NEW.state
	) THEN
		RAISE EXCEPTION 'illegal transition % -> % on operation %', OLD.state, NEW.state, OLD.id
			USING ERRCODE = 'SL001';
	END IF;
	IF NEW.id <> OLD.id OR NEW.seq <> OLD.seq OR NEW.to_address <> OLD.to_address
		OR NEW.amount <> OLD.amount OR NEW.asset <> OLD.asset OR NEW.customer <> OLD.customer
		OR NEW.request_hash <> OLD.request_hash OR NEW.created_at_ns <> OLD.created_at_ns THEN
		RAISE EXCEPTION 'operation %: the request never changes after intake', OLD.id
			USING ERRCODE = 'SL002';
	END IF;
	-- A token that went back could un-fence a zombie.
	IF NEW.token < OLD.token THEN
		RAISE EXCEPTION 'operation %: fencing token % may not go back to %', OLD.id, OLD.token, NEW.token
			USING ERRCODE = 'SL002';
	END IF;
	-- The stuck policy counts from the first send and by the parks: a clock
	-- reset or a count lowered would buy an operation more patience.
	IF NEW.parks < OLD.parks THEN
		RAISE EXCEPTION 'operation %: park count % may not go back to %', OLD.id, OLD.parks, NEW.parks
			USING ERRCODE = 'SL002';
	END IF;
	IF OLD.first_sent_at_ns IS NOT NULL AND NEW.first_sent_at_ns IS DISTINCT FROM OLD.first_sent_at_ns THEN
		RAISE EXCEPTION 'operation %: the first send time is written once', OLD.id
			USING ERRCODE = 'SL002';
	END IF;
	RETURN NEW;
END
$$;

-- events_guard, version 5: the log records only what some writer may do.
-- An edge of either table; an operator's retry (from = to, a state with an
-- automation edge out of it: not terminal); an operator-only edge or retry
-- only under an operator's name (sluice.OperatorPrefix). The hold action
-- fits the state entered: a close exactly when entering a closing state.
CREATE OR REPLACE FUNCTION events_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	by_operator boolean := NEW.worker LIKE 'operator:%';
BEGIN
	IF NEW.from_state IS NULL THEN
		IF NEW.to_state <> 'requested' THEN
			RAISE EXCEPTION 'creation event of % must enter requested, not %', NEW.operation_id, NEW.to_state
				USING ERRCODE = 'SL001';
		END IF;
	ELSIF NEW.from_state = NEW.to_state THEN
		IF NOT by_operator OR NOT EXISTS (SELECT 1 FROM state_transitions t WHERE t.from_state = NEW.from_state) THEN
			RAISE EXCEPTION 'retry % -> % of % by %: only an operator retries, and not a terminal row',
				NEW.from_state, NEW.to_state, NEW.operation_id, NEW.worker
				USING ERRCODE = 'SL001';
		END IF;
	ELSIF NOT EXISTS (
		SELECT 1 FROM state_transitions t WHERE t.from_state = NEW.from_state AND t.to_state = NEW.to_state
	) AND NOT (by_operator AND EXISTS (
		SELECT 1 FROM operator_transitions t WHERE t.from_state = NEW.from_state AND t.to_state = NEW.to_state
	)) THEN
		RAISE EXCEPTION 'illegal transition % -> % in the event log of % (by %)', NEW.from_state, NEW.to_state,
			NEW.operation_id, NEW.worker
			USING ERRCODE = 'SL001';
	END IF;
	IF (NEW.from_state IS NOT NULL AND hold_closing_state(NEW.to_state)) <> (NEW.hold_action IS NOT NULL) THEN
		RAISE EXCEPTION 'event %->% of %: hold action % does not fit the state entered',
			NEW.from_state, NEW.to_state, NEW.operation_id, NEW.hold_action
			USING ERRCODE = 'SL004';
	END IF;
	RETURN NEW;
END
$$;

-- holds_guard: a hold is born held, for its operation's customer and
-- amount; those never change; it is closed once, to settled or released,
-- by an event of its own operation whose hold action says the same, while
-- the operation is in a closing state; a closed hold never changes again.
-- SL003 is a close of a closed hold (the store maps it to
-- sluice.ErrHoldClosed).
CREATE FUNCTION holds_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	op operations%ROWTYPE;
BEGIN
	IF TG_OP = 'INSERT' THEN
		SELECT * INTO op FROM operations WHERE id = NEW.operation_id;
		IF NEW.state <> 'held' OR NEW.closed_seq IS NOT NULL
			OR NEW.customer <> op.customer OR NEW.amount <> op.amount THEN
			RAISE EXCEPTION 'hold of %: born held, for the request''s customer and amount', NEW.operation_id
				USING ERRCODE = 'SL002';
		END IF;
		RETURN NEW;
	END IF;
	IF NEW.operation_id <> OLD.operation_id OR NEW.customer <> OLD.customer OR NEW.amount <> OLD.amount THEN
		RAISE EXCEPTION 'hold of %: its operation, customer and amount never change', OLD.operation_id
			USING ERRCODE = 'SL002';
	END IF;
	IF OLD.state <> 'held' THEN
		RAISE EXCEPTION 'hold of % is already % (event %): a closed hold never changes', OLD.operation_id, OLD.state, OLD.closed_seq
			USING ERRCODE = 'SL003';
	END IF;
	IF NEW.state <> 'held' THEN
		SELECT * INTO op FROM operations WHERE id = NEW.operation_id;
		IF NOT hold_closing_state(op.state) OR NOT EXISTS (
			SELECT 1 FROM events e WHERE e.seq = NEW.closed_seq AND e.operation_id = NEW.operation_id
				AND e.hold_action = (CASE NEW.state WHEN 'settled' THEN 'settle' ELSE 'release' END)::hold_action
		) THEN
			RAISE EXCEPTION 'hold of %: closed % by event %, which is not its operation''s closing event saying so (operation %)',
				NEW.operation_id, NEW.state, NEW.closed_seq, op.state
				USING ERRCODE = 'SL002';
		END IF;
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER holds_guard BEFORE INSERT OR UPDATE ON holds
	FOR EACH ROW EXECUTE FUNCTION holds_guard();

-- accounts_guard: what has been deposited or paid is never taken back.
CREATE FUNCTION accounts_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF NEW.customer <> OLD.customer OR NEW.deposited < OLD.deposited OR NEW.paid < OLD.paid THEN
		RAISE EXCEPTION 'account %: the customer is fixed, deposited and paid never go back', OLD.customer
			USING ERRCODE = 'SL002';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER accounts_guard BEFORE UPDATE ON accounts
	FOR EACH ROW EXECUTE FUNCTION accounts_guard();

-- Money history is not rewritten: no credit, hold or account is deleted,
-- no credit changed.
CREATE TRIGGER credits_append_only BEFORE UPDATE OR DELETE ON credits
	FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER holds_no_delete BEFORE DELETE ON holds
	FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER accounts_no_delete BEFORE DELETE ON accounts
	FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER credits_no_truncate BEFORE TRUNCATE ON credits
	FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER holds_no_truncate BEFORE TRUNCATE ON holds
	FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER accounts_no_truncate BEFORE TRUNCATE ON accounts
	FOR EACH STATEMENT EXECUTE FUNCTION append_only();

-- The rows from before this version. They all belong to the legacy
-- customer 'legacy:pre-0005'. Rows whose money already moved (confirmed,
-- failed, rejected) get no hold: nothing is left to settle or release, and
-- Store.Hold answers ErrNotFound for them. Every other row (in flight, or
-- in review) gets a hold of its amount, so that it can still be closed
-- when it ends; the legacy account is credited with exactly what those
-- holds take (one credit, ref 'migration-0005:legacy'), so it balances with
-- nothing to withdraw: balance 0, held the sum, deposited the sum.
INSERT INTO accounts (customer, balance, held, paid, deposited)
SELECT 'legacy:pre-0005', 0, sum(amount), 0, sum(amount)
FROM operations WHERE NOT hold_closing_state(state)
HAVING count(*) > 0;

INSERT INTO credits (ref, customer, amount, created_at_ns)
SELECT 'migration-0005:legacy', customer, deposited, sluice_now_ns()
FROM accounts WHERE customer = 'legacy:pre-0005';

INSERT INTO holds (operation_id, customer, amount)
SELECT id, customer, amount FROM operations WHERE NOT hold_closing_state(state)
ORDER BY seq;

-- A row in flight that has been sent takes its first send time from the log:
-- the store's clock at its first write-ahead, the nearest record of the
-- chain's time then (which was not recorded). Without it the stuck policy
-- would measure no waiting at all; with an approximation it acts somewhat
-- earlier or later, and only ever on proof of death.
-- Terminal rows (those with no automation edge out) are left alone: the
-- guard refuses any write to them, and nothing measures their waiting.
UPDATE operations o SET first_sent_at_ns = (
	SELECT min(e.at_ns) FROM events e WHERE e.operation_id = o.id AND e.to_state = 'broadcasting'
)
WHERE EXISTS (SELECT 1 FROM state_transitions t WHERE t.from_state = o.state)
	AND EXISTS (SELECT 1 FROM events e WHERE e.operation_id = o.id AND e.to_state = 'broadcasting');
