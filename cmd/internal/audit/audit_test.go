package audit

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// Goal: every invariant of model is either run by the audit or listed as
// not checked with a reason, never both and never neither; so a new one
// (holds' `funds`, say) fails here until someone decides whether a live
// system can be judged by it.
func TestEveryInvariantClassified(t *testing.T) {
	names := model.InvariantNames()
	for _, n := range names {
		live := slices.ContainsFunc(Live, func(c Checker) bool { return c.Name == n })
		_, not := NotLive[n]
		if live == not {
			t.Errorf("invariant %s: run live %v, listed as not checked %v; want exactly one", n, live, not)
		}
	}
	for _, c := range Live {
		if !slices.Contains(names, c.Name) {
			t.Errorf("Live runs %s, which model does not have", c.Name)
		}
	}
	for n := range NotLive {
		if !slices.Contains(names, n) {
			t.Errorf("NotLive lists %s, which model does not have", n)
		}
	}
}

var (
	hot   = tron.AddressFromBytes20([20]byte{0x40, 0x7})
	alice = tron.AddressFromBytes20([20]byte{0xa1})
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// withdrawal is a row in state final and the log that led there, paying
// units to alice under one envelope, as a worker writes them.
func withdrawal(n int, final sluice.State, units uint64) (sluice.Operation, []sluice.Event) {
	id := sluice.OperationID(fmt.Sprintf("33333333-3333-4333-8333-%012d", n))
	raw := tron.RawData{Expiration: t0.Add(time.Minute).UnixMilli(), Memo: []byte(id),
		Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(alice, units)}}
	env := sluice.Envelope{Txid: raw.Txid(), Raw: raw, Signature: []byte("sig")}
	path := []sluice.State{sluice.None, sluice.Requested, sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast}
	if final.Terminal() {
		path = append(path, final)
	} else {
		path = path[:slices.Index(path, final)+1]
	}
	var evs []sluice.Event
	for k := 1; k < len(path); k++ {
		e := sluice.Event{Seq: int64(100*n + k), OperationID: id, From: path[k-1], To: path[k], Token: 1, At: t0}
		if path[k] >= sluice.Signing {
			e.Txid = env.Txid
		}
		evs = append(evs, e)
	}
	op := sluice.Operation{ID: id, Request: sluice.Request{To: alice, Amount: money.Amount(units), Asset: "USDT-TRC20"},
		State: final, Token: 1, Builds: 1, CreatedAt: t0, UpdatedAt: t0}
	if final >= sluice.Signing {
		op.Envelope = env
	}
	return op, evs
}

// paid is txid's inclusion in block moving units from the hot wallet to
// alice.
func paid(txid tron.Txid, block int64, units uint64) mocknode.Inclusion {
	m := tron.Transfer{Contract: tron.USDTContract, From: hot, To: alice, Amount: units}
	return mocknode.Inclusion{Txid: txid, BlockNumber: block, BlockTime: t0.Add(time.Duration(block) * 3 * time.Second),
		Receipt: tron.ReceiptSuccess, Transfer: m, TransferOK: true, Owner: hot, Moved: []tron.Transfer{m}}
}

func chain(incs ...mocknode.Inclusion) nodehttp.Truth {
	tr := nodehttp.Truth{Inclusions: incs, HotWallet: hot}
	for n := range int64(12) {
		tr.Blocks = append(tr.Blocks, tron.Block{Number: n, Time: t0.Add(time.Duration(n) * 3 * time.Second)})
	}
	tr.Solid = tr.Blocks[10]
	return tr
}

func names(vs []model.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant)
	}
	return out
}

