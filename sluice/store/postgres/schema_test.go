package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"sluicesim/sluice"
)

// Goal: the migrations' copy of the transition table cannot drift from the
// Go table, which is the single source of truth. Method: parse the pairs out
// of the SQL files themselves, in version order (no database needed), and
// compare them, in order, with sluice.Transitions(); compare the enum (its
// CREATE TYPE and every ADD VALUE after it) with sluice.States too.
func TestMigrationTransitionsMatchGo(t *testing.T) {
	var got, gotOperator, gotStates []string
	enums := 0
	pairs := func(sql, table string) (out []string) {
		for rest := sql; ; {
			start := strings.Index(rest, "INSERT INTO "+table)
			if start < 0 {
				return out
			}
			block := rest[start:]
			block = block[:strings.Index(block, ";")]
			for _, m := range regexp.MustCompile(`\('([a-z]+)',\s*'([a-z]+)'\)`).FindAllStringSubmatch(block, -1) {
				out = append(out, m[1]+"->"+m[2])
			}
			rest = rest[start+len(block):]
		}
	}
	for _, m := range mustMigrations(t) {
		sql := m.sql
		got = append(got, pairs(sql, "state_transitions")...)
		gotOperator = append(gotOperator, pairs(sql, "operator_transitions")...)
		if enum := regexp.MustCompile(`(?s)CREATE TYPE op_state AS ENUM \((.*?)\);`).FindStringSubmatch(sql); enum != nil {
			enums++
			for _, m := range regexp.MustCompile(`'([a-z]+)'`).FindAllStringSubmatch(enum[1], -1) {
				gotStates = append(gotStates, m[1])
			}
		}
		for _, m := range regexp.MustCompile(`ALTER TYPE op_state ADD VALUE '([a-z]+)'(?: AFTER '([a-z]+)')?`).FindAllStringSubmatch(sql, -1) {
			if m[2] != "" && (len(gotStates) == 0 || gotStates[len(gotStates)-1] != m[2]) {
				t.Errorf("%s: ADD VALUE %q AFTER %q, which is not the enum's last value: this test reads values as appended", m[0], m[1], m[2])
			}
			gotStates = append(gotStates, m[1])
		}
	}
	if len(got) == 0 || enums != 1 {
		t.Fatalf("migrations: %d transitions and %d op_state enums found, want some and one", len(got), enums)
	}
	var want []string
	for _, tr := range sluice.Transitions() {
		want = append(want, tr.From.String()+"->"+tr.To.String())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("migration transitions:\n got %v\nwant %v (sluice.Transitions)", got, want)
	}
	var wantOperator []string
	for _, tr := range sluice.OperatorTransitions() {
		wantOperator = append(wantOperator, tr.From.String()+"->"+tr.To.String())
	}
	if len(wantOperator) == 0 || strings.Join(gotOperator, " ") != strings.Join(wantOperator, " ") {
		t.Errorf("migration operator transitions:\n got %v\nwant %v (sluice.OperatorTransitions)", gotOperator, wantOperator)
	}
	var wantStates []string
	for _, s := range sluice.States {
		wantStates = append(wantStates, s.String())
	}
	if strings.Join(gotStates, " ") != strings.Join(wantStates, " ") {
		t.Errorf("op_state enum = %v, want %v (sluice.States)", gotStates, wantStates)
	}
}

