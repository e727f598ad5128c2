package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store/postgres"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// racingNode is a node whose chain moves between the audit's read of the
// database and its read of the chain: when asked for its truth, it first
// runs land (a worker's write-ahead committing right then), then answers
// with the chain including what land sent.
type racingNode struct {
	land func() tron.Txid
	sent tron.Txid
}

func (n *racingNode) Truth(context.Context) (nodehttp.Truth, error) {
	sent := n.land()
	n.sent = sent
	tr := chain(paid(sent, 4, 2_500_000))
	tr.Wire = []mocknode.WireAttempt{{Seq: 1, Txid: sent, Accepted: true}}
	tr.Accepted = []mocknode.Acceptance{{Txid: sent, Times: 1}}
	return tr, nil
}

func (n *racingNode) Lookup(_ context.Context, id tron.Txid) (tron.TxInfo, error) {
	if id != n.sent {
		return tron.TxInfo{Txid: id, Status: tron.Unknown}, nil
	}
	return tron.TxInfo{Txid: id, Status: tron.Included, BlockNumber: 4, Solid: true, Receipt: tron.ReceiptSuccess,
		Logs: []tron.Log{tron.TransferLog(tron.USDTContract, hot, alice, 2_500_000)}}, nil
}

// Goal: a worker's write-ahead that commits after the audit read the
// database, and whose transaction is on chain by the time the audit reads
// the chain, is no violation: the audit asks txid_owners about the txids
// nobody owned at its read, finds this one owned now, and leaves it to the
// next audit. A txid nobody owns even then stays a violation (the other
// tests). Method: the real PostgreSQL store; the write lands inside the
// node's answer, so the race happens every time.
func TestRunWriteAheadAfterTheRead(t *testing.T) {
	pool := freshPool(t)
	ctx := t.Context()
	st := postgres.New(pool, postgres.Options{Lease: time.Minute})
	id := sluice.OperationID("44444444-4444-4444-8444-000000000001")
	req := sluice.Request{Customer: customer, To: alice, Amount: money.Amount(2_500_000), Asset: "USDT-TRC20"}
	if _, _, err := st.Credit(ctx, sluice.Credit{Ref: "wire-1", Customer: customer, Amount: req.Amount}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Insert(ctx, sluice.NewOperation{ID: id, Request: req, RequestHash: "h"}); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, "w1", 1)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	tok := claimed[0].Token
	if _, err := st.CAS(ctx, sluice.Change{ID: id, Token: tok, Worker: "w1", From: sluice.Requested, To: sluice.Validated}); err != nil {
		t.Fatal(err)
	}
	raw := tron.RawData{Expiration: t0.Add(time.Minute).UnixMilli(), Memo: []byte(id),
		Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(alice, 2_500_000)}}
	node := &racingNode{land: func() tron.Txid {
		env := sluice.Envelope{Txid: raw.Txid(), Raw: raw}
		if _, err := st.CAS(context.Background(), sluice.Change{ID: id, Token: tok, Worker: "w1", From: sluice.Validated, To: sluice.Signing, Envelope: &env, Builds: 1}); err != nil {
			t.Errorf("the racing write-ahead: %v", err)
		}
		return env.Txid
	}}
	rep, err := Run(ctx, pool, node, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) != 0 || rep.Deferred != 1 || rep.States["validated"] != 1 {
		t.Errorf("a write-ahead between the reads: states %v, %d deferred, violations %v; want the row read validated, its txid deferred, no violation",
			rep.States, rep.Deferred, rep.Violations)
	}
}

