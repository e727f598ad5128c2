package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"sluicesim/cmd/internal/audit"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/nodehttp"
)

// Goal: a command line the audit cannot act on is refused with exit 2 and
// a message naming what is wrong, before anything is read; -h is not an
// error.
func TestAuditUsage(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	db := []string{"-database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}
	node := []string{"-node", "http://127.0.0.1:1"}
	var help, errb strings.Builder
	if code := runAudit([]string{"-h"}, &help, &errb); code != 0 || errb.Len() != 0 ||
		!strings.HasPrefix(help.String(), "usage: sluice audit") || !strings.Contains(help.String(), "-rescan N") {
		t.Errorf("sluice audit -h: exit %d, stdout %q, stderr %q; want 0 and the usage with the flags on stdout", code, help.String(), errb.String())
	}
	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"-bogus"}, 2, "-bogus"},
		{node, 2, "no database"},
		{db, 2, "-node is required"},
		{append(append([]string{"stray"}, db...), node...), 2, `unexpected argument "stray"`},
		{append(append(db, node...), "stray"), 2, `unexpected argument "stray"`},
		{append(append(db, node...), "-rescan", "-1"), 2, "-rescan -1"},
		{append(append(db, node...), "-timeout", "0s"), 2, "-timeout 0s"},
		{append(db, "-node", "127.0.0.1:9000"), 2, "-node"},
		{append(append(db, node...), "-json", filepath.Join(t.TempDir(), "no", "such", "dir", "r.json")), 2, "-json"},
		{append(db, node...), 2, "database:"}, // nothing listens on port 1
	} {
		var out, errb strings.Builder
		code := runAudit(c.args, &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.say) {
			t.Errorf("sluice audit %q: exit %d, stderr %q; want exit %d and a message with %q", c.args, code, errb.String(), c.code, c.say)
		}
	}
}