// Goal: the audit leaves to the next one exactly what is still in flight:
// the current txid of an operation that is not terminal (on chain before
// the workers saw it solid), and a txid no operation owned at the read but
// one owns by the time the chain was read (written ahead after the read).
// The same chain under a terminal operation, or a txid nobody owns even
// now, is a violation: deferral hides nothing settled.
func TestJudgeDefersOnlyWhatIsInFlight(t *testing.T) {
	stray := tron.RawData{Memo: []byte("stray")}.Txid()
	for _, c := range []struct {
		name     string
		state    sluice.State
		stray    bool // a transfer of the stray txid is on chain too
		late     bool // and the database owns it by the time the chain was read
		deferred int
		want     []string // the invariants violated
	}{
		{"confirmed and paid", sluice.Confirmed, false, false, 0, nil},
		{"broadcast, on chain before the workers saw it solid", sluice.Broadcast, false, false, 1, nil},
		{"failed, yet on chain", sluice.Failed, false, false, 0, []string{model.AtMostOnce, model.Conservation, model.NoOperationalFailure}},
		{"a txid written ahead after the read", sluice.Confirmed, true, true, 1, nil},
		{"a txid nobody owns", sluice.Confirmed, true, false, 0, []string{model.TxidOwnership, model.Conservation, model.Conservation}},
	} {
		t.Run(c.name, func(t *testing.T) {
			op, evs := withdrawal(1, c.state, 5_000_000)
			tr := chain(paid(op.Envelope.Txid, 4, 5_000_000))
			late := map[tron.Txid]bool{}
			if c.stray {
				tr.Inclusions = append(tr.Inclusions, paid(stray, 6, 1_000_000))
				late[stray] = c.late
			}
			rep := judge([]sluice.Operation{op}, evs, nil, tr, late)
			if got := names(rep.Violations); !slices.Equal(got, c.want) || rep.Deferred != c.deferred {
				t.Errorf("violations %v (%v), %d deferred; want %v, %d deferred", got, rep.Violations, rep.Deferred, c.want, c.deferred)
			}
		})
	}
}

// Goal: the audit judges fee limits by the cap `sluice serve` runs with
// (sluice.DefaultConfig's FeeLimitMax, 240 TRX), not by the limit a first
// build starts at: a transfer that lands at the cap is clean, one a sun
// above it is a fee-limits violation naming the cap. Judged through
// Snapshot, as Run does.
func TestJudgeFeeLimitsByServesCap(t *testing.T) {
	limitMax := sluice.DefaultConfig().FeeLimitMax
	if start := sluice.DefaultConfig().FeeLimit; start >= limitMax {
		t.Fatalf("DefaultConfig: FeeLimit %d, FeeLimitMax %d; the test wants a cap above the start", start, limitMax)
	}
	for _, c := range []struct {
		limit int64
		want  []string
	}{{limitMax, nil}, {limitMax + 1, []string{model.FeeLimits}}} {
		op, evs := withdrawal(1, sluice.Confirmed, 5_000_000)
		in := paid(op.Envelope.Txid, 4, 5_000_000)
		in.FeeLimit = c.limit
		rep := judge([]sluice.Operation{op}, evs, nil, chain(in), nil)
		if got := names(rep.Violations); !slices.Equal(got, c.want) ||
			(c.want != nil && !strings.Contains(rep.Violations[0].Message, "above FeeLimitMax 240 TRX")) {
			t.Errorf("a transfer landed with fee limit %d sun: violations %v; want %v (the cap 240 TRX)", c.limit, rep.Violations, c.want)
		}
	}
}

