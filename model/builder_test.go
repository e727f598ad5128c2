package model

// Hand-built snapshots. A builder keeps the pieces of a run consistent the way
// the store, the mock node and the world would: every transition writes a row
// and an event, and the world records the write (and every claim, park and
// operator's resolution, and every envelope stored); every send is a wire
// attempt, every acceptance an Acceptance, every inclusion lands in a block
// of a chain that covers the whole run; every creation holds its amount of
// the customer's balance, and every transition into confirmed, failed or
// rejected closes that hold, in the store's holds and accounts, which start
// from the world's deposits; every client post carries the payload as the
// client wrote it (its own strings) and the payload the answer showed. The
// row's request hash is left empty: the oracle must never need it. Tests
// take the clean snapshot and break exactly one thing in it.

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

var (
	t0        = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // store clock at the start; the heal point
	genesis   = t0.Add(-10 * time.Minute)
	hotWallet = tron.AddressFromBytes20([20]byte{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	alice     = tron.AddressFromBytes20([20]byte{0xa1, 0xce, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	bob       = tron.AddressFromBytes20([20]byte{0xb0, 0xb0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	mallory   = tron.AddressFromBytes20([20]byte{0x66, 0x66, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
)

const (
	solidLag = 19
	window   = 60 * time.Second // expiration window
	// minValidity: the least an envelope has left at its write-ahead
	minValidity = 15 * time.Second
	margin      = 30 * time.Second // safety margin
	lease       = 30 * time.Second // the store's lease
	buildsMax   = 3                // envelopes an operation may build
	parkLimit   = 5                // parks before review
	// pauperDeposit is all pauper ever deposited: less than the 1 USDT of
	// the unfunded request.
	pauperDeposit = 400_000
	runEnd        = 40 * time.Minute // the run ends this long after t0
	budget        = 30 * time.Minute // liveness budget after t0
)

type builder struct {
	t    *testing.T
	s    Snapshot
	now  time.Time // the store's clock, also the node's
	step int64     // the logical clock of intake calls and returns
}

func newBuilder(t *testing.T) *builder {
	t.Helper()
	b := &builder{t: t, now: t0}
	end := t0.Add(runEnd)
	for n := int64(0); ; n++ {
		bt := genesis.Add(time.Duration(n) * mocknode.SlotInterval)
		if bt.After(end) {
			break
		}
		var id [32]byte
		copy(id[:], fmt.Sprintf("block-%d", n))
		b.s.Blocks = append(b.s.Blocks, tron.Block{Number: n, ID: id, Time: bt})
	}
	b.s.SolidNumber = int64(len(b.s.Blocks)-1) - solidLag
	b.s.HotWallet = hotWallet
	b.s.Healed = t0
	b.s.End = end
	b.s.LivenessBudget = budget
	// The world watched every claim and write (the builder records them
	// with each claim and step), and configured the core so.
	b.s.Claims = []ClaimRecord{}
	b.s.Lease = lease
	b.s.SafetyMargin = margin
	b.s.BuildsMax = buildsMax
	b.s.Stuck = sluice.StuckPolicy{RebuildAfter: time.Minute, CancelAfter: 2 * time.Hour, Rebuilds: buildsMax - 1}
	b.s.ParkLimit = parkLimit
	b.s.MinValidity = minValidity
	b.s.ExpirationWindow = window
	b.s.FaultFree = false // the clean run loses a send and drops transactions from the pool
	// The ledger: the world's deposits, before any post, and the store's
	// accounts after them. Every hold and close after this goes through
	// the builder (insertFor, closeHold), as the store does it in the same
	// step as the row's write.
	b.s.Deposits = []sluice.Credit{
		{Ref: "dep-a-1", Customer: payer, Amount: 60_000_000},
		{Ref: "dep-a-2", Customer: payer, Amount: 40_000_000},
		{Ref: "dep-poor-1", Customer: pauper, Amount: pauperDeposit},
	}
	b.s.Accounts = []sluice.Account{}
	b.s.Holds = []sluice.Hold{}
	for _, d := range b.s.Deposits {
		a := b.account(d.Customer)
		a.Balance += d.Amount
		a.Deposited += d.Amount
	}
	return b
}

// account is the store's account of customer c, opened on first use.
func (b *builder) account(c sluice.CustomerID) *sluice.Account {
	for i := range b.s.Accounts {
		if b.s.Accounts[i].Customer == c {
			return &b.s.Accounts[i]
		}
	}
	b.s.Accounts = append(b.s.Accounts, sluice.Account{Customer: c})
	return &b.s.Accounts[len(b.s.Accounts)-1]
}

// holdOf is the store's hold of op id.
func (b *builder) holdOf(id sluice.OperationID) *sluice.Hold {
	for i := range b.s.Holds {
		if b.s.Holds[i].Operation == id {
			return &b.s.Holds[i]
		}
	}
	b.t.Fatalf("op %s has no hold", id)
	return nil
}

// closeHold applies event e's hold action to the store's hold and account,
// as the store does in the step that appends e. Like a broken store, it
// does not refuse a second close: tests that write one want it recorded.
func (b *builder) closeHold(e sluice.Event) {
	if e.Hold == sluice.HoldKeep {
		return
	}
	h := b.holdOf(e.OperationID)
	a := b.account(h.Customer)
	a.Held -= h.Amount
	h.ClosedSeq = e.Seq
	if e.Hold == sluice.HoldSettle {
		h.State = sluice.HoldSettled
		a.Paid += h.Amount
	} else {
		h.State = sluice.HoldReleased
		a.Balance += h.Amount
	}
}

// tick moves the clock on and returns the new time.
func (b *builder) tick(d time.Duration) time.Time {
	b.now = b.now.Add(d)
	return b.now
}

// head is the newest block at time t.
func (b *builder) head(t time.Time) tron.Block {
	return b.s.Blocks[int(t.Sub(genesis)/mocknode.SlotInterval)]
}

func (b *builder) solid(t time.Time) tron.Block {
	return b.s.Blocks[b.head(t).Number-solidLag]
}

// solidSeen is what the world records on a write into to at time t: the
// solid head's number for a confirmation, 0 otherwise.
func (b *builder) solidSeen(to sluice.State, t time.Time) int64 {
	if to != sluice.Confirmed {
		return 0
	}
	return b.solid(t).Number
}

func opID(n int) sluice.OperationID {
	// Hex letters in the id, so that its upper-case spelling differs.
	return sluice.OperationID(fmt.Sprintf("abcdef00-0000-4000-8000-%012d", n))
}

// payer is the customer every withdrawal of the clean run is paid from;
// pauper is one whose deposits (pauperDeposit) do not cover 1 USDT.
const (
	payer  sluice.CustomerID = "cust-a"
	pauper sluice.CustomerID = "cust-poor"
)

// pay is the payload a client sends for payer: its own strings, the
// address in base58check and the amount as a decimal string of USDT.
func pay(id string, to tron.Address, units uint64) Payload {
	return payFor(id, payer, to, units)
}

// payFor is pay for another customer.
func payFor(id string, c sluice.CustomerID, to tron.Address, units uint64) Payload {
	return Payload{ID: id, Customer: string(c), To: to.String(), Amount: usdt(units), Asset: sluice.Asset}
}

// usdt writes units (6 decimals) as a client would: "1.5" for 1_500_000,
// "2" for 2_000_000. The builder's own formatting, not money's.
func usdt(units uint64) string {
	whole, frac := units/1_000_000, units%1_000_000
	if frac == 0 {
		return fmt.Sprint(whole)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%06d", whole, frac), "0")
}

// opb builds one operation.
type opb struct {
	b     *builder
	id    sluice.OperationID
	token sluice.FencingToken
	proc  string // the incarnation holding the latest claim
	fee   int64  // the fee limit of the envelopes it builds next (0: 30 TRX)
	// floor and ceil are the fee limits of the release its builder runs,
	// recorded on its builds (0: none recorded).
	floor, ceil int64
}

func (o *opb) row() *sluice.Operation { return o.b.row(o.id) }

func (b *builder) row(id sluice.OperationID) *sluice.Operation {
	for i := range b.s.Operations {
		if b.s.Operations[i].ID == id {
			return &b.s.Operations[i]
		}
	}
	b.t.Fatalf("no row %s", id)
	return nil
}

// events returns pointers to id's events, in log order.
func (b *builder) events(id sluice.OperationID) []*sluice.Event {
	var out []*sluice.Event
	for i := range b.s.Events {
		if b.s.Events[i].OperationID == id {
			out = append(out, &b.s.Events[i])
		}
	}
	return out
}

// event returns id's first event from -> to.
func (b *builder) event(id sluice.OperationID, from, to sluice.State) *sluice.Event {
	for _, e := range b.events(id) {
		if e.From == from && e.To == to {
			return e
		}
	}
	b.t.Fatalf("op %s has no event %s->%s", id, from, to)
	return nil
}

// lastEvent returns id's last event from -> to.
func (b *builder) lastEvent(id sluice.OperationID, from, to sluice.State) *sluice.Event {
	evs := b.events(id)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].From == from && evs[i].To == to {
			return evs[i]
		}
	}
	b.t.Fatalf("op %s has no event %s->%s", id, from, to)
	return nil
}

func (b *builder) inclusion(txid tron.Txid) *mocknode.Inclusion {
	for i := range b.s.Inclusions {
		if b.s.Inclusions[i].Txid == txid {
			return &b.s.Inclusions[i]
		}
	}
	b.t.Fatalf("txid %s is not included", txid.Short())
	return nil
}

// create inserts op n paying amount units to alice and records client's
// request as Created.
func (b *builder) create(n int, amount uint64, client string) *opb {
	return b.createTo(n, alice, amount, client)
}

// createTo is create paying to.
func (b *builder) createTo(n int, to tron.Address, amount uint64, client string) *opb {
	return b.createFor(n, payer, to, amount, client)
}

// createFor is createTo paid from customer c.
func (b *builder) createFor(n int, c sluice.CustomerID, to tron.Address, amount uint64, client string) *opb {
	o := b.insertFor(n, c, to, amount)
	b.record(client, payFor(string(o.id), c, to, amount), Created, sluice.Requested)
	return o
}

// insert is the store's Insert without any intake record.
func (b *builder) insert(n int, to tron.Address, amount uint64) *opb {
	return b.insertFor(n, payer, to, amount)
}

// insertFor is insert paid from customer c: the row, its creation event,
// and its hold, amount moved from c's balance to held (the builder does
// not refuse an overdraft: a test that wants one gets it).
func (b *builder) insertFor(n int, c sluice.CustomerID, to tron.Address, amount uint64) *opb {
	id := opID(n)
	now := b.tick(time.Second)
	b.s.Operations = append(b.s.Operations, sluice.Operation{
		ID:        id,
		Request:   sluice.Request{Customer: c, To: to, Amount: money.Amount(amount), Asset: sluice.Asset},
		State:     sluice.Requested,
		NotBefore: now,
		CreatedAt: now,
		UpdatedAt: now,
	})
	b.appendEvent(sluice.Event{OperationID: id, From: sluice.None, To: sluice.Requested, At: now, Note: "created"})
	b.s.Holds = append(b.s.Holds, sluice.Hold{Operation: id, Customer: c, Amount: money.Amount(amount), State: sluice.HoldHeld})
	a := b.account(c)
	a.Balance -= money.Amount(amount)
	a.Held += money.Amount(amount)
	return &opb{b: b, id: id}
}

// record appends an intake record of client sending sent, whose call and
// return are the next two step indexes. A Created or Replayed answer shows
// the payload sent, its id in canonical (lowercase) form, as intake does;
// any other answer shows no payload. A Replayed answer names the txid the
// operation had when its log last entered state.
func (b *builder) record(client string, sent Payload, out Outcome, state sluice.State) {
	r := IntakeRecord{Client: client, ID: sent.ID, Sent: sent, Outcome: out, Call: b.step + 1, Return: b.step + 2}
	b.step += 2
	if out == Created || out == Replayed {
		r.Answer = sent
		r.Answer.ID = strings.ToLower(sent.ID)
		r.State = state
		// The txid the row had when it last entered that state, as
		// intake shows it.
		for _, e := range b.events(sluice.OperationID(r.Answer.ID)) {
			if e.To == state {
				r.Txid = ""
				if !e.Txid.IsZero() {
					r.Txid = e.Txid.String()
				}
			}
		}
	}
	b.s.Intake = append(b.s.Intake, r)
}

// read appends a GET of id by client, answered with the row and its whole
// log as they stand now (the log does not move during the read).
func (b *builder) read(client string, id sluice.OperationID) *ReadRecord {
	row := b.row(id)
	r := ReadRecord{
		Client: client, ID: string(id), Present: true,
		Answer: payFor(string(id), row.Request.Customer, row.Request.To, uint64(row.Request.Amount)),
		State:  row.State, Bounded: true, Call: b.step + 1, Return: b.step + 2,
	}
	if !row.Envelope.Txid.IsZero() {
		r.Txid = row.Envelope.Txid.String()
	}
	b.step += 2
	for _, e := range b.events(id) {
		r.History = append(r.History, historyEntry(*e))
	}
	r.LogAtCall, r.LogAtReturn = len(r.History), len(r.History)
	b.s.Reads = append(b.s.Reads, r)
	return &b.s.Reads[len(b.s.Reads)-1]
}

// readOf returns client's read.
func (b *builder) readOf(client string) *ReadRecord {
	for i := range b.s.Reads {
		if b.s.Reads[i].Client == client {
			return &b.s.Reads[i]
		}
	}
	b.t.Fatalf("no read by client %s", client)
	return nil
}

// recordOf returns client's first intake record.
func (b *builder) recordOf(client string) *IntakeRecord {
	for i := range b.s.Intake {
		if b.s.Intake[i].Client == client {
			return &b.s.Intake[i]
		}
	}
	b.t.Fatalf("no intake record of client %s", client)
	return nil
}

// write returns the world's record of the write that appended event e.
func (b *builder) write(e *sluice.Event) *WriteRecord {
	for i := range b.s.Writes {
		if b.s.Writes[i].Seq == e.Seq {
			return &b.s.Writes[i]
		}
	}
	b.t.Fatalf("no write record of event #%d", e.Seq)
	return nil
}

// envelopeOf returns the envelope the world saw stored for txid.
// wireOf is txid's first wire attempt.
func (b *builder) wireOf(txid tron.Txid) *mocknode.WireAttempt {
	b.t.Helper()
	for i := range b.s.Wire {
		if b.s.Wire[i].Txid == txid {
			return &b.s.Wire[i]
		}
	}
	b.t.Fatalf("txid %s never on the wire", txid.Short())
	return nil
}

func (b *builder) envelopeOf(txid tron.Txid) *sluice.Envelope {
	for i := range b.s.Envelopes {
		if b.s.Envelopes[i].Txid == txid {
			return &b.s.Envelopes[i]
		}
	}
	b.t.Fatalf("no envelope stored for txid %s", txid.Short())
	return nil
}

// claimRecord returns the world's record of the claim of id with token.
func (b *builder) claimRecord(id sluice.OperationID, token sluice.FencingToken) *ClaimRecord {
	for i := range b.s.Claims {
		if c := &b.s.Claims[i]; c.Op == id && c.Token == token {
			return c
		}
	}
	b.t.Fatalf("no claim of op %s with token %d", id, token)
	return nil
}

func (b *builder) appendEvent(e sluice.Event) {
	e.Seq = int64(len(b.s.Events)) + 1
	b.s.Events = append(b.s.Events, e)
}

// claim is a new lease by worker w1: the next token.
func (o *opb) claim() *opb { return o.claimBy("w1") }

// claimBy is a new lease by proc at the current time, as the world sees it.
func (o *opb) claimBy(proc string) *opb {
	if nb := o.row().NotBefore; nb.After(o.b.now) {
		o.b.now = nb // a claim comes only once the row is free again
	}
	o.token++
	o.proc = proc
	o.row().Token = o.token
	o.b.s.Claims = append(o.b.s.Claims, ClaimRecord{Op: o.id, Token: o.token, Proc: proc, At: o.b.now, Seq: o.b.lastSeq()})
	return o
}

// lastSeq is the store's newest event Seq (0 before any).
func (b *builder) lastSeq() int64 {
	if n := len(b.s.Events); n > 0 {
		return b.s.Events[n-1].Seq
	}
	return 0
}

// claimCall records a worker's claim call at the current time that asked
// for limit rows and took the last took claims recorded.
func (b *builder) claimCall(proc string, limit, took int) {
	b.s.ClaimCalls = append(b.s.ClaimCalls, ClaimCall{Proc: proc, At: b.now, Limit: limit, Took: took,
		Claims: len(b.s.Claims) - took, Releases: len(b.s.Releases), Seq: b.lastSeq()})
}

// step writes a transition as the store's CAS would, by the claim's
// holder, with extra fields set on the event by edit; the world records the
// write. Entering confirmed settles the hold, entering failed or rejected
// releases it (sluice.HoldFor), unless edit says otherwise; the first
// write-ahead stamps FirstSentAt with the head block's time; a transition
// ends the park spell.
func (o *opb) step(to sluice.State, edit func(*sluice.Event)) *opb {
	row := o.row()
	now := o.b.tick(time.Second)
	e := sluice.Event{OperationID: o.id, From: row.State, To: to, Token: o.token, Worker: sluice.WorkerID(o.proc), At: now,
		Txid: row.Envelope.Txid, Hold: sluice.HoldFor(to)}
	if edit != nil {
		edit(&e)
	}
	if to == sluice.Broadcasting && row.FirstSentAt.IsZero() {
		row.FirstSentAt = o.b.head(now).Time
	}
	row.State, row.UpdatedAt = to, now
	row.ParkReason, row.ParkedSince = "", time.Time{}
	o.b.appendEvent(e)
	o.b.closeHold(o.b.s.Events[len(o.b.s.Events)-1])
	w := WriteRecord{
		Seq: o.b.s.Events[len(o.b.s.Events)-1].Seq, Op: o.id, Token: o.token, Proc: o.proc, At: now, Terminal: to.Terminal(),
		SolidSeen: o.b.solidSeen(to, now),
	}
	if e.From == sluice.Signed && to == sluice.Broadcasting {
		// The worker's step read the head before its write-ahead.
		w.Ahead, w.AheadHead = true, o.b.head(now).Time
	}
	o.b.s.Writes = append(o.b.s.Writes, w)
	return o
}

// operatorProc is the process an operator's resolutions run in.
const operatorProc = "operator"

// resolve is an operator's action as the store's Resolve applies it: the
// row is taken whatever lease is on it (the token bumped, recorded as an
// operator's claim), and the event, written by "operator:"+who, moves it
// to to (to == its state: a retry), keeping its txid and closing the hold
// as step does; edit sets extra fields (a cancel's proof).
func (o *opb) resolve(who string, to sluice.State, why string, edit func(*sluice.Event)) *opb {
	b := o.b
	row := o.row()
	now := b.tick(time.Second)
	o.token++
	o.proc = operatorProc
	row.Token = o.token
	b.s.Claims = append(b.s.Claims, ClaimRecord{Op: o.id, Token: o.token, Proc: operatorProc, At: now, Operator: true})
	claim := &b.s.Claims[len(b.s.Claims)-1]
	e := sluice.Event{OperationID: o.id, From: row.State, To: to, Token: o.token, Worker: sluice.WorkerID(sluice.OperatorPrefix + who),
		At: now, Txid: row.Envelope.Txid, Note: why}
	if to != row.State {
		e.Hold = sluice.HoldFor(to)
	}
	if edit != nil {
		edit(&e)
	}
	if to == sluice.Failed {
		row.Reason = "cancelled by operator " + who + ": " + why
	}
	row.State, row.UpdatedAt, row.NotBefore = to, now, now
	row.ParkReason, row.ParkedSince = "", time.Time{}
	b.appendEvent(e)
	claim.Seq = b.lastSeq() // the world records the resolution's claim after its event
	b.closeHold(b.s.Events[len(b.s.Events)-1])
	b.s.Writes = append(b.s.Writes, WriteRecord{
		Seq: b.s.Events[len(b.s.Events)-1].Seq, Op: o.id, Token: o.token, Proc: operatorProc, At: now, Terminal: to.Terminal(),
		SolidSeen: b.solidSeen(to, now),
	})
	return o
}

// park is the holder's park for an operational reason: the lease given up
// (a release, and a park, in the world's records), the row not claimable
// for a while, the spell's reason on the row.
func (o *opb) park(why string) *opb {
	b := o.b
	now := b.tick(time.Second)
	r := ReleaseRecord{Op: o.id, Token: o.token, Proc: o.proc, At: now, After: 6 * time.Second, Claims: len(b.s.Claims), Park: true}
	if n := len(b.s.Events); n > 0 {
		r.Seq = b.s.Events[n-1].Seq // the store's newest event when it landed
	}
	b.s.Releases = append(b.s.Releases, r)
	b.s.Parks = append(b.s.Parks, r)
	row := o.row()
	row.Parks++
	row.ParkReason = why
	if row.ParkedSince.IsZero() {
		row.ParkedSince = now
	}
	row.NotBefore, row.UpdatedAt = now.Add(r.After), now
	return o
}

// release is the holder's release of its lease under token (its own, or
// one a later claim already replaced: then the store changes nothing),
// asking the row to wait after before it is claimed again.
func (o *opb) release(token sluice.FencingToken, after time.Duration) *opb {
	b := o.b
	now := b.tick(time.Second)
	r := ReleaseRecord{Op: o.id, Token: token, Proc: o.proc, At: now, After: after, Claims: len(b.s.Claims)}
	if n := len(b.s.Events); n > 0 {
		r.Seq = b.s.Events[n-1].Seq
	}
	b.s.Releases = append(b.s.Releases, r)
	if token == o.token {
		o.row().NotBefore = now.Add(after)
	}
	return o
}

// op is a handle on the clean run's op n, as its last holder left it.
func (b *builder) op(n int) *opb {
	id := opID(n)
	o := &opb{b: b, id: id, token: b.row(id).Token}
	for _, c := range b.s.Claims {
		if c.Op == id {
			o.proc = c.Proc
		}
	}
	return o
}

// envelope builds envelope number n at the current time.
func (o *opb) envelope(n int) sluice.Envelope {
	row := o.row()
	refBytes, refHash := o.b.solid(o.b.now).Ref()
	raw := tron.RawData{
		RefBlockBytes: refBytes,
		RefBlockHash:  refHash,
		Expiration:    o.b.head(o.b.now).Time.Add(window).UnixMilli(),
		Timestamp:     o.b.now.UnixMilli(),
		FeeLimit:      cmp.Or(o.fee, 30_000_000),
		Memo:          fmt.Appendf(nil, "sluice:%s:%d", o.id, n),
		Contract: tron.TriggerSmartContract{
			Owner:    hotWallet,
			Contract: tron.USDTContract,
			Data:     tron.EncodeTransfer(row.Request.To, uint64(row.Request.Amount)),
		},
	}
	return sluice.Envelope{Txid: raw.Txid(), Raw: raw}
}

// build goes validated -> signing with envelope 1, then signs.
func (o *opb) build() *opb {
	o.step(sluice.Validated, nil)
	at := o.b.now
	env := o.envelope(1)
	row := o.row()
	row.Envelope, row.Builds = env, 1
	o.step(sluice.Signing, func(e *sluice.Event) { e.Txid = env.Txid })
	o.built(at)
	o.b.s.Envelopes = append(o.b.s.Envelopes, env)
	return o.sign()
}

func (o *opb) sign() *opb {
	o.row().Envelope.Signature = []byte("sig")
	return o.step(sluice.Signed, nil)
}

func (o *opb) txid() tron.Txid { return o.row().Envelope.Txid }

// send records a broadcast of the current txid; accepted says whether the
// node took it into its pool.
func (o *opb) send(accepted bool) *opb {
	b := o.b
	now := b.tick(time.Second)
	w := mocknode.WireAttempt{
		Seq: len(b.s.Wire) + 1, Worker: o.proc, Txid: o.txid(), At: now, Head: b.head(now).Number,
		Reached: accepted, Accepted: accepted, Answer: string(tron.CodeSuccess), Truth: tron.CodeSuccess,
	}
	if !accepted {
		w.Fault, w.Fired, w.Answer, w.Truth = mocknode.LoseRequest, true, mocknode.AnswerTimeout, ""
	}
	b.s.Wire = append(b.s.Wire, w)
	if accepted {
		b.s.Accepted = append(b.s.Accepted, mocknode.Acceptance{Txid: o.txid(), Times: 1, First: now})
	}
	return o
}

// refuse records a broadcast of the current txid that the node processed
// and refused with code: nothing entered the pool.
func (o *opb) refuse(code tron.Code) *opb {
	b := o.b
	now := b.tick(time.Second)
	b.s.Wire = append(b.s.Wire, mocknode.WireAttempt{
		Seq: len(b.s.Wire) + 1, Worker: o.proc, Txid: o.txid(), At: now, Head: b.head(now).Number,
		Reached: true, Answer: string(code), Truth: code,
	})
	return o
}

// include lands the current txid in the next block with receipt; a SUCCESS
// carries the transfer the envelope asks for.
func (o *opb) include(receipt string) *opb {
	b := o.b
	blk := b.s.Blocks[b.head(b.now).Number+1]
	row := o.row()
	in := mocknode.Inclusion{Txid: o.txid(), BlockNumber: blk.Number, BlockTime: blk.Time, Receipt: receipt, Owner: hotWallet,
		FeeLimit: row.Envelope.Raw.FeeLimit}
	if receipt == tron.ReceiptSuccess {
		in.Transfer = tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: row.Request.To, Amount: uint64(row.Request.Amount)}
		in.TransferOK = true
		in.Moved = []tron.Transfer{in.Transfer}
	}
	b.s.Inclusions = append(b.s.Inclusions, in)
	b.tick(mocknode.SlotInterval * (solidLag + 2)) // wait for it to be solid
	return o
}

// evidence is what a worker observing now would file about the current txid.
func (o *opb) evidence() *sluice.Evidence {
	solid := o.b.solid(o.b.now)
	return &sluice.Evidence{
		Txid:        o.txid(),
		Expiration:  time.UnixMilli(o.row().Envelope.Raw.Expiration).UTC(),
		Margin:      margin,
		SolidNumber: solid.Number,
		SolidTime:   solid.Time,
		Lookup:      tron.Unknown,
		LookupSolid: solid.Number, // one node answered both reads
	}
}

// waitOutDeath moves the clock until solid chain time proves the current
// envelope dead.
func (o *opb) waitOutDeath() *opb {
	exp := time.UnixMilli(o.row().Envelope.Raw.Expiration).UTC()
	for o.b.solid(o.b.now).Time.Before(exp.Add(margin)) {
		o.b.tick(mocknode.SlotInterval)
	}
	return o
}

// receiptEvidence is what a worker observing now would file about the
// current txid, included with a failed receipt in a block now solid.
func (o *opb) receiptEvidence() *sluice.Evidence {
	ev := o.evidence()
	in := o.b.inclusion(o.txid())
	ev.Lookup, ev.Receipt, ev.BlockNumber, ev.SeenSolid = tron.Included, in.Receipt, in.BlockNumber, true
	return ev
}

// decide is the stuck policy's decision now, by the numbers a worker would
// see: waited since the first send, in solid chain time, and the rebuilds
// so far.
func (o *opb) decide(a sluice.Action, reason string) *sluice.Decision {
	row := o.row()
	return &sluice.Decision{Action: a, Reason: reason, Waited: o.b.solid(o.b.now).Time.Sub(row.FirstSentAt), Rebuilds: row.Builds - 1}
}

// rebuild retires the current txid with ev (nil for a never-sent envelope)
// and signs envelope n+1.
func (o *opb) rebuild(ev *sluice.Evidence) *opb {
	var d *sluice.Decision
	if ev != nil {
		d = o.decide(sluice.Rebuild, "txid proven dead")
	}
	return o.reenvelope(ev, d).sign()
}

// reenvelope retires the current txid with ev and d and stores envelope
// n+1, unsigned.
func (o *opb) reenvelope(ev *sluice.Evidence, d *sluice.Decision) *opb {
	row := o.row()
	old := row.Envelope.Txid
	at := o.b.now
	env := o.envelope(row.Builds + 1)
	row.Envelope = env
	row.Builds++
	o.step(sluice.Signing, func(e *sluice.Event) {
		e.Txid, e.RetiredTxid, e.Evidence, e.Decision = env.Txid, old, ev, d
	})
	o.built(at)
	o.b.s.Envelopes = append(o.b.s.Envelopes, env)
	return o
}

// built marks the write just recorded as storing a fresh envelope, built
// from the head the node answered at at (as the world records a build).
func (o *opb) built(at time.Time) {
	w := &o.b.s.Writes[len(o.b.s.Writes)-1]
	w.Built, w.BuiltHead, w.BuiltSolid = true, o.b.head(at).Time, o.b.solid(w.At).Number
	if o.floor > 0 {
		env := &o.row().Envelope
		w.FeeLimit, w.FeeFloor, w.FeeCeiling, w.Txid = env.Raw.FeeLimit, o.floor, o.ceil, env.Txid
	}
}

// broadcastAndConfirm is the happy tail: write-ahead, accepted send,
// inclusion with SUCCESS, confirmation.
func (o *opb) broadcastAndConfirm() *opb {
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil)
	return o.include(tron.ReceiptSuccess).step(sluice.Confirmed, nil)
}

// Operation numbers in the clean snapshot, each a different path.
const (
	opHappy        = 1  // confirmed at once; replayed (once with an upper-case id), refused a conflict, read
	opRebuilt      = 2  // first send lost, read mid-flight, taken over by w2, proof of death from broadcasting, rebuilt, confirmed
	opPolicyCancel = 3  // buildsMax envelopes, each accepted, dropped from the pool and proven dead from broadcast: the stuck policy's cancel
	opReverted     = 4  // on chain with REVERT: rebuilt on the receipt's proof, parked, retried by an operator, confirmed
	opRejected     = 5  // to the hot wallet itself: rejected
	opStale        = 6  // stale before its first send: rebuilt from signed without proof, confirmed
	opCrashed      = 7  // created by a client whose answer was lost; confirmed
	opUnfunded     = 8  // not in the clean run; see unfunded
	opReviewPaid   = 10 // SUCCESS with a fee taken on the way: review, resolved as paid by an operator
	opOpCancel     = 11 // first send refused for bandwidth: parked, proven dead, cancelled by an operator
)

// unfunded adds to the run client c10's request for opUnfunded from pauper,
// refused for want of funds: no row. (The clean run leaves it out, so that
// its counts stay those of the withdrawals it makes.)
func (b *builder) unfunded() {
	b.record("c10", payFor(string(opID(opUnfunded)), pauper, alice, 1_000_000), Unfunded, 0)
}

// feeOnTransfer makes in a SUCCESS whose contract took fee units to bob on
// the way: the recipient got the rest, and the node reported both movements.
func feeOnTransfer(in *mocknode.Inclusion, fee uint64) {
	in.Execution = mocknode.Execution{Fee: fee, FeeTo: bob}
	in.Transfer.Amount -= fee
	in.Moved = []tron.Transfer{
		{Contract: tron.USDTContract, From: hotWallet, To: bob, Amount: fee},
		in.Transfer,
	}
}

// clean is a run that keeps every invariant while exercising every path
// the checkers look at.
func clean(t *testing.T) *builder {
	t.Helper()
	b := newBuilder(t)

	o := b.create(opHappy, 1_500_000, "c1").claim().build().broadcastAndConfirm()
	b.record("c2", pay(string(o.id), alice, 1_500_000), Replayed, sluice.Confirmed)
	b.record("c3", pay(strings.ToUpper(string(o.id)), alice, 1_500_000), Replayed, sluice.Confirmed)
	b.record("c4", pay(string(o.id), bob, 1_500_000), Conflict, 0)
	b.read("r1", o.id)

	o = b.create(opRebuilt, 2_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).send(false)
	b.read("r2", o.id) // a prefix of the final log
	// w1 goes quiet; once its lease has run out, w2 takes over.
	o.waitOutDeath().claimBy("w2").rebuild(o.evidence()).broadcastAndConfirm()

	// The stuck policy: each txid proven dead is rebuilt until the
	// rebuilds are spent; the last one proven dead is cancelled, failed
	// with the hold released.
	o = b.create(opPolicyCancel, 3_000_000, "c1").claim().build()
	for {
		o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil)
		o.waitOutDeath().claim() // dropped from the pool; the lease ran out meanwhile
		if o.row().Builds == buildsMax {
			break
		}
		o.rebuild(o.evidence())
	}
	ev := o.evidence()
	d := o.decide(sluice.Cancel, fmt.Sprintf("rebuilt %d times, the policy allows %d; txid proven dead", buildsMax-1, buildsMax-1))
	o.step(sluice.Failed, func(e *sluice.Event) { e.RetiredTxid, e.Evidence, e.Decision = o.txid(), ev, d })
	o.row().Reason = "cancelled by the stuck policy: " + d.Reason

	// A failed receipt in a solid block proves its own death: rebuilt with
	// that proof, and parked (the shortage is ours). An operator retries
	// it at once, and w2 sends the new envelope, which pays.
	o = b.create(opReverted, 4_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptRevert)
	why := fmt.Sprintf("receipt %s in solid block #%d: no tokens moved", tron.ReceiptRevert, b.inclusion(o.txid()).BlockNumber)
	o.reenvelope(o.receiptEvidence(), o.decide(sluice.Rebuild, why)).park(why)
	o.resolve("alice", sluice.Signing, "the hot wallet has its USDT again", nil)
	o.claimBy("w2").sign().broadcastAndConfirm()

	o = b.createTo(opRejected, hotWallet, 5_000_000, "c1").claim()
	o.step(sluice.Rejected, nil)
	o.row().Reason = "recipient is the hot wallet"

	o = b.create(opStale, 6_000_000, "c1").claim().build()
	b.tick(window) // stale before its first send
	o.rebuild(nil).broadcastAndConfirm()

	o = b.insert(opCrashed, alice, 7_000_000)
	b.record("c5", pay(string(o.id), alice, 7_000_000), Failed, 0)
	b.record("c5", pay(string(o.id), alice, 7_000_000), Replayed, sluice.Requested)
	o.claim().build().broadcastAndConfirm()

	b.record("c6", pay("not-a-uuid", alice, 1_000_000), Invalid, 0)

	// The contract took a fee on the way: the logs are not exactly the
	// payment asked, so review; the recipient did get USDT from the hot
	// wallet, and an operator settles it as paid.
	o = b.create(opReviewPaid, 10_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptSuccess)
	feeOnTransfer(b.inclusion(o.txid()), 1_000)
	o.step(sluice.Review, nil)
	o.row().Reason = "receipt SUCCESS, but 2 USDT Transfer logs, want exactly one"
	o.resolve("alice", sluice.Confirmed, "the recipient confirmed receipt; the fee is ours", nil)

	// The node refuses the first send for bandwidth: parked, not failed.
	// Once the txid is provably dead, an operator cancels it with that
	// proof: failed, hold released.
	o = b.create(opOpCancel, 11_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).refuse(tron.CodeBandwidthError).park("first send refused by the node: " + string(tron.CodeBandwidthError))
	o.waitOutDeath()
	o.resolve("alice", sluice.Failed, "the customer withdrew the request", func(e *sluice.Event) { e.Evidence = o.evidence() })

	if b.now.After(t0.Add(budget)) {
		t.Fatalf("the clean run takes until %s, past the liveness budget", b.now)
	}
	return b
}

// corruption breaks one thing in a clean snapshot.
type corruption struct {
	name string
	// op is the operation the violation must be about ("" for none), and
	// mention a string its message must contain (the op's id if empty).
	op      sluice.OperationID
	mention string
	break_  func(b *builder)
	// also lists other invariants the corruption cannot help breaking.
	also []string
}

// wantCaught checks that check reports c as a violation of invariant about
// c.op, and that Check reports nothing outside invariant and c.also.
func wantCaught(t *testing.T, invariant string, check func(*Snapshot) []Violation, c corruption) {
	t.Helper()
	b := clean(t)
	c.break_(b)
	got := check(&b.s)
	mention := c.mention
	if mention == "" {
		mention = string(c.op)
	}
	found := false
	for _, v := range got {
		if v.Invariant != invariant {
			t.Errorf("checker for %s reported a %s violation: %s", invariant, v.Invariant, v.Message)
		}
		if v.Operation == c.op && strings.Contains(v.Message, mention) {
			found = true
		}
	}
	if !found {
		t.Errorf("want a %s violation about op %q mentioning %q, got %d:\n%s", invariant, c.op, mention, len(got), describe(got))
	}
	allowed := append([]string{invariant}, c.also...)
	var seen []string
	all := Check(&b.s)
	t.Logf("Check:\n%s", describe(all))
	for _, v := range all {
		if !slices.Contains(allowed, v.Invariant) {
			t.Errorf("Check also reported %s", v)
		}
		if !slices.Contains(seen, v.Invariant) {
			seen = append(seen, v.Invariant)
		}
	}
	for _, inv := range c.also {
		if !slices.Contains(seen, inv) {
			t.Errorf("want %s violated too (listed in also), it was not", inv)
		}
	}
}

func wantClean(t *testing.T, check func(*Snapshot) []Violation) {
	t.Helper()
	b := clean(t)
	if got := check(&b.s); len(got) != 0 {
		t.Errorf("clean snapshot: %d violations, want none:\n%s", len(got), describe(got))
	}
}

func describe(vs []Violation) string {
	var sb strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&sb, "  [%s] %s\n", v.Operation, v)
	}
	return sb.String()
}

func txidFor(s string) tron.Txid { return sha256.Sum256([]byte(s)) }