// mustMigrations is every migration, in version order.
func mustMigrations(t *testing.T) []migration {
	t.Helper()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// pathTo is a legal way from requested to each state, for raw SQL.
var pathTo = map[sluice.State][]sluice.State{
	sluice.Requested:    {},
	sluice.Validated:    {sluice.Validated},
	sluice.Signing:      {sluice.Validated, sluice.Signing},
	sluice.Signed:       {sluice.Validated, sluice.Signing, sluice.Signed},
	sluice.Broadcasting: {sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting},
	sluice.Broadcast:    {sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast},
	sluice.Confirmed:    {sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast, sluice.Confirmed},
	sluice.Failed:       {sluice.Validated, sluice.Signing, sluice.Failed},
	sluice.Rejected:     {sluice.Rejected},
	sluice.Review:       {sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast, sluice.Review},
}

const rawInsertSQL = `INSERT INTO operations (id, customer, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
	VALUES ($1, 'raw-customer', decode(repeat('41', 21), 'hex'), $2::numeric, 'USDT-TRC20', 'h', 'requested', 0, 0, 0)`

// sqlState is the SQLSTATE of a database error, "" for anything else.
func sqlState(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}

// Goal: the database itself, not only the Go store, enforces the state
// machine: a raw SQL session can make exactly the legal moves. Method: for
// every (from, to) pair of real states, reach from along a legal path with
// raw UPDATEs (which checks the legal direction), then try from -> to on the
// row and as an event-log row; each must pass exactly when some writer may
// take it. The row's trigger cannot tell who writes, so it allows the union
// of the automation edges and the operator's (CAS keeps workers off the
// operator's in code); the log can: an operator-only edge, or a retry
// (from = to on a live row), is allowed only under an operator's name. An
// event carries the hold action its target needs (a close exactly into a
// closing state), or is refused. A same-state update (what a claim, release
// or retry does) passes on a live row; a terminal row refuses every update
// but an operator's edge out of it, even one that changes no state.
func TestTriggerEnforcesTransitionMatrix(t *testing.T) {
	pool := freshPool(t)
	ctx := context.Background()
	for _, s := range sluice.States {
		if _, ok := pathTo[s]; !ok {
			t.Fatalf("pathTo has no path to %s: a state was added without one", s)
		}
	}
	for fi, from := range sluice.States {
		for ti, to := range sluice.States {
			id := fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", fi, ti)
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, rawInsertSQL, id, "1"); err != nil {
					return fmt.Errorf("insert: %w", err)
				}
				prev := sluice.Requested
				for _, s := range pathTo[from] {
					if _, err := tx.Exec(ctx, `UPDATE operations SET state = $2::op_state WHERE id = $1`, id, s.String()); err != nil {
						return fmt.Errorf("legal step %s->%s refused: %w", prev, s, err)
					}
					prev = s
				}
				operatorMay := sluice.OperatorCanTransition(from, to) || (from == to && !from.Terminal())
				wantRow := sluice.CanTransition(from, to) || operatorMay
				_, err := tx.Exec(ctx, `SAVEPOINT p; UPDATE operations SET state = '`+to.String()+`' WHERE id = '`+id+`'`)
				switch {
				case wantRow && err != nil:
					t.Errorf("raw UPDATE %s->%s: %v, want it allowed", from, to, err)
				case !wantRow && sqlState(err) != codeIllegal:
					t.Errorf("raw UPDATE %s->%s: err = %v, want SQLSTATE %s (refused by the trigger)", from, to, err, codeIllegal)
				}
				if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT p`); err != nil {
					return err
				}
				hold, wrongHold := "NULL", "'settle'"
				if a := sluice.HoldFor(to); a != sluice.HoldKeep {
					hold, wrongHold = "'"+a.String()+"'", "NULL"
				}
				event := func(worker, hold string) error {
					_, err := tx.Exec(ctx, `SAVEPOINT q; INSERT INTO events (operation_id, from_state, to_state, token, worker, at_ns, note, hold_action)
						VALUES ('`+id+`', '`+from.String()+`', '`+to.String()+`', 0, '`+worker+`', 0, 'raw', `+hold+`)`)
					if _, rerr := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT q`); rerr != nil {
						t.Fatal(rerr)
					}
					return err
				}
				for _, w := range []struct {
					worker string
					want   bool
				}{{"raw", sluice.CanTransition(from, to)}, {"operator:raw", sluice.CanTransition(from, to) || operatorMay}} {
					err := event(w.worker, hold)
					switch {
					case w.want && err != nil:
						t.Errorf("raw event %s->%s by %s: %v, want it allowed", from, to, w.worker, err)
					case !w.want && sqlState(err) != codeIllegal:
						t.Errorf("raw event %s->%s by %s: err = %v, want SQLSTATE %s (refused by the trigger)", from, to, w.worker, err, codeIllegal)
					}
					if w.want {
						if err := event(w.worker, wrongHold); sqlState(err) != codeHoldAction {
							t.Errorf("raw event %s->%s by %s with hold action %s: err = %v, want SQLSTATE %s", from, to, w.worker, wrongHold, err, codeHoldAction)
						}
					}
				}
				if from.Terminal() {
					_, err := tx.Exec(ctx, `SAVEPOINT r; UPDATE operations SET reason = 'tamper' WHERE id = '`+id+`'`)
					if sqlState(err) != codeIllegal {
						t.Errorf("raw UPDATE of reason on a %s row: err = %v, want SQLSTATE %s", from, err, codeIllegal)
					}
				}
				return errRollback
			})
			if !errors.Is(err, errRollback) {
				t.Fatalf("%s->%s: %v", from, to, err)
			}
		}
	}
}