// freshPool is a pool on a schema of the test's own, migrated; the schema is
// dropped at the end.
func freshPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	base := storetest.DatabaseURL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "audit_" + hex.EncodeToString(b[:])
	admin, err := pgxpool.New(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		admin.Close()
	})
	if _, err := admin.Exec(t.Context(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	pool, err := pgxpool.New(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// quietNode is a chain on which nothing was sent: the withdrawals of
// TestRunLedgerPlanted never left the database.
type quietNode struct{}

func (quietNode) Truth(context.Context) (nodehttp.Truth, error) { return chain(), nil }

func (quietNode) Lookup(_ context.Context, id tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{Txid: id, Status: tron.Unknown}, nil
}

// Goal: funds, through Run, reads the ledger from the database and finds
// what raw SQL planted behind the store's back, each alone, and nothing
// once it is taken back: a hold released twice (a second release in the
// log and the balance credited again), an account whose paid moved without
// a confirmed operation (every number in range, the account balanced: the
// database's own checks pass it), and an account that does not add up. A
// clean ledger with a withdrawal cancelled (hold released) and one in
// flight (held) passes.
//
// Method: the real PostgreSQL store makes the clean state (a credit, two
// withdrawals, an operator's cancel of one before any send); the plants
// are raw SQL. The schema's triggers refuse a second close and an event on
// a terminal row, and money going back: the plants that need it run with
// SET LOCAL session_replication_role = replica, which turns every ordinary
// trigger off for the transaction (the test database's user is a
// superuser) while CHECK constraints still hold; the unbalanced account
// needs its CHECK dropped, which the test's own schema allows.
func TestRunLedgerPlanted(t *testing.T) {
	pool := freshPool(t)
	ctx := t.Context()
	st := postgres.New(pool, postgres.Options{Lease: time.Minute})
	if _, _, err := st.Credit(ctx, sluice.Credit{Ref: "wire-1", Customer: customer, Amount: 1_000_000_000}); err != nil {
		t.Fatal(err)
	}
	cancelled := sluice.OperationID("44444444-4444-4444-8444-000000000001")
	inFlight := sluice.OperationID("44444444-4444-4444-8444-000000000002")
	for _, id := range []sluice.OperationID{cancelled, inFlight} {
		req := sluice.Request{Customer: customer, To: alice, Amount: 200_000_000, Asset: "USDT-TRC20"}
		if _, _, err := st.Insert(ctx, sluice.NewOperation{ID: id, Request: req, RequestHash: "h" + string(id)}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := st.Claim(ctx, "w1", 1)
	if err != nil || len(claimed) != 1 || claimed[0].ID != cancelled {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	if _, err := st.CAS(ctx, sluice.Change{ID: cancelled, Token: claimed[0].Token, Worker: "w1", From: sluice.Requested, To: sluice.Validated}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resolve(ctx, sluice.Resolution{ID: cancelled, From: sluice.Validated, To: sluice.Failed, Operator: "alice",
		Why: "customer asked", Hold: sluice.HoldRelease}); err != nil {
		t.Fatal(err)
	}

	audit := func(t *testing.T) *Report {
		t.Helper()
		rep, err := Run(ctx, pool, quietNode{}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	exec := func(t *testing.T, sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	// found checks that the audit finds, by funds, a violation saying each
	// of want, and by no other invariant than also.
	found := func(t *testing.T, rep *Report, also []string, want ...string) {
		t.Helper()
		var got []string
		for _, v := range rep.Violations {
			switch {
			case v.Invariant == model.Funds:
				got = append(got, v.Message)
			case !slices.Contains(also, v.Invariant):
				t.Errorf("a violation of %s: %s", v.Invariant, v.Message)
			}
		}
		for _, w := range want {
			if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, w) }) {
				t.Errorf("funds found %q; want one saying %q", got, w)
			}
		}
	}
	clean := func(t *testing.T) {
		t.Helper()
		if rep := audit(t); len(rep.Violations) != 0 {
			t.Errorf("violations %v, want none", rep.Violations)
		}
	}

	if !t.Run("clean", func(t *testing.T) {
		rep := audit(t)
		if len(rep.Violations) != 0 || !slices.Contains(rep.Checked, Count{model.Funds, 0}) {
			t.Errorf("a clean ledger: checked %v, violations %v; want funds run and nothing found", rep.Checked, rep.Violations)
		}
		if m := rep.Money; m.Accounts != 1 || m.Credits != 1 || m.Held != 1 || m.Released != 1 || m.Settled != 0 || m.Deposited != 1_000_000_000 {
			t.Errorf("money read: %+v; want one account, one credit of 1000 USDT, one hold held and one released", m)
		}
	}) {
		return
	}

	t.Run("hold released twice", func(t *testing.T) {
		// A second release of the cancelled withdrawal's hold: an event
		// saying so (events_guard refuses any event on a terminal row), and
		// the balance credited again out of held, the in-flight hold's
		// share, so that the account still adds up.
		exec(t, `BEGIN;
			SET LOCAL session_replication_role = replica;
			INSERT INTO events (operation_id, from_state, to_state, token, worker, at_ns, note, hold_action)
			SELECT id, 'failed', 'failed', token, 'planted', updated_at_ns + 1, 'planted: a second release', 'release'
			FROM operations WHERE id = '`+string(cancelled)+`';
			UPDATE accounts SET balance = balance + 200000000, held = held - 200000000 WHERE customer = '`+string(customer)+`';
			COMMIT`)
		found(t, audit(t), []string{model.AuditLog, model.NoOperationalFailure}, "releases the hold a second time (already released at event #",
			"the store's account is balance 1000000000, held 0, paid 0; by the operations' states it must be balance 800000000, held 200000000, paid 0")
		exec(t, `BEGIN;
			SET LOCAL session_replication_role = replica;
			DELETE FROM events WHERE worker = 'planted';
			UPDATE accounts SET balance = balance - 200000000, held = held + 200000000 WHERE customer = '`+string(customer)+`';
			COMMIT`)
		clean(t)
	})

	t.Run("paid without a confirmation", func(t *testing.T) {
		// Consistent but wrong: every number in range and the account
		// balanced, so no trigger or CHECK refuses it (paid may grow).
		exec(t, `UPDATE accounts SET balance = balance - 5000000, paid = paid + 5000000 WHERE customer = '`+string(customer)+`'`)
		found(t, audit(t), nil, "paid 5000000; by the operations' states it must be balance 800000000, held 200000000, paid 0")
		// accounts_guard refuses paid going back.
		exec(t, `BEGIN;
			SET LOCAL session_replication_role = replica;
			UPDATE accounts SET balance = balance + 5000000, paid = paid - 5000000 WHERE customer = '`+string(customer)+`';
			COMMIT`)
		clean(t)
	})

	t.Run("ledger emptied", func(t *testing.T) {
		// Every credit, account and hold gone (a restore of the operations
		// alone, or raw SQL with the triggers off): the rows still ask for
		// holds, and an empty ledger is not a balanced one.
		exec(t, `BEGIN;
			SET LOCAL session_replication_role = replica;
			CREATE TABLE saved_credits AS SELECT * FROM credits;
			CREATE TABLE saved_accounts AS SELECT * FROM accounts;
			CREATE TABLE saved_holds AS SELECT * FROM holds;
			DELETE FROM holds; DELETE FROM credits; DELETE FROM accounts;
			COMMIT`)
		found(t, audit(t), nil, "the database holds 2 operations but no credit, account or hold",
			"op "+string(inFlight)+" (requested) has no hold")
		exec(t, `BEGIN;
			SET LOCAL session_replication_role = replica;
			INSERT INTO accounts SELECT * FROM saved_accounts;
			INSERT INTO credits SELECT * FROM saved_credits;
			INSERT INTO holds SELECT * FROM saved_holds;
			DROP TABLE saved_credits, saved_accounts, saved_holds;
			COMMIT`)
		clean(t)
	})

	t.Run("ledger unreadable", func(t *testing.T) {
		// The rows read but the ledger does not (here its credits table
		// is gone; a role without SELECT on it, or an amount past uint64,
		// fails the same read): the audit could not judge funds, so it
		// must fail, not report a clean ledger it never read.
		exec(t, `ALTER TABLE credits RENAME TO credits_away`)
		rep, err := Run(ctx, pool, quietNode{}, Config{})
		if err == nil || !strings.Contains(err.Error(), "credits") {
			t.Errorf("audit with the credits unreadable: report %+v, error %v; want an error naming the credits", rep, err)
		}
		exec(t, `ALTER TABLE credits_away RENAME TO credits`)
		clean(t)
	})

	t.Run("account that does not add up", func(t *testing.T) {
		exec(t, `ALTER TABLE accounts DROP CONSTRAINT accounts_balanced;
			UPDATE accounts SET balance = balance + 3 WHERE customer = '`+string(customer)+`'`)
		found(t, audit(t), nil, "did not add up at the audit's read: account c1 has balance 800000003 + held 200000000 + paid 0 != deposited 1000000000")
		exec(t, `UPDATE accounts SET balance = balance - 3 WHERE customer = '`+string(customer)+`';
			ALTER TABLE accounts ADD CONSTRAINT accounts_balanced CHECK (balance + held + paid = deposited)`)
		clean(t)
	})
}
