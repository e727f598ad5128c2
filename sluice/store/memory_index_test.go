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
// after and far from now (zero), held or not, with wall-clock-only times
// and with times carrying a monotonic reading (what time.Now gives a real
// store's clock), against every non-terminal state.
func TestGateMatchesClaimable(t *testing.T) {
	for _, mono := range []bool{false, true} {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if mono {
			now = time.Now()
		}
		times := []time.Time{{}, now.Add(-time.Second), now, now.Add(time.Nanosecond), now.Add(time.Hour)}
		for _, s := range sluice.States {
			if s.Terminal() {
				continue
			}
			for _, nb := range times {
				for _, lu := range times {
					for _, by := range []sluice.WorkerID{"", "w1"} {
						row := sluice.Operation{State: s, NotBefore: nb, LeaseUntil: lu, ClaimedBy: by}
						g := gateOf(0, &row)
						if got, want := g.claimable(now), row.Claimable(now); got != want {
							t.Errorf("mono=%v %s notBefore=%v leaseUntil=%v by=%q: gate says %v, Claimable %v",
								mono, s, nb, lu, by, got, want)
						}
					}
				}
			}
		}
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