// errRollback ends a BeginFunc without committing.
var errRollback = errors.New("rollback on purpose")

// Goal: what the schema promises beyond the transition table holds against
// raw SQL: a row is born requested; the request never changes; a token never
// goes back; the event log and txid ownership are append-only; a txid is the
// sha256 of its raw_data.
func TestRawSQLGuards(t *testing.T) {
	pool := freshPool(t)
	ctx := context.Background()
	const id = "00000000-0000-4000-8000-000000000001"
	if _, err := pool.Exec(ctx, rawInsertSQL, id, "5"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO events (operation_id, to_state, token, worker, at_ns, note) VALUES ($1, 'requested', 0, '', 0, 'created')`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE operations SET token = 3, claimed_by = 'w', lease_until_ns = 1 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sql string
		code      string
	}{
		{"born signed", `INSERT INTO operations (id, customer, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
			VALUES ('00000000-0000-4000-8000-000000000002', 'c', decode(repeat('41', 21), 'hex'), 1, 'USDT-TRC20', 'h', 'signed', 0, 0, 0)`, codeForbidden},
		{"amount changed", `UPDATE operations SET amount = 6 WHERE id = '` + id + `'`, codeForbidden},
		{"token back", `UPDATE operations SET token = 2 WHERE id = '` + id + `'`, codeForbidden},
		{"event updated", `UPDATE events SET note = 'x'`, codeForbidden},
		{"event deleted", `DELETE FROM events`, codeForbidden},
		// CASCADE: plain TRUNCATE is refused already because holds refer
		// to events; with CASCADE only the triggers stand in the way.
		{"events truncated", `TRUNCATE events CASCADE`, codeForbidden},
		{"txid not its hash", `UPDATE operations SET txid = decode(repeat('00', 32), 'hex'), raw_data = '\x01' WHERE id = '` + id + `'`, "23514"},
		{"zero amount", `INSERT INTO operations (id, customer, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
			VALUES ('00000000-0000-4000-8000-000000000003', 'c', decode(repeat('41', 21), 'hex'), 0, 'USDT-TRC20', 'h', 'requested', 0, 0, 0)`, "23514"},
		{"negative amount", `INSERT INTO operations (id, customer, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
			VALUES ('00000000-0000-4000-8000-000000000004', 'c', decode(repeat('41', 21), 'hex'), -1, 'USDT-TRC20', 'h', 'requested', 0, 0, 0)`, "23514"},
		{"0.4 rounds to 0 and is refused", `INSERT INTO operations (id, customer, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
			VALUES ('00000000-0000-4000-8000-000000000005', 'c', decode(repeat('41', 21), 'hex'), 0.4, 'USDT-TRC20', 'h', 'requested', 0, 0, 0)`, "23514"},
		{"no customer", `INSERT INTO operations (id, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
			VALUES ('00000000-0000-4000-8000-000000000006', decode(repeat('41', 21), 'hex'), 1, 'USDT-TRC20', 'h', 'requested', 0, 0, 0)`, "23502"},
		{"not a customer id", `INSERT INTO operations (id, customer, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
			VALUES ('00000000-0000-4000-8000-000000000007', 'a b', decode(repeat('41', 21), 'hex'), 1, 'USDT-TRC20', 'h', 'requested', 0, 0, 0)`, "23514"},
		{"park count back", `UPDATE operations SET parks = parks + 2 WHERE id = '` + id + `'; UPDATE operations SET parks = parks - 1 WHERE id = '` + id + `'`, codeForbidden},
		{"first send rewritten", `UPDATE operations SET first_sent_at_ns = 5 WHERE id = '` + id + `'; UPDATE operations SET first_sent_at_ns = 6 WHERE id = '` + id + `'`, codeForbidden},
		{"first send cleared", `UPDATE operations SET first_sent_at_ns = 5 WHERE id = '` + id + `'; UPDATE operations SET first_sent_at_ns = NULL WHERE id = '` + id + `'`, codeForbidden},
	} {
		_, err := pool.Exec(ctx, tc.sql)
		if got := sqlState(err); got != tc.code {
			t.Errorf("%s: SQLSTATE %q (err %v), want %q", tc.name, got, err, tc.code)
		}
	}
}

// Goal: NUMERIC(38,0) keeps an amount far beyond uint64 exactly, and the
// store refuses to read such a row rather than truncate it.
func TestNumericRoundTripsExactly(t *testing.T) {
	pool := freshPool(t)
	ctx := context.Background()
	const id = "00000000-0000-4000-8000-000000000001"
	const big = "1000000000000000000000000000000" // 10^30
	if _, err := pool.Exec(ctx, rawInsertSQL, id, big); err != nil {
		t.Fatalf("insert 10^30: %v", err)
	}
	var got string
	if err := pool.QueryRow(ctx, `SELECT amount::text FROM operations WHERE id = $1`, id).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != big {
		t.Errorf("amount read back = %s, want %s", got, big)
	}
	var equal bool
	if err := pool.QueryRow(ctx, `SELECT amount = 10::numeric ^ 30 AND amount - 1 = 999999999999999999999999999999::numeric FROM operations WHERE id = $1`, id).Scan(&equal); err != nil {
		t.Fatal(err)
	}
	if !equal {
		t.Error("amount is not exactly 10^30 in arithmetic")
	}
	s := New(pool, Options{Lease: 30e9})
	if op, err := s.Get(ctx, id); err == nil {
		t.Errorf("Get of a 10^30 row = amount %d, want an error (it does not fit in base units)", op.Request.Amount)
	}
}

// operationColumns classifies every column of the operations table: the
// request (fixed at intake, which raw SQL may never change) or the row's
// moving parts. A column the schema has and this map lacks fails
// TestRawSQLRequestColumnsImmutable, so a new column gets a decision.
var operationColumns = map[string]bool{ // true: part of the request
	"id": true, "seq": true, "to_address": true, "amount": true, "asset": true,
	"request_hash": true, "created_at_ns": true, "customer": true,
	"state": false, "token": false, "claimed_by": false, "lease_until_ns": false, "not_before_ns": false,
	"txid": false, "raw_data": false, "signature": false, "builds": false, "reason": false, "updated_at_ns": false,
	"first_sent_at_ns": false, "parks": false, "park_reason": false, "parked_since_ns": false,
}

// Goal: the request never changes after intake, whichever column a raw SQL
// session touches. Method: read the table's columns from the catalog (not
// from a list kept here), and for each request column try an UPDATE that
// changes only it, on a live row; each must be refused by the guard
// (SQLSTATE SL002).
func TestRawSQLRequestColumnsImmutable(t *testing.T) {
	pool := freshPool(t)
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'operations' ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ Name, Type string }
	cols, err := pgx.CollectRows(rows, pgx.RowToStructByPos[column])
	if err != nil {
		t.Fatal(err)
	}
	const id = "00000000-0000-4000-8000-000000000001"
	if _, err := pool.Exec(ctx, rawInsertSQL, id, "5"); err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, col := range cols {
		c := struct{ name, typ string }{col.Name, col.Type}
		request, known := operationColumns[c.name]
		switch {
		case !known:
			t.Errorf("column %s (%s) of operations is neither request nor moving part in operationColumns: decide", c.name, c.typ)
			continue
		case !request:
			continue
		}
		var change string
		switch c.typ {
		case "uuid":
			change = `'00000000-0000-4000-8000-0000000000ff'`
		case "text":
			change = c.name + ` || 'x'`
		case "bytea":
			change = `decode(repeat('42', 21), 'hex')`
		case "bigint", "numeric", "integer":
			change = c.name + ` + 1`
		default:
			t.Errorf("column %s has type %s, which this test cannot change: extend it", c.name, c.typ)
			continue
		}
		tried++
		sql := `UPDATE operations SET ` + c.name + ` = ` + change + ` WHERE id = '` + id + `'`
		if c.name == "seq" {
			sql = `UPDATE operations SET seq = DEFAULT WHERE id = '` + id + `'` // an identity column takes no other value
		}
		if _, err := pool.Exec(ctx, sql); sqlState(err) != codeForbidden {
			t.Errorf("raw UPDATE of request column %s: err = %v, want SQLSTATE %s (the request never changes)", c.name, err, codeForbidden)
		}
	}
	if tried != 8 {
		t.Errorf("tried %d request columns, want the 8 operationColumns names", tried)
	}
}

// Goal: every list of terminal states the schema and the store's SQL keep
// (the claim query, the CAS and release conditions, the lease constraint,
// the live-rows index, the guard) is exactly sluice's terminal states. A
// list that lost one would let a terminal row be claimed, keep a lease, or
// be written; some of these (the index predicate, the lease constraint)
// change no result a test can see, so the lists are compared as text too.
// A later migration may redefine an object: its newest definition counts.
// The one list of other states, hold_closing_state's, is exactly the
// states sluice.HoldFor closes the hold on.
func TestTerminalStateListsMatchGo(t *testing.T) {
	var want []string
	for _, s := range sluice.States {
		if s.Terminal() {
			want = append(want, s.String())
		}
	}
	list := regexp.MustCompile(`(?:IN|IN \(|= ` + "`" + `)\s*\(?('[a-z]+'(?:,\s*'[a-z]+')*)\)`)
	names := func(m string) string {
		var got []string
		for _, q := range regexp.MustCompile(`'([a-z]+)'`).FindAllStringSubmatch(m, -1) {
			got = append(got, q[1])
		}
		return strings.Join(got, " ")
	}
	// The one other list: the states whose entry closes the hold.
	var closing []string
	for _, s := range sluice.States {
		if sluice.HoldFor(s) != sluice.HoldKeep {
			closing = append(closing, s.String())
		}
	}
	wants := map[string]string{
		"terminal_unleased": strings.Join(want, " "), "operations_live": strings.Join(want, " "),
		"operations_guard": strings.Join(want, " "), "hold_closing_state": strings.Join(closing, " "),
	}
	// Each list in a migration belongs to the object named last before it.
	objects := []string{"terminal_unleased", "operations_live", "operations_guard", "hold_closing_state"}
	newest := map[string]string{}
	for _, m := range mustMigrations(t) {
		for _, loc := range list.FindAllStringSubmatchIndex(m.sql, -1) {
			owner, at := "", -1
			for _, o := range objects {
				if i := strings.LastIndex(m.sql[:loc[0]], o); i > at {
					owner, at = o, i
				}
			}
			if owner == "" {
				t.Errorf("%s: a list of states %s belongs to none of %v: a list was added that this test does not know", m.name, m.sql[loc[0]:loc[1]], objects)
				continue
			}
			newest[owner] = names(m.sql[loc[2]:loc[3]])
		}
	}
	for _, o := range objects {
		if got, ok := newest[o]; !ok {
			t.Errorf("no migration lists the states for %s", o)
		} else if got != wants[o] {
			t.Errorf("%s (newest definition): states %s, want %s", o, got, wants[o])
		}
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range list.FindAllStringSubmatch(string(b), -1) {
			found++
			if got := names(m[1]); got != strings.Join(want, " ") {
				t.Errorf("%s: state list %s, want the terminal states %v", name, m[0], want)
			}
		}
	}
	if found != 1 {
		t.Errorf("the store's Go source: found %d lists of terminal states, want 1 (terminalSQL)", found)
	}
}