// Goal: a retired txid that lands is judged at once, never deferred: the
// audit owns it through the rebuild's event, so it never asks txid_owners
// about it (which would say "owned now" and make it look written ahead
// after the read). Here an operation rebuilt X as Y, both paid: audit-log
// and at-most-once must name the double payment. Method: what Run does
// between reads (strangers, then the database's answer for those), with
// the database answering as it would (it owns both).
func TestRetiredTxidIsJudged(t *testing.T) {
	op, evs := withdrawal(1, sluice.Broadcast, 5_000_000)
	for i := range evs {
		// Sent long enough before the proof for the stuck policy to
		// rebuild: only the landing is wrong here.
		evs[i].At = t0.Add(-2 * time.Minute)
	}
	x := op.Envelope.Txid
	raw := op.Envelope.Raw
	raw.Memo = append(raw.Memo, " build 2"...)
	y := sluice.Envelope{Txid: raw.Txid(), Raw: raw, Signature: []byte("sig")}
	seq := evs[len(evs)-1].Seq
	ev := &sluice.Evidence{Txid: x, Expiration: t0.Add(-time.Minute), Margin: 30 * time.Second, SolidNumber: 10,
		SolidTime: t0.Add(30 * time.Second), Lookup: tron.Unknown, LookupSolid: 10}
	for k, step := range [][2]sluice.State{{sluice.Broadcast, sluice.Signing}, {sluice.Signing, sluice.Signed},
		{sluice.Signed, sluice.Broadcasting}, {sluice.Broadcasting, sluice.Broadcast}, {sluice.Broadcast, sluice.Confirmed}} {
		e := sluice.Event{Seq: seq + int64(k) + 1, OperationID: op.ID, From: step[0], To: step[1], Token: 2, At: t0, Txid: y.Txid}
		if k == 0 {
			e.RetiredTxid, e.Evidence = x, ev
		}
		evs = append(evs, e)
	}
	op.State, op.Token, op.Builds, op.Envelope = sluice.Confirmed, 2, 2, y
	tr := chain(paid(x, 4, 5_000_000), paid(y.Txid, 6, 5_000_000))
	ops := []sluice.Operation{op}

	late := map[tron.Txid]bool{}
	for _, t := range strangers(tr, owned(ops, evs)) {
		late[t] = t == x || t == y.Txid // txid_owners holds both
	}
	rep := judge(ops, evs, nil, tr, late)
	want := []string{model.AtMostOnce, model.AtMostOnce, model.Conservation, model.AuditLog}
	if got := names(rep.Violations); !slices.Equal(got, want) || rep.Deferred != 0 ||
		!strings.Contains(rep.Violations[3].Message, "retires txid "+x.Short()+" as dead, but it is on chain") {
		t.Errorf("a rebuilt operation whose retired txid landed too: %d deferred, violations %v; want none deferred and %v naming the landing", rep.Deferred, rep.Violations, want)
	}
}

