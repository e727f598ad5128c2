package intake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

const lease = 30 * time.Second

// newService is intake over a fresh in-memory store in which cust is
// funded (and other is not).
func newService(t *testing.T) (*Service, *store.Memory, *storetest.Clock) {
	t.Helper()
	clock := &storetest.Clock{}
	mem := store.NewMemory(clock, lease)
	fund(t, mem, cust, funded)
	return &Service{Store: mem}, mem, clock
}

// funded is what fund gives cust in the test stores: any one amount intake
// accepts, so that only the tests about funds meet a short balance.
const funded = money.MaxAmount

// fund credits amount to customer, once per call (each with its own ref).
func fund(t *testing.T, st sluice.Store, customer sluice.CustomerID, amount money.Amount) sluice.Account {
	t.Helper()
	acct, _, err := st.Credit(context.Background(), sluice.Credit{Ref: fmt.Sprintf("test-deposit-%d", funds.Add(1)), Customer: customer, Amount: amount})
	if err != nil {
		t.Fatalf("Credit(%s, %s) error = %v", customer, amount, err)
	}
	return acct
}

// funds numbers the test credits, so that every one has a ref of its own.
var funds atomic.Int64

// advance claims the operation as worker "w1" and moves it from -> to with a
// fenced CAS, as a worker would; env, if set, becomes the envelope.
func advance(t *testing.T, st sluice.Store, id sluice.OperationID, from, to sluice.State, env *sluice.Envelope) sluice.Operation {
	t.Helper()
	ctx := context.Background()
	row, err := st.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get(%s) error = %v", id, err)
	}
	token := row.Token
	if row.ClaimedBy == "" {
		claimed, err := st.Claim(ctx, "w1", 1)
		if err != nil || len(claimed) != 1 || claimed[0].ID != id {
			t.Fatalf("Claim(w1, 1) = %+v, %v; want exactly %s", claimed, err, id)
		}
		token = claimed[0].Token
	}
	c := sluice.Change{ID: id, Token: token, Worker: "w1", From: from, To: to, Envelope: env, Note: "test"}
	if env != nil {
		c.Builds = 1
	}
	got, err := st.CAS(ctx, c)
	if err != nil {
		t.Fatalf("CAS(%s %s->%s) error = %v", id, from, to, err)
	}
	return got
}

// testEnvelope is an envelope whose txid is right for its raw_data, which
// the store checks.
func testEnvelope() *sluice.Envelope {
	raw := tron.RawData{Expiration: 1_767_225_660_000, Timestamp: 1_767_225_600_000, FeeLimit: 1}
	return &sluice.Envelope{Txid: raw.Txid(), Raw: raw}
}

func TestSubmitCreatedThenReplayed(t *testing.T) {
	svc, mem, clock := newService(t)
	ctx := context.Background()
	first, err := svc.Submit(ctx, valid())
	if err != nil {
		t.Fatalf("first Submit error = %v", err)
	}
	if !first.Created || first.Operation.State != sluice.Requested {
		t.Fatalf("first Submit = created %v state %s, want created true state requested", first.Created, first.Operation.State)
	}
	clock.Advance(time.Second)
	advance(t, mem, first.Operation.ID, sluice.Requested, sluice.Validated, nil)

	// The retry spells the same instruction differently: still a replay.
	retry := valid()
	retry.Amount = "12.5"
	second, err := svc.Submit(ctx, retry)
	if err != nil {
		t.Fatalf("replay Submit error = %v", err)
	}
	if second.Created {
		t.Errorf("replay Submit Created = true, want false")
	}
	if second.Operation.State != sluice.Validated {
		t.Errorf("replay state = %s, want validated (the current row, not the inserted one)", second.Operation.State)
	}
	if second.Operation.RequestHash != first.Operation.RequestHash {
		t.Errorf("replay hash = %s, want %s", second.Operation.RequestHash, first.Operation.RequestHash)
	}
	if n := len(mem.Snapshot().Operations); n != 1 {
		t.Errorf("rows = %d, want 1", n)
	}
}

