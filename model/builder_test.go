package model

// Hand-built snapshots. A builder keeps the pieces of a run consistent the way
// the store and the mock node would: every transition writes a row and an
// event, every send a wire attempt, every acceptance an Acceptance, every
// inclusion lands in a block of a chain that covers the whole run. Tests take
// the clean snapshot and break exactly one thing in it.

import (
	"crypto/sha256"
	"encoding/hex"
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
	margin   = 30 * time.Second // safety margin
	runEnd   = 40 * time.Minute // the run ends this long after t0
	budget   = 30 * time.Minute // liveness budget after t0
)

type builder struct {
	t   *testing.T
	s   Snapshot
	now time.Time // the store's clock, also the node's
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
	return b
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

func opID(n int) sluice.OperationID {
	// Hex letters in the id, so that its upper-case spelling differs.
	return sluice.OperationID(fmt.Sprintf("abcdef00-0000-4000-8000-%012d", n))
}

// hashOf stands in for intake's request hash: any stable digest will do.
func hashOf(id sluice.OperationID, to tron.Address, amount uint64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%d", id, to, amount))
	return hex.EncodeToString(h[:])
}

// opb builds one operation.
type opb struct {
	b     *builder
	id    sluice.OperationID
	token sluice.FencingToken
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
	o := b.insert(n, alice, amount)
	b.record(client, string(o.id), hashOf(o.id, alice, amount), Created, sluice.Requested)
	return o
}

// insert is the store's Insert without any intake record.
func (b *builder) insert(n int, to tron.Address, amount uint64) *opb {
	id := opID(n)
	now := b.tick(time.Second)
	b.s.Operations = append(b.s.Operations, sluice.Operation{
		ID:          id,
		Request:     sluice.Request{To: to, Amount: money.Amount(amount), Asset: sluice.Asset},
		RequestHash: hashOf(id, to, amount),
		State:       sluice.Requested,
		NotBefore:   now,
		CreatedAt:   now,
		UpdatedAt:   now,
	})
	b.appendEvent(sluice.Event{OperationID: id, From: sluice.None, To: sluice.Requested, At: now, Note: "created"})
	return &opb{b: b, id: id}
}

// record appends an intake record whose call and return are the next two
// step indexes.
func (b *builder) record(client, id, hash string, out Outcome, state sluice.State) {
	step := int64(len(b.s.Intake)) * 2
	r := IntakeRecord{Client: client, ID: id, RequestHash: hash, Outcome: out, Call: step + 1, Return: step + 2}
	if out == Created || out == Replayed {
		r.Returned = hash
		r.State = state
	}
	b.s.Intake = append(b.s.Intake, r)
}

func (b *builder) appendEvent(e sluice.Event) {
	e.Seq = int64(len(b.s.Events)) + 1
	b.s.Events = append(b.s.Events, e)
}

// claim is a new lease: the next token.
func (o *opb) claim() *opb {
	o.token++
	o.row().Token = o.token
	return o
}

// step writes a transition as the store's CAS would, with extra fields
// set on the event by edit.
func (o *opb) step(to sluice.State, edit func(*sluice.Event)) *opb {
	row := o.row()
	now := o.b.tick(time.Second)
	e := sluice.Event{OperationID: o.id, From: row.State, To: to, Token: o.token, Worker: "w1", At: now, Txid: row.Envelope.Txid}
	if edit != nil {
		edit(&e)
	}
	row.State, row.UpdatedAt = to, now
	o.b.appendEvent(e)
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
		FeeLimit:      30_000_000,
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
	env := o.envelope(1)
	row := o.row()
	row.Envelope, row.Builds = env, 1
	o.step(sluice.Signing, func(e *sluice.Event) { e.Txid = env.Txid })
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
		Seq: len(b.s.Wire) + 1, Worker: "w1", Txid: o.txid(), At: now, Head: b.head(now).Number,
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

// include lands the current txid in the next block with receipt; a SUCCESS
// carries the transfer the envelope asks for.
func (o *opb) include(receipt string) *opb {
	b := o.b
	blk := b.s.Blocks[b.head(b.now).Number+1]
	row := o.row()
	in := mocknode.Inclusion{Txid: o.txid(), BlockNumber: blk.Number, BlockTime: blk.Time, Receipt: receipt, Owner: hotWallet}
	if receipt == tron.ReceiptSuccess {
		in.Transfer = tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: row.Request.To, Amount: uint64(row.Request.Amount)}
		in.TransferOK = true
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

// rebuild retires the current txid with ev (nil for a never-sent envelope)
// and signs envelope n+1.
func (o *opb) rebuild(ev *sluice.Evidence) *opb {
	row := o.row()
	old := row.Envelope.Txid
	env := o.envelope(row.Builds + 1)
	row.Envelope = env
	row.Builds++
	o.step(sluice.Signing, func(e *sluice.Event) {
		e.Txid, e.RetiredTxid, e.Evidence = env.Txid, old, ev
	})
	return o.sign()
}

// broadcastAndConfirm is the happy tail: write-ahead, accepted send,
// inclusion with SUCCESS, confirmation.
func (o *opb) broadcastAndConfirm() *opb {
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil)
	return o.include(tron.ReceiptSuccess).step(sluice.Confirmed, nil)
}

// Operation numbers in the clean snapshot, each a different path.
const (
	opHappy    = 1 // confirmed at once; replayed (once with an upper-case id) and refused a conflict
	opRebuilt  = 2 // first send lost, proof of death from broadcasting, rebuilt, confirmed
	opGaveUp   = 3 // accepted, dropped from the pool, proof of death from broadcast with no builds left: failed
	opReverted = 4 // on chain with REVERT: failed
	opRejected = 5 // failed validation: rejected
	opStale    = 6 // stale before its first send: rebuilt from signed without proof, confirmed
	opCrashed  = 7 // created by a client whose answer was lost; confirmed
)

// clean is a run that keeps every invariant while exercising every path
// the checkers look at.
func clean(t *testing.T) *builder {
	t.Helper()
	b := newBuilder(t)

	o := b.create(opHappy, 1_500_000, "c1").claim().build().broadcastAndConfirm()
	b.record("c2", string(o.id), hashOf(o.id, alice, 1_500_000), Replayed, sluice.Confirmed)
	b.record("c3", strings.ToUpper(string(o.id)), hashOf(o.id, alice, 1_500_000), Replayed, sluice.Confirmed)
	b.record("c4", string(o.id), hashOf(o.id, bob, 1_500_000), Conflict, 0)

	o = b.create(opRebuilt, 2_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).send(false)
	o.claim().waitOutDeath().rebuild(o.evidence()).broadcastAndConfirm()

	o = b.create(opGaveUp, 3_000_000, "c1").claim().build()
	o.row().Builds = 5 // no builds left
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil)
	o.claim().waitOutDeath()
	ev := o.evidence()
	o.step(sluice.Failed, func(e *sluice.Event) { e.RetiredTxid, e.Evidence = o.txid(), ev })
	o.row().Reason = "gave up after 5 builds (proof of death after acceptance)"

	o = b.create(opReverted, 4_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptRevert)
	o.step(sluice.Failed, nil)

	o = b.create(opRejected, 5_000_000, "c1").claim()
	o.row().Request.Asset = "DOGE" // what validation caught
	o.step(sluice.Rejected, nil)

	o = b.create(opStale, 6_000_000, "c1").claim().build()
	b.tick(window) // stale before its first send
	o.rebuild(nil).broadcastAndConfirm()

	o = b.insert(opCrashed, alice, 7_000_000)
	b.record("c5", string(o.id), hashOf(o.id, alice, 7_000_000), Failed, 0)
	b.record("c5", string(o.id), hashOf(o.id, alice, 7_000_000), Replayed, sluice.Requested)
	o.claim().build().broadcastAndConfirm()

	b.record("c6", "not-a-uuid", "", Invalid, 0)

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

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }
