-- The rules for the review state: its one edge into it, and review among the
-- terminal states everywhere the schema lists them (the lease constraint,
-- the live-rows index, the update guard). A drift test compares the edge
-- with sluice.Transitions() and each list with sluice.State.Terminal.

INSERT INTO state_transitions (from_state, to_state) VALUES
	('broadcast', 'review');

ALTER TABLE operations DROP CONSTRAINT terminal_unleased;
ALTER TABLE operations ADD CONSTRAINT terminal_unleased
	CHECK (claimed_by IS NULL OR state NOT IN ('confirmed', 'failed', 'rejected', 'review'));

DROP INDEX operations_live;
CREATE INDEX operations_live ON operations (seq)
	WHERE state NOT IN ('confirmed', 'failed', 'rejected', 'review');

CREATE OR REPLACE FUNCTION operations_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
	IF OLD.state IN ('confirmed', 'failed', 'rejected', 'review') THEN
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