// Goal: sluice audit passes a clean live system, its ledger included, and
// finds, each named, a fault planted behind sluice's back: a second
// confirmed event written with raw SQL; a settled hold released as well
// (closed twice, the customer's balance credited again); an account whose
// paid moved without a confirmed operation; and a transfer from the hot
// wallet that no operation owns (signed with the hot wallet's key and
// broadcast straight to the node). Reconciliation finds the transfer only
// inside its window of solid blocks, while the invariants over the whole
// chain still do. A node without ground truth is refused with exit 2.
//
// Method: sluice serve (API, two workers, the mock node served on
// loopback, the customer funded with -fund) against a schema of its own;
// three withdrawals posted and driven to confirmed by the real workers; the
// workers keep running while the audit reads, as on a live system. A plant
// the schema's triggers would refuse (an event on a terminal row, paid
// going back) runs with SET LOCAL session_replication_role = replica, which
// turns every ordinary trigger off for its transaction (the test
// database's user is a superuser) while CHECK constraints still hold.
func TestAuditLive(t *testing.T) {
	dbURL := freshSchema(t)
	api, nodeURL := startServe(t, dbURL)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	to := tron.AddressFromBytes20([20]byte{0xa0, 0xd1, 0x70}).String()
	for i := range 3 {
		body := fmt.Sprintf(`{"operation_id":"22222222-2222-4222-8222-%012d","customer":%q,"to_address":%q,"amount":"%d.25","asset":"USDT-TRC20"}`, i, auditCustomer, to, i+1)
		resp, err := http.Post(api+"/v1/withdrawals", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d, want 201", body, resp.StatusCode)
		}
	}
	run := func(t *testing.T, wantCode int, extra ...string) string {
		t.Helper()
		var out, errb strings.Builder
		args := append([]string{"-database-url", dbURL, "-node", nodeURL}, extra...)
		code := runAudit(args, &out, &errb)
		if code != wantCode {
			t.Fatalf("sluice audit %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", extra, code, wantCode, out.String(), errb.String())
		}
		return out.String()
	}

	// Audited again and again while the workers move the withdrawals, as
	// an operator would on a busy system: a transaction on chain that the
	// workers have not yet seen solid, or written ahead after the read, is
	// no violation.
	if !t.Run("in flight", func(t *testing.T) {
		var audits, sawOpen, deferred int
		waitFor(t, 90*time.Second, "every withdrawal confirmed", func() bool {
			path := filepath.Join(t.TempDir(), "r.json")
			run(t, 0, "-json", path)
			var rep audit.Report
			if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &rep) != nil {
				t.Fatalf("-json: %v", err)
			}
			audits++
			if rep.Open > 0 {
				sawOpen++
			}
			deferred += rep.Deferred
			return rep.States["confirmed"] == 3
		})
		if sawOpen == 0 {
			t.Errorf("%d audits, none while a withdrawal was open: nothing was audited in flight", audits)
		}
		t.Logf("%d audits while in flight, %d saw open withdrawals, %d txids deferred in all", audits, sawOpen, deferred)
	}) {
		return
	}

	if !t.Run("clean", func(t *testing.T) {
		out := run(t, 0)
		for _, want := range []string{"operations: 3, confirmed 3; 0 open", "verdict: every invariant holds",
			"ledger: 1 accounts, 1 credits (100 USDT deposited); holds: 0 held, 3 settled, 0 released",
			"  funds                0\n", "  no-operational-failure 0\n", "reconciliation: solid blocks #"} {
			if !strings.Contains(out, want) {
				t.Errorf("clean audit: output lacks %q:\n%s", want, out)
			}
		}
	}) {
		return
	}

	// The report names the database and the node it audited, and it is
	// pasted into tickets and mailed by cron: no URL's password may be in
	// any line of it, nor of its errors. The test cluster trusts its clients (.ci/
	// postgres.sh), so a password added to a URL without one is ignored;
	// a URL that has one keeps it.
	if !t.Run("password not printed", func(t *testing.T) {
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		secret, ok := u.User.Password()
		if !ok {
			secret = "audit-test-password-5f1c"
			u.User = url.UserPassword(u.User.Username(), secret)
		}
		// A node behind basic auth is named with its password too (the
		// mock's server asks for none and ignores it).
		const nodeSecret = "node-test-password-9e2a"
		nu, err := url.Parse(nodeURL)
		if err != nil {
			t.Fatal(err)
		}
		nu.User = url.UserPassword("sluice", nodeSecret)
		var out, errb strings.Builder
		code := runAudit([]string{"-database-url", u.String(), "-node", nu.String()}, &out, &errb)
		if code != 0 {
			t.Fatalf("sluice audit with passwords in the URLs: exit %d, want 0\nstderr:\n%s", code, errb.String())
		}
		first, _, _ := strings.Cut(out.String(), "\n")
		if !strings.HasPrefix(first, "sluice audit: database ") || !strings.Contains(first, "; node http://sluice:xxxxx@") {
			t.Errorf("the report's first line does not name the database and the node (its password hidden): %q", first)
		}
		for _, pw := range []string{secret, nodeSecret} {
			if strings.Contains(out.String(), pw) || strings.Contains(errb.String(), pw) {
				t.Errorf("the audit printed the password %q:\nstdout:\n%s\nstderr:\n%s", pw, out.String(), errb.String())
			}
		}
	}) {
		return
	}

	if !t.Run("second confirmed event", func(t *testing.T) {
		var id string
		err := conn.QueryRow(ctx, `
			INSERT INTO events (operation_id, from_state, to_state, token, worker, at_ns, txid, note, hold_action)
			SELECT id, 'broadcast', 'confirmed', token, 'planted', updated_at_ns + 1, txid, 'planted: a second confirmation', 'settle'
			FROM operations ORDER BY seq LIMIT 1
			RETURNING operation_id::text`).Scan(&id)
		if err != nil {
			t.Fatalf("planting: %v", err)
		}
		// A confirmation settles the hold (the schema wants the hold
		// action of the state entered), so this one settles it a second
		// time: funds names it too.
		out := run(t, 1)
		want := "audit-log: op " + id + " event #"
		if !strings.Contains(out, "verdict: 2 violation(s)") || !strings.Contains(out, want) || !strings.Contains(out, "broadcast->confirmed does not start where") ||
			!strings.Contains(out, "funds: op "+id+" event #") || !strings.Contains(out, "broadcast->confirmed settles the hold a second time (already settled at event #") {
			t.Errorf("after a second confirmed event of %s: want two violations naming it, audit-log's (%q) and funds' (a second settle):\n%s", id, want, out)
		}
		// Take it back (the log is append-only, so only with its guard
		// off): the audit passes again, so the plant was all it found.
		_, err = conn.Exec(ctx, `BEGIN;
			ALTER TABLE events DISABLE TRIGGER events_append_only;
			DELETE FROM events WHERE worker = 'planted';
			ALTER TABLE events ENABLE TRIGGER events_append_only;
			COMMIT`)
		if err != nil {
			t.Fatalf("removing the plant: %v", err)
		}
		run(t, 0)
	}) {
		return
	}

	// first is the first withdrawal's id, for the plants on its hold.
	var first string
	if err := conn.QueryRow(ctx, `SELECT id::text FROM operations ORDER BY seq LIMIT 1`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	if !t.Run("settled hold released too", func(t *testing.T) {
		_, err := conn.Exec(ctx, `BEGIN;
			SET LOCAL session_replication_role = replica;
			INSERT INTO events (operation_id, from_state, to_state, token, worker, at_ns, note, hold_action)
			SELECT id, 'confirmed', 'failed', token, 'planted', updated_at_ns + 1, 'planted: a second close', 'release'
			FROM operations WHERE id = '`+first+`';
			UPDATE accounts a SET balance = a.balance + o.amount, paid = a.paid - o.amount
			FROM operations o WHERE o.id = '`+first+`' AND a.customer = o.customer;
			COMMIT`)
		if err != nil {
			t.Fatalf("planting: %v", err)
		}
		out := run(t, 1)
		for _, want := range []string{
			"funds: op " + first + " event #",
			"confirmed->failed releases the hold a second time (already settled at event #",
			"funds: customer " + auditCustomer + ": the store's account is balance 94500000, held 0, paid 5500000; by the operations' states it must be balance 93250000, held 0, paid 6750000",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("after a settled hold released as well: output lacks %q:\n%s", want, out)
			}
		}
		_, err = conn.Exec(ctx, `BEGIN;
			SET LOCAL session_replication_role = replica;
			DELETE FROM events WHERE worker = 'planted';
			UPDATE accounts a SET balance = a.balance - o.amount, paid = a.paid + o.amount
			FROM operations o WHERE o.id = '`+first+`' AND a.customer = o.customer;
			COMMIT`)
		if err != nil {
			t.Fatalf("removing the plant: %v", err)
		}
		run(t, 0)
	}) {
		return
	}

	if !t.Run("paid without a confirmation", func(t *testing.T) {
		// Consistent but wrong: the account stays balanced and paid may
		// grow, so the database's own checks let it through.
		if _, err := conn.Exec(ctx, `UPDATE accounts SET balance = balance - 500000, paid = paid + 500000`); err != nil {
			t.Fatalf("planting: %v", err)
		}
		out := run(t, 1)
		if want := "funds: customer " + auditCustomer + ": the store's account is balance"; !strings.Contains(out, "verdict: 1 violation(s)") || !strings.Contains(out, want) {
			t.Errorf("after paid moved without a confirmation: want exactly one violation, funds' (%q):\n%s", want, out)
		}
		_, err = conn.Exec(ctx, `BEGIN;
			SET LOCAL session_replication_role = replica;
			UPDATE accounts SET balance = balance + 500000, paid = paid - 500000;
			COMMIT`)
		if err != nil {
			t.Fatalf("removing the plant: %v", err)
		}
		run(t, 0)
	}) {
		return
	}

	t.Run("transfer nobody owns", func(t *testing.T) {
		txid, block := payBehindSluicesBack(t, nodeURL, 7_000_000)
		path := filepath.Join(t.TempDir(), "audit.json")
		out := run(t, 1, "-rescan", "0", "-json", path)
		for _, want := range []string{
			"reconciliation: txid " + txid.String() + fmt.Sprintf(" in solid block #%d (receipt SUCCESS) was signed by the hot wallet and moves 7000000 units of USDT", block),
			"txid-ownership: txid " + txid.Short() + " (accepted, on the wire, included) belongs to no operation's history",
			"conservation: txid " + txid.Short() + " moved 7000000 units from the hot wallet",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("after a transfer nobody owns: output lacks %q:\n%s", want, out)
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rep audit.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("-json: %v\n%s", err, b)
		}
		if rep.Rescan.Strays != 1 || len(rep.Violations) == 0 || !strings.Contains(rep.Violations[len(rep.Violations)-1].Message, txid.String()) {
			t.Errorf("-json: rescan %+v, violations %v; want the stray transfer named", rep.Rescan, rep.Violations)
		}

		// Once the solid head has moved past its block, a rescan of the
		// last block alone does not see it; the chain-wide invariants do.
		nc, err := nodehttp.NewClient(nodeURL, nodehttp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the solid head past the stray's block", func() bool {
			s, err := nc.SolidBlock(ctx)
			return err == nil && s.Number > block
		})
		out = run(t, 1, "-rescan", "1")
		if !strings.Contains(out, "  reconciliation       0\n") || !strings.Contains(out, "txid-ownership: txid "+txid.Short()) {
			t.Errorf("-rescan 1 past the stray's block: want reconciliation silent and txid-ownership still naming %s:\n%s", txid.Short(), out)
		}
	})

	t.Run("node without ground truth", func(t *testing.T) {
		bare := httptest.NewServer(http.NotFoundHandler())
		defer bare.Close()
		var out, errb strings.Builder
		code := runAudit([]string{"-database-url", dbURL, "-node", bare.URL}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), nodehttp.PathTruth) {
			t.Errorf("a node without %s: exit %d, stderr %q; want 2 and a message naming it", nodehttp.PathTruth, code, errb.String())
		}
	})
}

