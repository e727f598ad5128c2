package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// The ambiguous commit on the real store: PostgreSQL commits, the answer
// never reaches the caller (lossyProxy drops it and closes the connection),
// and the caller hears an error. The store cannot know the answer was lost,
// so it cannot report anything truer than an error; what matters is that
// the error is not a sentinel that tells a false story (fenced, not found),
// that the effect is whole and durable, that a retry does not apply it
// twice, and that the core recovers by re-reading the row, never by redoing
// a side effect.

// sentinels are the contract's errors, each of which would tell the caller
// a definite story. A lost answer must be none of them.
var sentinels = []error{sluice.ErrFenced, sluice.ErrNotFound, sluice.ErrIllegalTransition,
	sluice.ErrTxidTaken, sluice.ErrPayloadMismatch}

// wantLostAnswer checks that err is what a caller whose answer was lost
// hears, and that the proxy lost exactly lost answers so far, the last to
// a statement last accepts.
func wantLostAnswer(t *testing.T, p *lossyProxy, err error, lost int, last func(string) bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("the call succeeded although its answer was to be lost (answers lost: %q)", p.lostAnswers())
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			t.Fatalf("a lost answer came back as %v (%v): a definite story the store cannot know", s, err)
		}
	}
	got := p.lostAnswers()
	if len(got) != lost {
		t.Fatalf("answers lost %d (%q), want %d; the call's error: %v", len(got), got, lost, err)
	}
	if !last(got[lost-1]) {
		t.Fatalf("the answer lost was to %q, not the statement armed for", got[lost-1])
	}
}