func TestSubmitSameIDDifferentPayload(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Submission)
	}{
		{"other amount", func(s *Submission) { s.Amount = "12.51" }},
		{"other address", func(s *Submission) { s.ToAddress = addrB }},
		{"same id in upper case, other amount", func(s *Submission) { s.OperationID = strings.ToUpper(id1); s.Amount = "99" }},
		// other has no account: the id's row is found before any funds
		// are looked at, so this is a conflict, not insufficient funds.
		{"other customer", func(s *Submission) { s.Customer = other }},
		{"customer in another case", func(s *Submission) { s.Customer = strings.ToUpper(cust) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, mem, clock := newService(t)
			ctx := context.Background()
			orig, err := svc.Submit(ctx, valid())
			if err != nil {
				t.Fatalf("Submit(original) error = %v", err)
			}
			clock.Advance(time.Second)
			sub := valid()
			tt.edit(&sub)
			res, err := svc.Submit(ctx, sub)
			if !errors.Is(err, sluice.ErrPayloadMismatch) {
				t.Fatalf("Submit(other payload) = %+v, %v; want ErrPayloadMismatch", res, err)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("Submit(other payload) error %v also matches ErrInvalid", err)
			}
			if res.Operation.ID != "" {
				t.Errorf("Submit(other payload) returned row %s; want none (it is someone else's)", res.Operation.ID)
			}
			row, err := mem.Get(ctx, orig.Operation.ID)
			if err != nil {
				t.Fatalf("Get error = %v", err)
			}
			if row.Request != orig.Operation.Request || row.RequestHash != orig.Operation.RequestHash ||
				!row.UpdatedAt.Equal(orig.Operation.UpdatedAt) || row.State != sluice.Requested {
				t.Errorf("row after refused payload = %+v, want the original %+v", row, orig.Operation)
			}
			if events, _ := mem.Events(ctx, row.ID); len(events) != 1 {
				t.Errorf("events = %d, want 1 (creation only)", len(events))
			}
		})
	}
}

// TestSubmitInvalidTouchesNoStore: a refusal happens before any store call,
// so a bad request can neither create a row nor be slowed by the store.
func TestSubmitInvalidTouchesNoStore(t *testing.T) {
	st := &failingStore{err: errors.New("must not be called")}
	svc := &Service{Store: st}
	sub := valid()
	sub.ToAddress = badChecksum()
	_, err := svc.Submit(context.Background(), sub)
	ve, ok := errors.AsType[*ValidationError](err)
	if !ok || ve.Field != FieldToAddress {
		t.Fatalf("Submit(bad address) error = %v, want a ValidationError on %s", err, FieldToAddress)
	}
	if st.calls != 0 {
		t.Errorf("store calls = %d, want 0", st.calls)
	}
}

func TestSubmitStoreErrorPassesThrough(t *testing.T) {
	down := errors.New("connection refused")
	svc := &Service{Store: &failingStore{err: down}}
	_, err := svc.Submit(context.Background(), valid())
	if !errors.Is(err, down) {
		t.Fatalf("Submit error = %v, want it to wrap %v", err, down)
	}
	if errors.Is(err, ErrInvalid) || errors.Is(err, sluice.ErrPayloadMismatch) {
		t.Errorf("Submit error %v matches a client-error sentinel", err)
	}
}

