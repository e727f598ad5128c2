package audit

import (
	"context"
	"fmt"
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
		{"failed, yet on chain", sluice.Failed, false, false, 0, []string{model.AtMostOnce, model.Conservation}},
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
			rep := judge([]sluice.Operation{op}, evs, tr, late)
			if got := names(rep.Violations); !slices.Equal(got, c.want) || rep.Deferred != c.deferred {
				t.Errorf("violations %v (%v), %d deferred; want %v, %d deferred", got, rep.Violations, rep.Deferred, c.want, c.deferred)
			}
		})
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
	rep := judge(ops, evs, tr, late)
	want := []string{model.AtMostOnce, model.AtMostOnce, model.Conservation, model.AuditLog}
	if got := names(rep.Violations); !slices.Equal(got, want) || rep.Deferred != 0 ||
		!strings.Contains(rep.Violations[3].Message, "retires txid "+x.Short()+" as dead, but it is on chain") {
		t.Errorf("a rebuilt operation whose retired txid landed too: %d deferred, violations %v; want none deferred and %v naming the landing", rep.Deferred, rep.Violations, want)
	}
}

// Goal: the report counts what it read, names the oldest open operation,
// and lists every invariant it did not run with its reason, holds included.
func TestJudgeReport(t *testing.T) {
	a, ea := withdrawal(1, sluice.Confirmed, 1)
	b, eb := withdrawal(2, sluice.Broadcast, 2)
	c, ec := withdrawal(3, sluice.Signed, 3)
	c.CreatedAt = t0.Add(-time.Hour)
	rep := judge([]sluice.Operation{a, b, c}, append(append(ea, eb...), ec...), chain(paid(a.Envelope.Txid, 2, 1)), nil)
	if rep.Operations != 3 || rep.Open != 2 || rep.OldestOpen != c.ID || rep.States["confirmed"] != 1 {
		t.Errorf("report %+v: want 3 operations, 2 open, the oldest %s", rep, c.ID)
	}
	var out strings.Builder
	rep.Write(&out, "> ")
	for _, want := range []string{"> operations: 3, signed 1, broadcast 1, confirmed 1; 2 open\n", "> verdict: every invariant holds\n",
		"> not checked on a live system\n", "  holds ", "  " + model.OneWriter + " "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if len(rep.NotChecked) != len(NotLive)+1 {
		t.Errorf("not checked: %v, want every one of NotLive and holds", rep.NotChecked)
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
	ours, signed, drained, foreign, young := tx("ours"), tx("signed"), tx("drained"), tx("foreign"), tx("young")
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
	add(ours, 6, hot)
	info(ours, 6, tron.TransferLog(tron.USDTContract, hot, alice, 5))
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
		{0, 0, []tron.Txid{signed, drained}},
		{5, 6, []tron.Txid{drained}},
		{1, 10, nil},
		{100, 0, []tron.Txid{signed, drained}},
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
	if _, vs, _ := reconcile(t.Context(), node, tr, known, 0); !strings.Contains(vs[1].Message, "moves 70 units of USDT from the hot wallet to "+other.String()) ||
		strings.Contains(vs[1].Message, "signed by the hot wallet") {
		t.Errorf("a transferFrom out of the hot wallet: %q, want the movement named and no claim that the hot wallet signed it", vs[1].Message)
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
