package store

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"sluicesim/sluice"
)

// Goal: a gate judges a non-terminal row exactly as Operation.Claimable
// does. Method: every combination of NotBefore and LeaseUntil before, at,
// after and far from now (zero), held or not, each with a wall-clock-only
// time or with one carrying a monotonic reading (what time.Now gives a real
// store's clock), judged at a now of either kind, against every
// non-terminal state. A gate whose times are all wall-clock-only judges by
// one comparison (plain); the rest by Claimable's own two.
func TestGateMatchesClaimable(t *testing.T) {
	mono := time.Now()
	plain := mono.Round(0)
	if plain == mono {
		t.Fatal("time.Now carries no monotonic reading here; the test needs one")
	}
	var times []time.Time
	for _, at := range []time.Time{plain, mono} {
		times = append(times, at.Add(-time.Second), at, at.Add(time.Nanosecond), at.Add(time.Hour))
	}
	times = append(times, time.Time{})
	plains := 0
	for _, now := range []time.Time{plain, mono} {
		for _, s := range sluice.States {
			if s.Terminal() {
				continue
			}
			for _, nb := range times {
				for _, lu := range times {
					for _, by := range []sluice.WorkerID{"", "w1"} {
						row := sluice.Operation{State: s, NotBefore: nb, LeaseUntil: lu, ClaimedBy: by}
						g := gateOf(0, &row)
						// Wall clock and monotonic readings move together
						// here, so a gate wrongly taken as plain would judge
						// right all the same: which gates are is checked too.
						if want := nb == nb.Round(0) && (by == "" || lu == lu.Round(0)); g.plain != want {
							t.Errorf("notBefore=%v leaseUntil=%v by=%q: plain %v, want %v", nb, lu, by, g.plain, want)
						}
						if g.plain {
							plains++
						}
						if got, want := g.claimable(now), row.Claimable(now); got != want {
							t.Errorf("now %v: %s notBefore=%v leaseUntil=%v by=%q: gate (plain %v) says %v, Claimable %v",
								now, s, nb, lu, by, g.plain, got, want)
						}
					}
				}
			}
		}
	}
	if plains == 0 {
		t.Error("no gate was plain: the one-comparison path went untested")
	}
}

// Goal: the arena copies as bytes.Clone does (nil stays nil, empty stays
// empty and not nil) and no copy can write into its neighbour.
func TestArenaClone(t *testing.T) {
	sig, memo, data := []byte("sig"), []byte{}, []byte(nil)
	e := sluice.Envelope{Signature: sig}
	e.Raw.Memo, e.Raw.Contract.Data = memo, data
	c := copyEnvelope(e)
	if c.Raw.Contract.Data != nil {
		t.Errorf("nil Data copied to %#v, want nil", c.Raw.Contract.Data)
	}
	if c.Raw.Memo == nil || len(c.Raw.Memo) != 0 {
		t.Errorf("empty Memo copied to %#v, want empty and not nil", c.Raw.Memo)
	}
	if !bytes.Equal(c.Signature, sig) || &c.Signature[0] == &sig[0] {
		t.Errorf("Signature copied to %q (shared: %v)", c.Signature, &c.Signature[0] == &sig[0])
	}

	ops := []sluice.Operation{{}, {}}
	for i := range ops {
		ops[i].Envelope.Signature = []byte(fmt.Sprint("sig", i))
		ops[i].Envelope.Raw.Memo = []byte(fmt.Sprint("memo", i))
		ops[i].Envelope.Raw.Contract.Data = []byte(fmt.Sprint("data", i))
	}
	copyOperations(ops)
	_ = append(ops[0].Envelope.Signature, "XXXXXXXX"...)
	_ = append(ops[0].Envelope.Raw.Contract.Data, "XXXXXXXX"...)
	for i, op := range ops {
		e := op.Envelope
		if got, want := fmt.Sprintf("%s %s %s", e.Signature, e.Raw.Memo, e.Raw.Contract.Data), fmt.Sprintf("sig%d memo%d data%d", i, i, i); got != want {
			t.Errorf("ops[%d] after appending to ops[0]'s slices = %q, want %q", i, got, want)
		}
	}
}