// payBehindSluicesBack signs a USDT transfer of amount with the hot
// wallet's key, broadcasts it straight to the node and waits until it is in
// a solid block: a payment no operation knows about.
func payBehindSluicesBack(t *testing.T, nodeURL string, amount uint64) (tron.Txid, int64) {
	t.Helper()
	ctx := t.Context()
	nc, err := nodehttp.NewClient(nodeURL, nodehttp.Options{Caller: "intruder"})
	if err != nil {
		t.Fatal(err)
	}
	head, err := nc.HeadBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	solid, err := nc.SolidBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refBytes, refHash := solid.Ref()
	raw := tron.RawData{
		RefBlockBytes: refBytes, RefBlockHash: refHash,
		Expiration: head.Time.Add(time.Minute).UnixMilli(), Timestamp: time.Now().UnixMilli(),
		FeeLimit: 30_000_000, Memo: []byte("not sluice"),
		Contract: tron.TriggerSmartContract{Owner: hotWallet, Contract: tron.USDTContract,
			Data: tron.EncodeTransfer(tron.AddressFromBytes20([20]byte{0xba, 0xd}), amount)},
	}
	sig, err := tron.NewHMACSigner(mockKey).Sign(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	res, err := nc.Broadcast(ctx, tron.Transaction{Raw: raw, Signature: sig})
	if err != nil || res.Code != tron.CodeSuccess {
		t.Fatalf("broadcast: %+v, %v", res, err)
	}
	var info tron.TxInfo
	waitFor(t, 30*time.Second, "the stray transfer solid", func() bool {
		info, err = nc.Lookup(ctx, raw.Txid())
		return err == nil && info.Status == tron.Included && info.Solid
	})
	if info.Receipt != tron.ReceiptSuccess {
		t.Fatalf("the stray transfer's receipt is %q, want SUCCESS", info.Receipt)
	}
	return raw.Txid(), info.BlockNumber
}

// auditCustomer is whom TestAuditLive's withdrawals are paid for, funded
// with 100 USDT at serve's start.
const auditCustomer = "audit-1"

// startServe runs sluice serve against dbURL (API, two workers, the mock
// node served on loopback, auditCustomer funded) until the test ends, and
// returns the API's and the node's base URLs.
func startServe(t *testing.T, dbURL string) (api, node string) {
	t.Helper()
	cfg := config{storeKind: "postgres", databaseURL: dbURL, addr: "127.0.0.1:0", nodeAddr: "127.0.0.1:0",
		workers: 2, lease: 5 * time.Second, solidLag: 1, idleSleep: 50 * time.Millisecond,
		shutdownMax: 5 * time.Second, api: true, nodeTimeout: 5 * time.Second,
		funds: []fund{{customer: auditCustomer, amount: 100_000_000}}}
	logs := &syncWriter{w: &strings.Builder{}}
	t.Cleanup(func() { // after startServing's stop: the whole log
		if t.Failed() {
			t.Logf("serve log:\n%s", logs.String())
		}
	})
	at, _ := startServing(t, cfg, logs)
	return "http://" + at.api, "http://" + at.node
}

// freshSchema makes a schema of the test's own in the test database and
// returns a URL whose search_path is it; the schema is dropped at the end.
func freshSchema(t *testing.T) string {
	t.Helper()
	base := storetest.DatabaseURL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "sluice_audit_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// waitFor polls cond until it holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