// Goal: the report counts what it read, the ledger included, names the
// oldest open operation, runs funds and lists every invariant it did not
// run with its reason.
func TestJudgeReport(t *testing.T) {
	l := newBooks(100)
	a, ea := l.withdrawal(1, sluice.Confirmed, 1)
	b, eb := l.withdrawal(2, sluice.Broadcast, 2)
	c, ec := l.withdrawal(3, sluice.Signed, 3)
	c.CreatedAt = t0.Add(-time.Hour)
	rep := judge([]sluice.Operation{a, b, c}, append(append(ea, eb...), ec...), l.ledger(), chain(paid(a.Envelope.Txid, 2, 1)), nil)
	if rep.Operations != 3 || rep.Open != 2 || rep.OldestOpen != c.ID || rep.States["confirmed"] != 1 {
		t.Errorf("report %+v: want 3 operations, 2 open, the oldest %s", rep, c.ID)
	}
	var out strings.Builder
	rep.Write(&out, "> ")
	for _, want := range []string{"> operations: 3, signed 1, broadcast 1, confirmed 1; 2 open\n", "> verdict: every invariant holds\n",
		"> ledger: 1 accounts, 1 credits (0.0001 USDT deposited); holds: 2 held, 1 settled, 0 released; 0 operations from before the ledger left out\n",
		"  " + model.Funds + " ", "> not checked on a live system\n", "  " + model.OneWriter + " "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if len(rep.NotChecked) != len(NotLive) {
		t.Errorf("not checked: %v, want every one of NotLive", rep.NotChecked)
	}
}

// lookups answers as the node's ordinary lookup does, from a table, and
// counts the calls per txid.
type lookups struct {
	infos map[tron.Txid]tron.TxInfo
	calls map[tron.Txid]int
}

func (l *lookups) Lookup(_ context.Context, id tron.Txid) (tron.TxInfo, error) {
	l.calls[id]++
	if info, ok := l.infos[id]; ok {
		return info, nil
	}
	return tron.TxInfo{Txid: id, Status: tron.Unknown}, nil
}

// Goal: reconciliation reports, within its window of solid blocks, each
// transaction no operation owns that the hot wallet signed or whose
// Transfer logs move the hot wallet's tokens (a transferFrom signed by
// another account too), and nothing else: not one an operation owns (which
// it does not even look up), not one that never touches the hot wallet, not
// one outside the window or above the solid head. A node whose lookup
// disagrees with its block listing stops the audit.
func TestReconcile(t *testing.T) {
	tx := func(s string) tron.Txid { return tron.RawData{Memo: []byte(s)}.Txid() }
	other := tron.AddressFromBytes20([20]byte{0x07})
	ours, signed, silent, drained, foreign, young := tx("ours"), tx("signed"), tx("silent"), tx("drained"), tx("foreign"), tx("young")
	siphoned, coin := tx("siphoned"), tron.AddressFromBytes20([20]byte{0x08})
	tr := chain()
	add := func(id tron.Txid, block int64, owner tron.Address) {
		tr.Inclusions = append(tr.Inclusions, mocknode.Inclusion{Txid: id, BlockNumber: block, Receipt: tron.ReceiptSuccess, Owner: owner})
	}
	node := &lookups{infos: map[tron.Txid]tron.TxInfo{}, calls: map[tron.Txid]int{}}
	info := func(id tron.Txid, block int64, logs ...tron.Log) {
		node.infos[id] = tron.TxInfo{Txid: id, Status: tron.Included, BlockNumber: block, Solid: true, Receipt: tron.ReceiptSuccess, Logs: logs}
	}
	add(signed, 2, hot)
	info(signed, 2, tron.TransferLog(tron.USDTContract, hot, alice, 9))
	// Signed by the hot wallet with no Transfer log out of it (an approve
	// giving someone an allowance, a TRX transfer): the key is used by
	// someone else, whatever the logs say (blind bug 242 looked at the logs
	// alone).
	add(silent, 4, hot)
	info(silent, 4)
	add(ours, 6, hot)
	info(ours, 6, tron.TransferLog(tron.USDTContract, hot, alice, 5))
	// A transferFrom of another token the hot wallet holds: its money as
	// much as USDT is (blind bug 270 counted USDT logs only).
	add(siphoned, 7, other)
	info(siphoned, 7, tron.TransferLog(coin, hot, other, 40))
	add(drained, 8, other)
	info(drained, 8, tron.TransferLog(tron.USDTContract, hot, other, 70))
	add(foreign, 9, other)
	info(foreign, 9, tron.TransferLog(tron.USDTContract, other, alice, 1))
	add(young, 11, hot) // above the solid head #10
	info(young, 11, tron.TransferLog(tron.USDTContract, hot, other, 3))
	known := func(id tron.Txid) bool { return id == ours }

	for _, c := range []struct {
		n      int64
		from   int64
		strays []tron.Txid
	}{
		{0, 0, []tron.Txid{signed, silent, siphoned, drained}},
		{5, 6, []tron.Txid{siphoned, drained}},
		{1, 10, nil},
		{100, 0, []tron.Txid{signed, silent, siphoned, drained}},
	} {
		r, vs, err := reconcile(t.Context(), node, tr, known, c.n)
		if err != nil {
			t.Fatalf("rescan %d: %v", c.n, err)
		}
		if r.From != c.from || r.To != 10 || r.Strays != len(c.strays) || len(vs) != len(c.strays) {
			t.Errorf("rescan %d: %+v, %v; want blocks #%d..#10 and strays %v", c.n, r, vs, c.from, c.strays)
			continue
		}
		for i, v := range vs {
			if v.Invariant != Reconciliation || !strings.Contains(v.Message, c.strays[i].String()) {
				t.Errorf("rescan %d: finding %d is %v, want one naming %s", c.n, i, v, c.strays[i])
			}
		}
	}
	if node.calls[ours] != 0 || node.calls[young] != 0 {
		t.Errorf("looked up a transaction an operation owns (%d) or one above the solid head (%d)", node.calls[ours], node.calls[young])
	}
	_, vs, _ := reconcile(t.Context(), node, tr, known, 0)
	if len(vs) != 4 {
		t.Fatalf("the whole rescan found %d strays, want 4 (signed, silent, siphoned, drained)", len(vs))
	}
	if !strings.Contains(vs[3].Message, "moves 70 units of USDT from the hot wallet to "+other.String()) ||
		strings.Contains(vs[3].Message, "signed by the hot wallet") {
		t.Errorf("a transferFrom out of the hot wallet: %q, want the movement named and no claim that the hot wallet signed it", vs[3].Message)
	}
	if !strings.Contains(vs[2].Message, "moves 40 units of the token at "+coin.String()+" from the hot wallet to "+other.String()) {
		t.Errorf("a transferFrom of another token out of the hot wallet: %q, want the movement and the token named", vs[2].Message)
	}
	if !strings.Contains(vs[1].Message, "was signed by the hot wallet, but no operation owns it") {
		t.Errorf("a transaction the hot wallet signed without a Transfer log: %q, want it named as signed by the hot wallet", vs[1].Message)
	}

	node.infos[drained] = tron.TxInfo{Txid: drained, Status: tron.Pending}
	if _, _, err := reconcile(t.Context(), node, tr, known, 0); err == nil || !strings.Contains(err.Error(), drained.String()) {
		t.Errorf("a lookup that says pending for a txid listed in a solid block: %v, want an error naming it", err)
	}
}

// moving is a store whose row changes at each of its first `changes` Gets,
// each change with one more event, as a worker's writes would.
type moving struct {
	gets, changes int
}

func (m *moving) version() int { return min(m.gets, m.changes) }

func (m *moving) Get(_ context.Context, id sluice.OperationID) (sluice.Operation, error) {
	m.gets++
	return sluice.Operation{ID: id, State: sluice.Broadcast, UpdatedAt: t0.Add(time.Duration(m.version()))}, nil
}

func (m *moving) Events(_ context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	return make([]sluice.Event, 1+m.version()), nil
}

// Goal: a row and its log are read as of one moment: while the row changes
// between the reads, it is read again, and the log returned is the one read
// between two equal reads of the row; a row that never holds still is an
// error, not a torn read.
func TestReadOperationSettles(t *testing.T) {
	m := &moving{changes: 3}
	op, evs, err := readOperation(t.Context(), m, "op")
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(3); !op.UpdatedAt.Equal(want) || len(evs) != 4 {
		t.Errorf("read version %s with %d events; want the settled version %s with its 4", op.UpdatedAt, len(evs), want)
	}
	if _, _, err := readOperation(t.Context(), &moving{changes: 1 << 30}, "op"); err == nil || !strings.Contains(err.Error(), "changed under each") {
		t.Errorf("a row that never holds still: %v, want an error", err)
	}
}

// customer is whose balance the books' withdrawals are paid from.
const customer sluice.CustomerID = "c1"

// books is one customer's ledger kept as a store keeps it for the
// withdrawals made through it: each holds its amount at creation and closes
// its hold in the event that enters confirmed, failed or rejected.
type books struct {
	acct    sluice.Account
	credits []sluice.Credit
	holds   []sluice.Hold
	ops     []sluice.Operation
	events  []sluice.Event
}

func newBooks(deposit money.Amount) *books {
	return &books{acct: sluice.Account{Customer: customer, Balance: deposit, Deposited: deposit},
		credits: []sluice.Credit{{Ref: "wire-1", Customer: customer, Amount: deposit}}}
}

// withdrawal is the package's withdrawal for the books' customer, its hold
// placed and closed as its log says.
func (b *books) withdrawal(n int, final sluice.State, units uint64) (sluice.Operation, []sluice.Event) {
	op, evs := withdrawal(n, final, units)
	op.Request.Customer = customer
	amt := money.Amount(units)
	h := sluice.Hold{Operation: op.ID, Customer: customer, Amount: amt, State: sluice.HoldHeld}
	b.acct.Balance -= amt
	b.acct.Held += amt
	for i := range evs {
		switch evs[i].Hold = sluice.HoldFor(evs[i].To); evs[i].Hold {
		case sluice.HoldSettle:
			h.State, h.ClosedSeq = sluice.HoldSettled, evs[i].Seq
			b.acct.Held -= amt
			b.acct.Paid += amt
		case sluice.HoldRelease:
			h.State, h.ClosedSeq = sluice.HoldReleased, evs[i].Seq
			b.acct.Held -= amt
			b.acct.Balance += amt
		}
	}
	b.holds = append(b.holds, h)
	b.ops = append(b.ops, op)
	b.events = append(b.events, evs...)
	return op, evs
}

// cancel is an operator's cancel of op, validated and never sent: failed,
// its hold released.
func (b *books) cancel(op sluice.Operation) sluice.Operation {
	i := slices.IndexFunc(b.ops, func(o sluice.Operation) bool { return o.ID == op.ID })
	h := slices.IndexFunc(b.holds, func(h sluice.Hold) bool { return h.Operation == op.ID })
	e := sluice.Event{Seq: b.events[len(b.events)-1].Seq + 1, OperationID: op.ID, From: op.State, To: sluice.Failed,
		Hold: sluice.HoldRelease, Token: op.Token + 1, Worker: sluice.OperatorPrefix + "alice", At: t0, Note: "customer asked"}
	b.events = append(b.events, e)
	b.ops[i].State, b.ops[i].Token = sluice.Failed, e.Token
	b.holds[h].State, b.holds[h].ClosedSeq = sluice.HoldReleased, e.Seq
	b.acct.Held -= op.Request.Amount
	b.acct.Balance += op.Request.Amount
	return b.ops[i]
}

// ledger is the books as ReadLedger would read them.
func (b *books) ledger() *Ledger {
	evs := slices.Clone(b.events)
	slices.SortFunc(evs, func(x, y sluice.Event) int { return int(x.Seq - y.Seq) })
	return &Ledger{Credits: b.credits, Accounts: []sluice.Account{b.acct}, Holds: slices.Clone(b.holds),
		Operations: slices.Clone(b.ops), Events: evs}
}

// Goal: funds is judged on the ledger's own snapshot: a clean ledger with
// withdrawals confirmed, failed and in flight passes (an operation in
// flight holds its amount and is not flagged for what will close it); a
// hold released twice, an account whose paid moved without a confirmed
// operation, a credit the account counts twice, a hold left open on a
// terminal operation and a hold naming no row are each found, by funds
// alone.
func TestJudgeFunds(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(l *Ledger, failed sluice.Operation)
		want  []string // in funds' messages
	}{
		{"clean", func(*Ledger, sluice.Operation) {}, nil},
		{"hold released twice", func(l *Ledger, failed sluice.Operation) {
			// A second release: the log says so, and the balance is
			// credited again out of held (another hold's share), so the
			// account still adds up.
			l.Events = append(l.Events, sluice.Event{Seq: 1000, OperationID: failed.ID, From: sluice.Failed, To: sluice.Failed,
				Hold: sluice.HoldRelease, Token: 2, At: t0})
			l.Accounts[0].Balance += failed.Request.Amount
			l.Accounts[0].Held -= failed.Request.Amount
		}, []string{"releases the hold a second time (already released at event #", "the store's account is balance"}},
		{"paid without a confirmation", func(l *Ledger, _ sluice.Operation) {
			l.Accounts[0].Balance -= 7
			l.Accounts[0].Paid += 7
		}, []string{"the store's account is balance"}},
		{"a credit counted twice", func(l *Ledger, _ sluice.Operation) {
			l.Accounts[0].Balance += 50
			l.Accounts[0].Deposited += 50
		}, []string{"the store says 1050 units were deposited, the world deposited 1000"}},
		{"an account that does not add up", func(l *Ledger, _ sluice.Operation) {
			l.Accounts[0].Balance += 3
		}, []string{"the store's ledger did not add up at the audit's read: account c1 has balance"}},
		{"a hold left open on a failed operation", func(l *Ledger, failed sluice.Operation) {
			i := slices.IndexFunc(l.Holds, func(h sluice.Hold) bool { return h.Operation == failed.ID })
			l.Holds[i].State, l.Holds[i].ClosedSeq = sluice.HoldHeld, 0
		}, []string{"is failed but its hold is held (want released)"}},
		{"a hold naming no row", func(l *Ledger, _ sluice.Operation) {
			l.Holds = append(l.Holds, sluice.Hold{Operation: "55555555-5555-4555-8555-000000000001", Customer: customer, Amount: 1, State: sluice.HoldHeld})
		}, []string{"which has no row"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBooks(1000)
			conf, _ := b.withdrawal(1, sluice.Confirmed, 100)
			failed, _ := b.withdrawal(2, sluice.Validated, 200)
			failed = b.cancel(failed)
			open, _ := b.withdrawal(3, sluice.Broadcast, 300)
			l := b.ledger()
			c.plant(l, failed)
			// The withdrawal in flight is on chain already, not yet solid
			// for its worker: its hold stays held, which is no violation.
			tr := chain(paid(conf.Envelope.Txid, 2, 100), paid(open.Envelope.Txid, 9, 300))
			ops, evs := slices.Clone(b.ops), slices.Clone(b.events)
			slices.SortFunc(evs, func(x, y sluice.Event) int { return int(x.Seq - y.Seq) })
			rep := judge(ops, evs, l, tr, nil)
			var got []string
			for _, v := range rep.Violations {
				if v.Invariant != model.Funds {
					t.Errorf("a violation of %s: %s", v.Invariant, v.Message)
					continue
				}
				got = append(got, v.Message)
			}
			for _, w := range c.want {
				if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, w) }) {
					t.Errorf("funds found %q; want one saying %q", got, w)
				}
			}
			if len(c.want) == 0 && len(got) > 0 {
				t.Errorf("a clean ledger: funds found %q", got)
			}
			if rep.Deferred != 1 {
				t.Errorf("%d txids deferred, want the one in flight", rep.Deferred)
			}
		})
	}
}

