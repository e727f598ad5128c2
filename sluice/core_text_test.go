package sluice

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Goal: every text built by appending (core_text.go) is byte for byte what
// the fmt.Sprintf it replaced wrote. Method: random and edge values through
// both.
func TestTextsMatchFmt(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 6))
	ints := []int64{0, 1, -1, 9, 10, 99, 100, 255, 256, 1 << 31, math.MaxInt64, math.MinInt64}
	durs := []time.Duration{0, 1, 999, time.Microsecond, 1500 * time.Microsecond, time.Second, 30 * time.Second,
		time.Minute + 500*time.Millisecond, 2 * time.Hour, -time.Second, math.MaxInt64, math.MinInt64}
	times := []time.Time{{}, time.Unix(0, 0), time.UnixMilli(1_700_000_000_123), time.Date(2026, 12, 2, 5, 0, 0, 1, time.FixedZone("x", 3600))}
	for range 2000 {
		ints = append(ints, r.Int64N(1<<40)-1<<39)
		durs = append(durs, time.Duration(r.Int64N(1<<45)-1<<44))
		times = append(times, time.UnixMilli(r.Int64N(4_000_000_000_000)), time.Unix(r.Int64N(1<<33), r.Int64N(1e9)))
	}
	txid := func() tron.Txid {
		var x tron.Txid
		for i := range x {
			x[i] = byte(r.Uint32())
		}
		return x
	}
	check := func(got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
	}
	for i := range 2000 {
		a, b := ints[r.IntN(len(ints))], ints[r.IntN(len(ints))]
		x, y := txid(), txid()
		if i == 0 {
			x = tron.Txid{}
		}
		check(confirmedNote(x, a), fmt.Sprintf("confirmed txid=%s in solid block #%d", x.Short(), a))
		check(includedWhy(a, b), fmt.Sprintf("included in #%d, solid head #%d", a, b))
		ms := r.Int64N(4_000_000_000_000)
		check(builtNote(x, ms), fmt.Sprintf("built txid=%s expiration=%s", x.Short(), msTime(ms).Format(time.RFC3339)))
		n := int(a % 1000)
		check(rebuildNote(n, "proof of death", x, y), fmt.Sprintf("rebuild #%d: %s; retired %s, new txid=%s", n, "proof of death", x.Short(), y.Short()))
		check(txidNote("signed txid=", x), "signed txid="+x.Short())
		check(string(appendMemo(nil, OperationID(fmt.Sprint(a)), n)), fmt.Sprintf("sluice:%s:%d", OperationID(fmt.Sprint(a)), n))
		d := durs[r.IntN(len(durs))]
		check(string(appendDuration(nil, d)), d.String())
		for _, lookup := range []tron.Status{tron.Unknown, tron.Pending, tron.Included, tron.Status(9)} {
			e := Evidence{Txid: x, Expiration: times[r.IntN(len(times))], Margin: d, SolidNumber: a,
				SolidTime: times[r.IntN(len(times))], Lookup: lookup, LookupSolid: b,
				Receipt: []string{"", tron.ReceiptRevert, tron.ReceiptOutOfEnergy}[r.IntN(3)], BlockNumber: ints[r.IntN(len(ints))], SeenSolid: r.IntN(2) == 0}
			check(e.String(), evidenceSprintf(e))
		}
	}
	want := map[notePrefix]string{
		acceptedPrefix:          "accepted: ",
		resentAcceptedPrefix:    "re-sent, accepted: ",
		firstSendRejectedPrefix: "first send rejected: ",
		firstSendRefusedPrefix:  "first send refused by the node: ",
		firstSendNotTakenPrefix: "first send not taken: ",
		firstSendUnclearPrefix:  "first send unclear: ",
		resendNotTakenPrefix:    "re-send not taken: ",
		resendRefusedPrefix:     "re-send refused by the node: ",
		resentPrefix:            "re-sent: ",
	}
	if len(want) != len(notePrefixes) {
		t.Fatalf("%d prefixes, the test knows %d", len(notePrefixes), len(want))
	}
	for p, prefix := range want {
		for _, c := range append(knownCodes[:], "", "NEW_CODE", "success") {
			check(codeNote(p, c), prefix+string(c))
		}
	}
	for _, s := range []tron.Status{tron.Unknown, tron.Pending, tron.Included, tron.Status(7)} {
		check(reconciledNote(s), "reconciled: txid "+s.String())
	}
}

// evidenceSprintf is Evidence.String as it was written with fmt.
func evidenceSprintf(e Evidence) string {
	if e.Lookup == tron.Included {
		s := fmt.Sprintf("txid=%s included in #%d with receipt %s, solid=#%d",
			e.Txid.Short(), e.BlockNumber, e.Receipt, e.SolidNumber)
		if !e.SeenSolid {
			s += ", not solid where seen"
		}
		return s
	}
	return fmt.Sprintf("txid=%s expiration=%s margin=%s solid=#%d@%s lookup=%s (node solid #%d)",
		e.Txid.Short(), e.Expiration.UTC().Format(time.RFC3339Nano), e.Margin,
		e.SolidNumber, e.SolidTime.UTC().Format(time.RFC3339Nano), e.Lookup, e.LookupSolid)
}

// Goal: the notes the pipeline writes on every operation allocate at most
// their result.
func TestTextsAllocateOnce(t *testing.T) {
	var x tron.Txid
	e := Evidence{Txid: x, Expiration: time.UnixMilli(1_700_000_000_123), Margin: 30 * time.Second, SolidTime: time.UnixMilli(1_700_000_000_000)}
	for name, f := range map[string]func(){
		"confirmed": func() { _ = confirmedNote(x, 123456) },
		"built":     func() { _ = builtNote(x, 1_700_000_000_000) },
		"included":  func() { _ = includedWhy(123456, 123450) },
		"evidence":  func() { _ = e.String() },
		"accepted":  func() { _ = codeNote(acceptedPrefix, tron.CodeSuccess) },
	} {
		want := 1.0
		if name == "accepted" {
			want = 0
		}
		if n := testing.AllocsPerRun(100, f); n > want {
			t.Errorf("%s: %v allocations, want at most %v", name, n, want)
		}
	}
}

// Goal: the lazily formatted cas error reads as the fmt.Errorf it replaced
// and unwraps to the store's error.
func TestCasErrorMatchesFmt(t *testing.T) {
	inner := fmt.Errorf("cas x: %w", ErrFenced)
	for _, id := range []OperationID{"", "0b0e4c1e-8f7a-4a55-9d8f-2a8f5d5a6f01", "odd %d id"} {
		for _, tok := range []FencingToken{0, 7, math.MaxUint64} {
			for from := None; from <= Review+2; from++ {
				e := &casError{id: id, from: from, to: Review, token: tok, err: inner}
				want := fmt.Errorf("%s %s->%s token=%d: %w", id, from, Review, tok, inner)
				if e.Error() != want.Error() {
					t.Fatalf("got %q, want %q", e.Error(), want.Error())
				}
				if !errors.Is(e, ErrFenced) || errors.Unwrap(e) != inner {
					t.Fatal("casError does not unwrap to the store's error")
				}
			}
		}
	}
}
