package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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
	req := sluice.Request{To: alice, Amount: money.Amount(2_500_000), Asset: "USDT-TRC20"}
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