// Goal: the rows the migration to the ledger left without a hold (the
// legacy customer's, confirmed, failed or rejected before the ledger
// existed) are left out of funds with their events, and counted; a legacy
// row in flight without a hold is not (the migration gave each one), nor
// is another customer's row without one.
func TestLedgerLegacy(t *testing.T) {
	b := newBooks(1000)
	b.withdrawal(1, sluice.Confirmed, 100)
	old, eold := withdrawal(2, sluice.Confirmed, 400)
	old.Request.Customer = legacyCustomer
	l := b.ledger()
	l.Operations = append(l.Operations, old)
	l.Events = append(l.Events, eold...)
	if vs := model.CheckFunds(l.Snapshot()); len(vs) != 0 {
		t.Errorf("a confirmed legacy row without a hold: %v, want it left out", vs)
	}
	if m := l.summary(); m.Legacy != 1 || m.Settled != 1 || m.Deposited != 1000 || m.Accounts != 1 || m.Credits != 1 {
		t.Errorf("summary %+v: want one legacy row left out, one settled hold, 1000 deposited", m)
	}
	for _, c := range []struct {
		name     string
		customer sluice.CustomerID
		state    sluice.State
	}{
		{"a legacy row in flight", legacyCustomer, sluice.Broadcast},
		{"another customer's confirmed row", customer, sluice.Confirmed},
	} {
		l := b.ledger()
		op, evs := withdrawal(3, c.state, 5)
		op.Request.Customer = c.customer
		l.Operations = append(l.Operations, op)
		l.Events = append(l.Events, evs...)
		vs := model.CheckFunds(l.Snapshot())
		if !slices.ContainsFunc(vs, func(v model.Violation) bool { return strings.Contains(v.Message, "has no hold") }) || l.summary().Legacy != 0 {
			t.Errorf("%s without a hold: %v, want it judged (no hold)", c.name, vs)
		}
	}
}