// Goal: on the real store, a write whose commit answer is lost returns an
// error while its whole effect is durable, and retrying it does not apply it
// twice. Method: the caller's store runs through lossyProxy; every check
// re-reads through another pool, on connections the proxy never touched.
// A create (the 2nd COMMIT armed for: the 1st goes through; the row, its
// event, its hold and the account's move in one transaction); a Claim,
// which is one statement outside a transaction and so commits at its Sync;
// and a CAS with an envelope (row, event and txid ownership in one
// transaction). The create is the store's Insert, intake's one store call:
// its replay is what makes a retried submission safe.
func TestLostCommitAnswerIsDurable(t *testing.T) {
	ctx := context.Background()
	const lease = time.Minute
	clock := &storetest.Clock{}
	direct := freshPool(t)
	lossy, proxy := lossyPool(t, direct)
	s := New(lossy, Options{Lease: lease, Clock: clock})      // the caller's, through the proxy
	truth := New(direct, Options{Lease: lease, Clock: clock}) // the re-reads
	fund(t, truth)
	account, err := truth.Account(ctx, payer)
	if err != nil {
		t.Fatal(err)
	}

	// The second create's commit answer is lost.
	proxy.loseAnswer(isCommit, 2)
	if _, created, err := s.Insert(ctx, newOp(1)); err != nil || !created {
		t.Fatalf("Insert(1) = created %v, %v; want created (its commit was not armed)", created, err)
	}
	_, _, err = s.Insert(ctx, newOp(2))
	wantLostAnswer(t, proxy, err, 1, isCommit)
	row, err := truth.Get(ctx, opID(2))
	if err != nil {
		t.Fatalf("the create whose answer was lost is not durable: %v", err)
	}
	evs, err := truth.Events(ctx, opID(2))
	if err != nil || len(evs) != 1 || evs[0].To != sluice.Requested || row.State != sluice.Requested {
		t.Fatalf("after the lost create: row %s, events %v (%v); want requested with one creation event", row.State, evs, err)
	}
	// The whole create: the hold and the account's move with the row.
	amount := newOp(2).Request.Amount
	account.Balance -= 2 * amount
	account.Held += 2 * amount
	hold, err := truth.Hold(ctx, opID(2))
	if err != nil || hold.State != sluice.HoldHeld || hold.Amount != amount {
		t.Fatalf("after the lost create: hold %+v (%v); want held, %d", hold, err, amount)
	}
	if got, err := truth.Account(ctx, payer); err != nil || got != account {
		t.Fatalf("after the lost create: account %+v (%v); want %+v", got, err, account)
	}
	// The client's retry is a replay of the row its lost call created: no
	// second row, no second hold.
	again, created, err := s.Insert(ctx, newOp(2))
	if err != nil || created || !reflect.DeepEqual(again, row) {
		t.Fatalf("retried create = created %v, %+v, %v; want the stored row %+v as a replay", created, again, err, row)
	}
	if again, _ := truth.Events(ctx, opID(2)); !reflect.DeepEqual(again, evs) {
		t.Fatalf("the replay changed the log: %v, was %v", again, evs)
	}
	if got, err := truth.Account(ctx, payer); err != nil || got != account {
		t.Fatalf("after the replay: account %+v (%v); want %+v (held once)", got, err, account)
	}

	// Claim: the answer to the claim statement is lost.
	isClaim := func(sql string) bool { return sql == claimSQL }
	proxy.loseAnswer(isClaim, 1)
	_, err = s.Claim(ctx, "w1", 8)
	wantLostAnswer(t, proxy, err, 2, isClaim)
	for _, n := range []int{1, 2} {
		op, err := truth.Get(ctx, opID(n))
		if err != nil || op.ClaimedBy != "w1" || op.Token != 1 || !op.LeaseUntil.Equal(clock.Now().Add(lease)) {
			t.Fatalf("after the lost claim, op %d = %s token %d until %s (%v); want held by w1 under token 1 until %s",
				n, op.ClaimedBy, op.Token, op.LeaseUntil, err, clock.Now().Add(lease))
		}
	}
	// The same worker claims again: its own lease, under a token it never
	// learned, is live, so it gets nothing until the lease lapses, and then
	// a new token. A lost claim costs a lease, never a shared row.
	if ops, err := s.Claim(ctx, "w1", 8); err != nil || len(ops) != 0 {
		t.Fatalf("re-claim under the lost claim's live lease took %d rows (%v), want none", len(ops), err)
	}
	clock.Advance(lease)
	ops, err := s.Claim(ctx, "w1", 8)
	if err != nil || len(ops) != 2 || ops[0].ID != opID(1) || ops[0].Token != 2 {
		t.Fatalf("claim after the lease = %v (%v); want both rows, op 1 first, under token 2", ops, err)
	}

	// CAS: the commit answer of validated -> signing (an envelope: the row,
	// its event and the txid's ownership commit together) is lost.
	op, err := s.CAS(ctx, sluice.Change{ID: opID(1), Token: 2, Worker: "w1", From: sluice.Requested, To: sluice.Validated, Note: "validated"})
	if err != nil {
		t.Fatal(err)
	}
	env := envelopeOf(op, clock.Now())
	c := sluice.Change{ID: op.ID, Token: op.Token, Worker: "w1", From: sluice.Validated, To: sluice.Signing,
		Envelope: &env, Builds: 1, Note: "built"}
	clock.Advance(time.Second) // so that the lost write's renewal of the lease shows
	proxy.loseAnswer(isCommit, 1)
	_, err = s.CAS(ctx, c)
	wantLostAnswer(t, proxy, err, 3, isCommit)
	after, err := truth.Get(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != sluice.Signing || after.Token != 2 || after.ClaimedBy != "w1" || after.Envelope.Txid != env.Txid ||
		after.Builds != 1 || !after.LeaseUntil.Equal(clock.Now().Add(lease)) {
		t.Fatalf("after the lost CAS the row is %s token %d by %q txid %s builds %d until %s; want the whole write: signing, token 2, w1, %s, 1 build, lease renewed to %s",
			after.State, after.Token, after.ClaimedBy, after.Envelope.Txid.Short(), after.Builds, after.LeaseUntil, env.Txid.Short(), clock.Now().Add(lease))
	}
	var owner string
	if err := direct.QueryRow(ctx, `SELECT operation_id::text FROM txid_owners WHERE txid = $1`, env.Txid[:]).Scan(&owner); err != nil || owner != string(op.ID) {
		t.Fatalf("the txid's ownership did not commit with the row: owner %q (%v)", owner, err)
	}
	logged, err := truth.Events(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := countEdge(logged, sluice.Validated, sluice.Signing); n != 1 {
		t.Fatalf("validated->signing logged %d times, want once: %v", n, logged)
	}

	// The same worker retries the same change: the row is no longer in
	// validated, so the fencing predicate matches nothing and the store
	// says ErrFenced; nothing is written twice.
	if _, err := s.CAS(ctx, c); !errors.Is(err, sluice.ErrFenced) {
		t.Fatalf("retry of the CAS whose answer was lost = %v, want ErrFenced", err)
	}
	if again, _ := truth.Get(ctx, op.ID); !reflect.DeepEqual(again, after) {
		t.Fatalf("the retry changed the row: %+v, was %+v", again, after)
	}
	if again, _ := truth.Events(ctx, op.ID); !reflect.DeepEqual(again, logged) {
		t.Fatalf("the retry changed the log: %v, was %v", again, logged)
	}
	// Recovery is a re-read: from the row as it is, the next write lands.
	reread, err := s.Get(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	env.Signature = []byte("sig")
	if _, err := s.CAS(ctx, sluice.Change{ID: reread.ID, Token: reread.Token, Worker: "w1", From: reread.State, To: sluice.Signed,
		Envelope: &env, Note: "signed"}); err != nil {
		t.Fatalf("the write after re-reading: %v", err)
	}
	if n := len(proxy.lostAnswers()); n != 3 {
		t.Fatalf("%d answers lost, want 3: the proxy fired unarmed", n)
	}
}

// envelopeOf is a first build for op, as the pipeline would make it.
func envelopeOf(op sluice.Operation, now time.Time) sluice.Envelope {
	raw := tron.RawData{
		RefBlockBytes: [2]byte{0x12, 0x34},
		RefBlockHash:  [8]byte{1, 2, 3, 4, 5, 6, 7, 8},
		Expiration:    now.Add(time.Minute).UnixMilli(),
		Timestamp:     now.UnixMilli(),
		FeeLimit:      30_000_000,
		Memo:          fmt.Appendf(nil, "sluice:%s:1", op.ID),
		Contract: tron.TriggerSmartContract{
			Owner:    tron.AddressFromBytes20([20]byte{0xaa, 1}),
			Contract: tron.USDTContract,
			Data:     tron.EncodeTransfer(op.Request.To, uint64(op.Request.Amount)),
		},
	}
	return sluice.Envelope{Txid: raw.Txid(), Raw: raw}
}

func countEdge(evs []sluice.Event, from, to sluice.State) int {
	n := 0
	for _, e := range evs {
		if e.From == from && e.To == to {
			n++
		}
	}
	return n
}

// happyPath is the log of a withdrawal that confirms on its first envelope.
var happyPath = []sluice.State{sluice.Requested, sluice.Validated, sluice.Signing, sluice.Signed,
	sluice.Broadcasting, sluice.Broadcast, sluice.Confirmed}

// losingStore is the worker's store. Before the write that enters loseTo
// (or, with loseClaim, before the first claim) it arms the proxy to lose
// that statement's answer. With retry it retries, once, a write whose
// answer was lost, as a naive caller would; retried records what the retry
// got.
type losingStore struct {
	sluice.Store
	proxy     *lossyProxy
	loseTo    sluice.State
	loseClaim bool
	retry     bool
	armed     bool
	lostToken sluice.FencingToken // the token of the write whose answer was lost
	retried   []error
}

func (s *losingStore) Claim(ctx context.Context, w sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	if s.loseClaim && !s.armed {
		s.armed = true
		s.proxy.loseAnswer(func(sql string) bool { return sql == claimSQL }, 1)
	}
	return s.Store.Claim(ctx, w, limit)
}

func (s *losingStore) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	if !s.loseClaim && c.To == s.loseTo && !s.armed {
		s.armed, s.lostToken = true, c.Token
		s.proxy.loseAnswer(isCommit, 1)
	}
	op, err := s.Store.CAS(ctx, c)
	if err != nil && s.retry && len(s.proxy.lostAnswers()) > len(s.retried) {
		op, err = s.Store.CAS(ctx, c)
		s.retried = append(s.retried, err)
	}
	return op, err
}

// Goal: the core recovers from a lost commit answer by re-reading, never by
// redoing a side effect. Method: the real worker and pipeline, on the real
// store through lossyProxy, with the mock node and one manual clock (store,
// chain and worker), pay one withdrawal; the commit answer of one write on
// the happy path is lost (the write-ahead signed -> broadcasting among
// them: committed, yet the worker hears an error before it sends), or the
// answer to the first claim. The worker's Tick reports the error and stops
// touching the row; its lease lapses and a later claim goes on from the
// row as it is. Each write is also run with a worker that retries the write
// whose answer was lost: the retry is fenced (the row moved on), the worker
// stops dead, and nothing applies twice. The chain's own record then shows
// one broadcast of one txid, one acceptance and one inclusion paying the
// amount; the log is exactly the happy path (no transition twice), the
// lost write under the token of the call that heard the error (committed
// then, never redone) and the next write under a new claim.
func TestLostCommitAnswerWorkerRecovers(t *testing.T) {
	type tc struct {
		name      string
		loseTo    sluice.State
		loseClaim bool
		retry     bool
	}
	cases := []tc{{name: "claim", loseClaim: true}}
	for i := 1; i < len(happyPath); i++ {
		for _, retry := range []bool{false, true} {
			name := fmt.Sprintf("%s->%s", happyPath[i-1], happyPath[i])
			if retry {
				name += "/retried"
			}
			cases = append(cases, tc{name: name, loseTo: happyPath[i], retry: retry})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const lease = 20 * time.Second
			ctx := context.Background()
			clock := &storetest.Clock{}
			direct := freshPool(t)
			lossy, proxy := lossyPool(t, direct)
			truth := New(direct, Options{Lease: lease, Clock: clock})
			fund(t, truth)
			hot := tron.AddressFromBytes20([20]byte{0xaa, 7})
			to := tron.AddressFromBytes20([20]byte{0xbb, 7})
			signer := tron.NewHMACSigner([]byte("commit-lost test key"))
			node := mocknode.New(clock, mocknode.Config{
				Genesis: clock.Now().Add(-10 * time.Minute), HotWallet: hot, HotBalance: 1_000_000_000_000, Verifier: signer})
			const amount = 1_500_000
			id := opID(1)
			if _, _, err := truth.Insert(ctx, sluice.NewOperation{ID: id, RequestHash: "h",
				Request: sluice.Request{Customer: payer, To: to, Amount: amount, Asset: sluice.Asset}}); err != nil {
				t.Fatal(err)
			}
			st := &losingStore{Store: New(lossy, Options{Lease: lease, Clock: clock}), proxy: proxy,
				loseTo: c.loseTo, loseClaim: c.loseClaim, retry: c.retry}
			w := &sluice.Worker{ID: "w1", Pipeline: &sluice.Pipeline{Store: st, Node: node.Client("w1"), Signer: signer,
				Clock: clock, HotWallet: hot, Config: sluice.DefaultConfig()}}
			dump := func() string {
				var b strings.Builder
				evs, _ := truth.Events(ctx, id)
				for _, e := range evs {
					fmt.Fprintf(&b, "  #%d %s->%s token=%d txid=%s %s\n", e.Seq, e.From, e.To, e.Token, e.Txid.Short(), e.Note)
				}
				for _, a := range node.Wire() {
					fmt.Fprintf(&b, "  wire: %s %s %s\n", a.Worker, a.Txid.Short(), a.Answer)
				}
				fmt.Fprintf(&b, "  answers lost: %q\n", proxy.lostAnswers())
				return b.String()
			}

			// Tick until the withdrawal is terminal; a second of virtual
			// time passes whenever the tick had nothing to do or failed.
			var tickErrs []error
			fenced := 0
			deadline := clock.Now().Add(15 * time.Minute)
			for {
				op, err := truth.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if op.State.Terminal() {
					break
				}
				if clock.Now().After(deadline) {
					t.Fatalf("still %s after 15 minutes of virtual time:\n%s", op.State, dump())
				}
				rep, err := w.Tick(ctx)
				if err != nil {
					tickErrs = append(tickErrs, err)
				}
				if rep.Fenced {
					fenced++
				}
				if rep.Claimed == 0 || err != nil || rep.Fenced {
					clock.Advance(time.Second)
				}
			}

			// The loss happened, and the worker heard it as it should.
			lost := proxy.lostAnswers()
			if len(lost) != 1 {
				t.Fatalf("%d answers lost (%q), want 1:\n%s", len(lost), lost, dump())
			}
			if c.loseClaim != (lost[0] == claimSQL) || c.loseClaim == isCommit(lost[0]) {
				t.Fatalf("the answer lost was to %q, not the statement armed for", lost[0])
			}
			if c.retry {
				if len(tickErrs) != 0 || fenced != 1 || len(st.retried) != 1 || !errors.Is(st.retried[0], sluice.ErrFenced) {
					t.Fatalf("retried write: tick errors %v, fenced ticks %d, retry got %v; want the retry fenced, the worker stopped once, no errors:\n%s",
						tickErrs, fenced, st.retried, dump())
				}
			} else {
				if len(tickErrs) != 1 || fenced != 0 {
					t.Fatalf("tick errors %v, fenced ticks %d; want exactly one error (the lost answer) and no fencing:\n%s", tickErrs, fenced, dump())
				}
				for _, s := range sentinels {
					if errors.Is(tickErrs[0], s) {
						t.Fatalf("the lost answer reached the worker as %v: %v", s, tickErrs[0])
					}
				}
			}

			// The withdrawal confirmed on its first envelope.
			op, err := truth.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if op.State != sluice.Confirmed || op.Builds != 1 {
				t.Fatalf("ended %s after %d builds (reason %q), want confirmed on the first:\n%s", op.State, op.Builds, op.Reason, dump())
			}
			// Paid once in the ledger too.
			if h, err := truth.Hold(ctx, id); err != nil || h.State != sluice.HoldSettled {
				t.Errorf("hold %+v (%v), want settled", h, err)
			}
			if a, err := truth.Account(ctx, payer); err != nil || a.Paid != amount || a.Held != 0 || !a.Balanced() {
				t.Errorf("account %+v (%v), want %d paid, nothing held, balanced", a, err, amount)
			}
			txid := op.Envelope.Txid

			// The chain's own record: one broadcast of that txid, one
			// acceptance, one inclusion that moved exactly the amount.
			wire := node.Wire()
			if len(wire) != 1 || wire[0].Txid != txid || !wire[0].Accepted {
				t.Errorf("wire %+v; want one accepted broadcast of %s:\n%s", wire, txid.Short(), dump())
			}
			if acc := node.Accepted(); len(acc) != 1 || acc[0].Txid != txid || acc[0].Times != 1 {
				t.Errorf("acceptances %+v; want %s accepted once", acc, txid.Short())
			}
			inc := node.Inclusions()
			if len(inc) != 1 || inc[0].Txid != txid || !inc[0].TransferOK || inc[0].Transfer.To != to || inc[0].Transfer.Amount != amount {
				t.Errorf("inclusions %+v; want one of %s paying %d to the recipient", inc, txid.Short(), amount)
			}
			if got := node.Balance(to); got != amount {
				t.Errorf("recipient's balance %d, want %d: paid other than once", got, amount)
			}

			// The log: exactly the happy path, every transition once. The
			// lost write is under the token of the call that heard the
			// error (it committed then, and was not redone later), and the
			// write after it needed a new claim (a new token) once the
			// lease had lapsed: the worker went on only from what it
			// re-read. After a lost claim, whose token wrote nothing, the
			// first write is under a later one.
			evs, err := truth.Events(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var got []sluice.State
			for _, e := range evs {
				got = append(got, e.To)
			}
			if !reflect.DeepEqual(got, happyPath) {
				t.Fatalf("log enters %v, want exactly %v:\n%s", got, happyPath, dump())
			}
			if testing.Verbose() {
				t.Logf("answers lost %q; tick errors %v; retries %v\n%s", lost, tickErrs, st.retried, dump())
			}
			if c.loseClaim {
				if evs[1].Token < 2 {
					t.Errorf("first write under token %d, the lost claim's:\n%s", evs[1].Token, dump())
				}
				return
			}
			i := slices.Index(happyPath, c.loseTo)
			if evs[i].Token != st.lostToken {
				t.Errorf("the lost write %s->%s is under token %d, want %d, the token of the call that heard the error: it was redone, not committed once:\n%s",
					evs[i].From, evs[i].To, evs[i].Token, st.lostToken, dump())
			}
			if i+1 < len(evs) && evs[i+1].Token <= evs[i].Token {
				t.Errorf("the write after the lost one is under token %d, not a new claim's (lost under %d):\n%s",
					evs[i+1].Token, evs[i].Token, dump())
			}
		})
	}
}