func TestLookup(t *testing.T) {
	svc, mem, _ := newService(t)
	ctx := context.Background()
	if _, err := svc.Submit(ctx, valid()); err != nil {
		t.Fatalf("Submit error = %v", err)
	}
	advance(t, mem, id1, sluice.Requested, sluice.Validated, nil)

	t.Run("known, any case", func(t *testing.T) {
		for _, id := range []string{id1, strings.ToUpper(id1)} {
			op, events, err := svc.Lookup(ctx, id)
			if err != nil {
				t.Fatalf("Lookup(%s) error = %v", id, err)
			}
			if op.State != sluice.Validated {
				t.Errorf("Lookup(%s) state = %s, want validated", id, op.State)
			}
			if len(events) != 2 || events[0].To != sluice.Requested || events[1].To != sluice.Validated {
				t.Errorf("Lookup(%s) events = %+v, want requested then validated", id, events)
			}
		}
	})
	t.Run("unknown", func(t *testing.T) {
		_, _, err := svc.Lookup(ctx, id2)
		if !errors.Is(err, sluice.ErrNotFound) {
			t.Errorf("Lookup(%s) error = %v, want ErrNotFound", id2, err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		_, _, err := svc.Lookup(ctx, "42")
		ve, ok := errors.AsType[*ValidationError](err)
		if !ok || !errors.Is(err, ErrInvalid) || ve.Field != FieldOperationID {
			t.Errorf("Lookup(42) error = %v, want a ValidationError on %s", err, FieldOperationID)
		}
	})
	t.Run("store down", func(t *testing.T) {
		down := errors.New("connection refused")
		svc := &Service{Store: &failingStore{err: down}}
		if _, _, err := svc.Lookup(ctx, id1); !errors.Is(err, down) {
			t.Errorf("Lookup error = %v, want it to wrap %v", err, down)
		}
	})
	// The row reads but its log does not (a connection dropped between
	// the two reads): the answer is the store's error (a 503, retry), not
	// the row with no history, which tells the client that a withdrawal
	// has no events (blind bug 247).
	t.Run("log down", func(t *testing.T) {
		down := errors.New("statement timeout")
		svc := &Service{Store: logDown{Store: mem, err: down}}
		if _, events, err := svc.Lookup(ctx, id1); !errors.Is(err, down) {
			t.Errorf("Lookup with the log unreadable: %d events, error = %v, want it to wrap %v", len(events), err, down)
		}
	})
}

// logDown reads rows but fails every read of an event log.
type logDown struct {
	sluice.Store
	err error
}

func (l logDown) Events(context.Context, sluice.OperationID) ([]sluice.Event, error) {
	return nil, l.err
}

// failingStore fails every call with err and counts the calls.
type failingStore struct {
	err   error
	calls int
}

func (f *failingStore) Insert(context.Context, sluice.NewOperation) (sluice.Operation, bool, error) {
	f.calls++
	return sluice.Operation{}, false, f.err
}

func (f *failingStore) Get(context.Context, sluice.OperationID) (sluice.Operation, error) {
	f.calls++
	return sluice.Operation{}, f.err
}

func (f *failingStore) Claim(context.Context, sluice.WorkerID, int) ([]sluice.Operation, error) {
	f.calls++
	return nil, f.err
}

func (f *failingStore) CAS(context.Context, sluice.Change) (sluice.Operation, error) {
	f.calls++
	return sluice.Operation{}, f.err
}

func (f *failingStore) Release(context.Context, sluice.OperationID, sluice.FencingToken, time.Duration) error {
	f.calls++
	return f.err
}

func (f *failingStore) Events(context.Context, sluice.OperationID) ([]sluice.Event, error) {
	f.calls++
	return nil, f.err
}

func (f *failingStore) Park(context.Context, sluice.Park) (sluice.Operation, error) {
	f.calls++
	return sluice.Operation{}, f.err
}

func (f *failingStore) Resolve(context.Context, sluice.Resolution) (sluice.Operation, error) {
	f.calls++
	return sluice.Operation{}, f.err
}

func (f *failingStore) List(context.Context, sluice.ListFilter) ([]sluice.Operation, error) {
	f.calls++
	return nil, f.err
}

func (f *failingStore) Census(context.Context) (sluice.Census, error) {
	f.calls++
	return sluice.Census{}, f.err
}

func (f *failingStore) Credit(context.Context, sluice.Credit) (sluice.Account, bool, error) {
	f.calls++
	return sluice.Account{}, false, f.err
}

func (f *failingStore) Account(context.Context, sluice.CustomerID) (sluice.Account, error) {
	f.calls++
	return sluice.Account{}, f.err
}

func (f *failingStore) Hold(context.Context, sluice.OperationID) (sluice.Hold, error) {
	f.calls++
	return sluice.Hold{}, f.err
}

// movingStore lets a transition land between Lookup's row read and its log
// read, as a worker on another connection would: after each Get, advance
// runs once.
type movingStore struct {
	sluice.Store
	gets    int
	advance func()
}

func (m *movingStore) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	row, err := m.Store.Get(ctx, id)
	m.gets++
	if m.advance != nil {
		m.advance()
	}
	return row, err
}

// Goal: Lookup shows one instant of the operation: when a transition lands
// between the row read and the log read, the history is cut at the row's
// own event, so its last entry is the state shown. When the log never holds
// the row's event (a store breaking its contract), Lookup gives up after
// lookupReadsMax reads with ErrBusy, which HTTP answers 503.
func TestLookupShowsOneInstant(t *testing.T) {
	svc, mem, _ := newService(t)
	ctx := context.Background()
	if _, err := svc.Submit(ctx, valid()); err != nil {
		t.Fatalf("Submit error = %v", err)
	}
	moved := false
	ms := &movingStore{Store: mem, advance: func() {
		if !moved {
			moved = true
			advance(t, mem, id1, sluice.Requested, sluice.Validated, nil)
		}
	}}
	op, events, err := (&Service{Store: ms}).Lookup(ctx, id1)
	if err != nil {
		t.Fatalf("Lookup error = %v", err)
	}
	if op.State != sluice.Requested || len(events) != 1 || events[0].To != sluice.Requested {
		t.Errorf("Lookup with a transition between its reads = %s with %d events (last %s), want requested with 1 event",
			op.State, len(events), events[len(events)-1].To)
	}

	lying := &movingStore{Store: eventsOf{mem, nil}}
	if _, _, err := (&Service{Store: lying}).Lookup(ctx, id1); !errors.Is(err, ErrBusy) {
		t.Errorf("Lookup on a store whose log lacks the row's event: error = %v, want ErrBusy", err)
	}
	if lying.gets != lookupReadsMax {
		t.Errorf("Lookup read the row %d times, want %d", lying.gets, lookupReadsMax)
	}
	rec := httptest.NewRecorder()
	NewHandler(&Service{Store: lying}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/withdrawals/"+id1, nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("GET on a store whose log lacks the row's event: %d (Retry-After %q), want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// Goal: an operator's retry (Resolve with To == From) repeats the (state,
// txid) pair Lookup cuts the log at; landing between Lookup's two reads, it
// still yields one instant: the GET answer is, byte for byte, the answer
// after the retry (the retry changes no field an answer shows, and the cut
// keeps its event).
func TestLookupAcrossAnOperatorRetry(t *testing.T) {
	svc, mem, _ := newService(t)
	ctx := context.Background()
	if _, err := svc.Submit(ctx, valid()); err != nil {
		t.Fatalf("Submit error = %v", err)
	}
	advance(t, mem, id1, sluice.Requested, sluice.Validated, nil)
	retried := false
	ms := &movingStore{Store: mem, advance: func() {
		if !retried {
			retried = true
			if _, err := mem.Resolve(ctx, sluice.Resolution{ID: id1, From: sluice.Validated, To: sluice.Validated, Operator: "alice", Why: "retry now"}); err != nil {
				t.Fatalf("Resolve(retry) error = %v", err)
			}
		}
	}}
	get := func(st sluice.Store) string {
		rec := httptest.NewRecorder()
		NewHandler(&Service{Store: st}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/withdrawals/"+id1, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	during := get(ms)
	if !retried {
		t.Fatal("the retry did not land between the reads")
	}
	if after := get(mem); during != after {
		t.Errorf("GET with a retry between its reads:\n%s\nGET after the retry:\n%s", during, after)
	}
	if !strings.Contains(during, "retry now") {
		t.Errorf("GET with a retry between its reads does not show the retry: %s", during)
	}
}

// eventsOf answers every log read with the given events.
type eventsOf struct {
	sluice.Store
	events []sluice.Event
}

func (e eventsOf) Events(context.Context, sluice.OperationID) ([]sluice.Event, error) {
	return e.events, nil
}

// Goal: a customer whose balance does not cover the amount is refused with
// sluice.ErrInsufficientFunds, and nothing changes: no row, no event, the
// account as it was. The id stays unused, so the same submission succeeds
// once the customer is funded, and its replays succeed after the hold has
// taken the whole balance.
func TestSubmitInsufficientFunds(t *testing.T) {
	svc, mem, _ := newService(t)
	ctx := context.Background()
	sub := valid()
	sub.Customer = other

	refused := func(when string) {
		t.Helper()
		res, err := svc.Submit(ctx, sub)
		if !errors.Is(err, sluice.ErrInsufficientFunds) {
			t.Fatalf("%s: Submit = %+v, %v; want ErrInsufficientFunds", when, res, err)
		}
		if errors.Is(err, ErrInvalid) || errors.Is(err, sluice.ErrPayloadMismatch) {
			t.Errorf("%s: Submit error %v also matches another client-error sentinel", when, err)
		}
		if snap := mem.Snapshot(); len(snap.Operations) != 0 || len(snap.Events) != 0 || len(snap.Holds) != 0 {
			t.Errorf("%s: %d rows, %d events, %d holds after a refusal; want none", when, len(snap.Operations), len(snap.Events), len(snap.Holds))
		}
	}
	refused("no account")
	if _, err := mem.Account(ctx, other); !errors.Is(err, sluice.ErrNotFound) {
		t.Errorf("Account(%s) after the refusal: %v, want ErrNotFound (no account made)", other, err)
	}

	fund(t, mem, other, 12_000_000) // half a USDT short of 12.50
	refused("balance 12")
	if acct, err := mem.Account(ctx, other); err != nil || acct.Balance != 12_000_000 || acct.Held != 0 {
		t.Errorf("Account(%s) after the refusal = %+v, %v; want balance 12, nothing held", other, acct, err)
	}

	fund(t, mem, other, 500_000)
	first, err := svc.Submit(ctx, sub)
	if err != nil || !first.Created || first.Operation.Request.Customer != other {
		t.Fatalf("Submit once funded = %+v, %v; want created for %s", first, err, other)
	}
	acct, err := mem.Account(ctx, other)
	if err != nil || acct.Balance != 0 || acct.Held != 12_500_000 {
		t.Errorf("Account(%s) after the withdrawal = %+v, %v; want balance 0, 12.5 held", other, acct, err)
	}
	// The balance is now zero: a replay finds the row before any funds
	// are looked at.
	again, err := svc.Submit(ctx, sub)
	if err != nil || again.Created || again.Operation.ID != first.Operation.ID {
		t.Errorf("replay with the balance spent = %+v, %v; want the row replayed", again, err)
	}
}