// Goal: the legacy customer is spelt as migration 0005 spells it.
func TestLegacyCustomerIsTheMigrations(t *testing.T) {
	b, err := os.ReadFile("../../../sluice/store/postgres/migrations/0005_ledger_parking_operators.sql")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "'"+string(legacyCustomer)+"'"); n < 2 {
		t.Errorf("migration 0005 names %q %d times, want it as the legacy rows' customer", legacyCustomer, n)
	}
}

// Goal: no-operational-failure is judged live: a withdrawal the stuck
// policy cancelled, accepted by the node, never refused and never parked,
// passes; the same cancel after its send was refused for bandwidth (the
// node's answer on the wire, from the mock's ground truth), after its row
// counts parks (the store's record standing in for the parks a run's
// observer sees) or with its txid never accepted by the node (the
// ground truth's acceptances) is an operational failure.
func TestJudgeOperationalFailure(t *testing.T) {
	for _, c := range []struct {
		name    string
		final   sluice.State
		parks   int
		refused bool
		unheard bool   // the node never accepted the txid
		want    string // in no-operational-failure's message; "" for none
	}{
		{"cancelled, no trouble", sluice.Failed, 0, false, false, ""},
		{"cancelled after parks", sluice.Failed, 2, false, false, "parked 2 times"},
		{"cancelled after a refusal for bandwidth", sluice.Failed, 0, true, false, "refused " + string(tron.CodeBandwidthError)},
		{"cancelled, never accepted", sluice.Failed, 0, false, true, "no node ever accepted its last txid"},
		// The row counts its parks, with no instant for any: whether the
		// review came past the park bounds is not judged live.
		{"in review after two parks", sluice.Review, 2, false, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			op, evs := withdrawal(1, c.final, 5_000_000)
			op.Parks = c.parks
			if c.final == sluice.Failed {
				evs[len(evs)-1].Decision = &sluice.Decision{Action: sluice.Cancel, Reason: "proven dead past CancelAfter", Waited: 3 * time.Hour, Rebuilds: 0}
			}
			tr := chain()
			switch {
			case c.refused:
				tr.Wire = []mocknode.WireAttempt{{Seq: 1, Txid: op.Envelope.Txid, Reached: true, Truth: tron.CodeBandwidthError, Answer: string(tron.CodeBandwidthError)}}
			case !c.unheard:
				tr.Accepted = []mocknode.Acceptance{{Txid: op.Envelope.Txid, Times: 1}}
			}
			rep := judge([]sluice.Operation{op}, evs, nil, tr, nil)
			var got []string
			for _, v := range rep.Violations {
				if v.Invariant == model.NoOperationalFailure {
					got = append(got, v.Message)
				}
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("no operational trouble: %q", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("no-operational-failure found %q; want one saying %q", got, c.want)
			}
		})
	}
}
