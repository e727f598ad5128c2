package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
	"sluicesim/sluice/store/postgres"
)

// Goal: ReadStore keeps its promise against a database in use: a
// withdrawal that arrives (its row and first event, one transaction) while
// the audit reads is either read with its event or left whole to the next
// audit, and the read succeeds. Its guard counts the event log before
// listing the rows and again after reading them; counted after the listing
// instead (blind bug 258), a withdrawal arriving between the two is counted
// and not read, and the audit of a busy system fails ("could not be carried
// out") whenever a withdrawal lands in that moment. Method: the real
// PostgreSQL store; the audit's pool traces its queries, and a withdrawal
// is inserted (on another pool) right after each of the audit's queries in
// turn, so every moment of the read meets an arrival.
func TestReadStoreWhileWithdrawalsArrive(t *testing.T) {
	pool := freshPool(t)
	ctx := t.Context()
	st := postgres.New(pool, postgres.Options{Lease: time.Minute})
	if _, _, err := st.Credit(ctx, sluice.Credit{Ref: "fund", Customer: customer, Amount: 1_000_000_000}); err != nil {
		t.Fatal(err)
	}
	n := 0
	arrive := func(t *testing.T) {
		n++
		id := sluice.OperationID(fmt.Sprintf("55555555-5555-4555-8555-%012d", n))
		req := sluice.Request{Customer: customer, To: alice, Amount: 1_000_000, Asset: "USDT-TRC20"}
		if _, _, err := st.Insert(ctx, sluice.NewOperation{ID: id, Request: req, RequestHash: "h" + string(id)}); err != nil {
			t.Fatal(err)
		}
	}
	arrive(t)
	arrive(t)
	for _, after := range []string{"count(*) FROM events", "id::text FROM operations"} {
		t.Run("a withdrawal right after "+after, func(t *testing.T) {
			cfg := pool.Config()
			cfg.ConnConfig.Tracer = &afterQuery{sql: after, then: func() { arrive(t) }}
			traced, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer traced.Close()
			before := n
			ops, events, err := ReadStore(ctx, traced)
			if err != nil {
				t.Fatalf("ReadStore while withdrawals arrive: %v", err)
			}
			if n == before {
				t.Fatal("no withdrawal arrived during the read: the test tested nothing")
			}
			held := map[sluice.OperationID]bool{}
			for _, op := range ops {
				held[op.ID] = true
			}
			for _, e := range events {
				if !held[e.OperationID] {
					t.Errorf("event %d of %s read, its row not", e.Seq, e.OperationID)
				}
			}
			if len(ops) < before || len(events) < len(ops) {
				t.Errorf("read %d rows and %d events; %d rows were there before the read, each with its first event", len(ops), len(events), before)
			}
		})
	}
}

// afterQuery is a pgx tracer that runs then once a query whose SQL holds
// sql has ended (its rows read and closed): a write that lands between two
// of the reader's statements, every time.
type afterQuery struct {
	sql  string
	then func()
}

type tracedKey struct{}

func (a *afterQuery) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, a.sql) {
		return context.WithValue(ctx, tracedKey{}, true)
	}
	return ctx
}

func (a *afterQuery) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(tracedKey{}) != nil {
		a.then()
	}
}
