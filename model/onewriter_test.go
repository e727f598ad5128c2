package model

import (
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

func TestCheckOneWriterClean(t *testing.T) { wantClean(t, CheckOneWriter) }

// lastWriteUnder is the time of the last write to id under token.
func lastWriteUnder(b *builder, id sluice.OperationID, token sluice.FencingToken) time.Time {
	var at time.Time
	for _, w := range b.s.Writes {
		if w.Op == id && w.Token == token {
			at = w.At
		}
	}
	if at.IsZero() {
		b.t.Fatalf("no write to op %s under token %d", id, token)
	}
	return at
}

// Goal: every write that did not come from the incarnation holding the
// token, and every claim that took a live lease, is reported, naming the
// operation. Method: break one thing in a clean run. In the clean run w1
// claims opRebuilt (token 1), loses its send and goes quiet; w2 takes over
// with token 2 once w1's lease has run out.
func TestCheckOneWriterCatches(t *testing.T) {
	rebuilt := opID(opRebuilt)
	for _, c := range []corruption{
		{
			// w1 woke up as a zombie and wrote under w2's token.
			name: "write by an incarnation that did not claim the token", op: rebuilt, mention: "was written by w1, but token 2 was granted to w2",
			break_: func(b *builder) { b.write(b.event(rebuilt, sluice.Broadcast, sluice.Confirmed)).Proc = "w1" },
		},
		{
			name: "claim while the previous holder's lease is live", op: rebuilt, mention: "(token 2) while w1's lease (token 1) ran until",
			break_: func(b *builder) {
				b.claimRecord(rebuilt, 2).At = lastWriteUnder(b, rebuilt, 1).Add(lease - time.Second)
			},
		},
		{
			name: "event that no write the world saw appended", op: opID(opHappy), mention: "was written by no worker call the world saw",
			break_: func(b *builder) {
				seq := b.event(opID(opHappy), sluice.Signed, sluice.Broadcasting).Seq
				for i, w := range b.s.Writes {
					if w.Seq == seq {
						b.s.Writes = append(b.s.Writes[:i], b.s.Writes[i+1:]...)
						break
					}
				}
			},
		},
		{
			name: "write under a token no claim granted", op: opID(opHappy), mention: "under token 7, which no claim granted",
			break_: func(b *builder) { b.write(b.event(opID(opHappy), sluice.Signed, sluice.Broadcasting)).Token = 7 },
		},
		{
			name: "write the world saw go to another operation", op: opID(opHappy), mention: "'s write to op " + string(opID(opStale)),
			break_: func(b *builder) {
				b.write(b.event(opID(opHappy), sluice.Signed, sluice.Broadcasting)).Op = opID(opStale)
			},
		},
		{
			name: "one token granted twice", op: opID(opHappy), mention: "claimed twice with token 1",
			break_: func(b *builder) {
				b.s.Claims = append(b.s.Claims, ClaimRecord{Op: opID(opHappy), Token: 1, Proc: "w2", At: b.now})
			},
		},
		{
			name: "claim with a token not above the previous one", op: rebuilt, mention: "has token 1, not above token 2",
			break_: func(b *builder) {
				b.s.Claims = append(b.s.Claims, ClaimRecord{Op: rebuilt, Token: 1, Proc: "w3", At: b.now})
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, OneWriter, CheckOneWriter, c) })
	}
}

// Goal: an operator's resolution takes the row whatever lease is on it
// (the token moves, fencing the holder), so its claim over a live lease is
// clean; the same claim by a worker is still two writers at once. Method:
// in the clean run w1 parks opReverted (a release) and an operator retries
// it; without the release w1's lease is live at the operator's claim.
func TestCheckOneWriterOperatorClaimsOverALiveLease(t *testing.T) {
	id := opID(opReverted)
	// live drops w1's park of opReverted from the releases: its lease then
	// runs Lease past its last write, past the operator's claim.
	live := func(b *builder) *ClaimRecord {
		b.s.Releases = slices.DeleteFunc(b.s.Releases, func(r ReleaseRecord) bool { return r.Op == id && r.Token == 1 })
		c := b.claimRecord(id, 2)
		if !c.Operator || !c.At.Before(lastWriteUnder(b, id, 1).Add(lease)) {
			b.t.Fatalf("setup: claim %+v is not an operator's within w1's lease", *c)
		}
		return c
	}
	b := clean(t)
	live(b)
	if got := CheckOneWriter(&b.s); len(got) != 0 {
		t.Errorf("an operator's claim over a live lease: want clean, got:\n%s", describe(got))
	}
	wantCaught(t, OneWriter, CheckOneWriter, corruption{
		op: id, mention: "(token 2) while w1's lease (token 1) ran until",
		break_: func(b *builder) { live(b).Operator = false },
	})
}

// Goal: a lease ends at its last write plus Lease, exactly: a claim at that
// instant is allowed, one a nanosecond earlier is not. A release or a
// terminal write ends it at once.
func TestCheckOneWriterLeaseEnds(t *testing.T) {
	rebuilt := opID(opRebuilt)
	for _, c := range []struct {
		name   string
		edit   func(b *builder, leaseEnd time.Time) // leaseEnd: w1's lease on opRebuilt
		wantOK bool
	}{
		{"claim exactly at the lease's end", func(b *builder, end time.Time) {
			b.claimRecord(rebuilt, 2).At = end
		}, true},
		{"claim a nanosecond before the lease's end", func(b *builder, end time.Time) {
			b.claimRecord(rebuilt, 2).At = end.Add(-time.Nanosecond)
		}, false},
		{"claim after the holder released", func(b *builder, end time.Time) {
			released := end.Add(-20 * time.Second)
			b.s.Releases = append(b.s.Releases, ReleaseRecord{Op: rebuilt, Token: 1, Proc: "w1", At: released})
			b.claimRecord(rebuilt, 2).At = released
		}, true},
		{"claim before the holder released", func(b *builder, end time.Time) {
			released := end.Add(-20 * time.Second)
			b.s.Releases = append(b.s.Releases, ReleaseRecord{Op: rebuilt, Token: 1, Proc: "w1", At: released})
			b.claimRecord(rebuilt, 2).At = released.Add(-time.Nanosecond)
		}, false},
		{"a release of another token ends nothing", func(b *builder, end time.Time) {
			released := end.Add(-20 * time.Second)
			b.s.Releases = append(b.s.Releases, ReleaseRecord{Op: rebuilt, Token: 2, Proc: "w2", At: released})
			b.claimRecord(rebuilt, 2).At = released
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			c.edit(b, lastWriteUnder(b, rebuilt, 1).Add(lease))
			got := CheckOneWriter(&b.s)
			if ok := len(got) == 0; ok != c.wantOK {
				t.Errorf("CheckOneWriter: kept = %v, want %v:\n%s", ok, c.wantOK, describe(got))
			}
			for _, v := range got {
				if v.Operation != rebuilt {
					t.Errorf("violation about op %q, want %s: %s", v.Operation, rebuilt, v)
				}
			}
		})
	}
}

// Goal: a terminal write drops the lease at once: a claim right after it
// takes no live lease (the store would not offer a terminal row, but the
// checker judges leases, not rows).
// Goal: a claim comes no sooner than the wait the row's last park or
// release asked for, exactly (a claim at that instant is allowed, one a
// nanosecond earlier is not); an operator's retry frees the row at once;
// a release naming a lease already gone moves nothing.
func TestCheckOneWriterClaimAfterTheWait(t *testing.T) {
	refused := "first send refused by the node: " + string(tron.CodeBandwidthError)
	for _, c := range []struct {
		name   string
		then   func(o *opb) // after the park, before the claim
		early  time.Duration
		wantOK bool
	}{
		{"claim when the park's wait is over", func(*opb) {}, 0, true},
		{"claim a nanosecond before the park's wait is over", func(*opb) {}, time.Nanosecond, false},
		{"claim before a release's delay is over", func(o *opb) {
			o.claim().release(o.token, 30*time.Second)
		}, time.Second, false},
		{"claim right after an operator's retry", func(o *opb) {
			o.resolve("alice", sluice.Broadcasting, "node fixed", nil)
			o.row().NotBefore = o.b.now
		}, 0, true},
		{"a stale release's delay moves nothing", func(o *opb) {
			o.claim()
			held := o.token
			o.b.tick(lease) // w1's lease lapses, and w2 takes the row
			o.claimBy("w2")
			o.release(o.token, 0)      // w2 lets it go at once
			o.release(held, time.Hour) // and w1 wakes to let go of a lease it lost
		}, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			o := b.create(12, 1_000_000, "c12").claim().build()
			o.step(sluice.Broadcasting, nil)
			o.refuse(tron.CodeBandwidthError).park(refused)
			c.then(o)
			due := o.row().NotBefore
			if c.wantOK || c.early > 0 {
				b.now = due.Add(-c.early)
			}
			o.b.s.Claims = append(o.b.s.Claims, ClaimRecord{Op: o.id, Token: o.token + 1, Proc: "w3", At: b.now, First: true})
			wantOneWriterOn(t, b, opID(12), c.wantOK, "the wait its last park or release asked for had not passed")
		})
	}
}

func TestCheckOneWriterTerminalWriteEndsLease(t *testing.T) {
	b := clean(t)
	id := opID(opHappy)
	b.s.Claims = append(b.s.Claims, ClaimRecord{Op: id, Token: 2, Proc: "w2",
		At: b.event(id, sluice.Broadcast, sluice.Confirmed).At.Add(time.Nanosecond)})
	if got := CheckOneWriter(&b.s); len(got) != 0 {
		t.Errorf("claim right after a terminal write: %d violations, want none:\n%s", len(got), describe(got))
	}
}

// Goal: a world that did not watch the claim protocol (nil Claims) is not
// judged by it: one-writer has nothing to compare the log with.
func TestCheckOneWriterUnwatched(t *testing.T) {
	b := clean(t)
	b.s.Claims, b.s.Writes = nil, nil
	if got := CheckOneWriter(&b.s); len(got) != 0 {
		t.Errorf("unwatched run: %d violations, want none:\n%s", len(got), describe(got))
	}
}

// Goal: a worker's write refused as fenced needs a rival, a claim of the
// row made before the refusal with a token above the writer's; a holder
// whose token is still the row's was refused for writing from a state its
// own row was not in (blind bug 125: a park judged on the row as claimed,
// after the step had moved it). Method: in the clean run w1 claims
// opRebuilt with token 1 and w2 takes it over with token 2; refusals of
// w1's writes are placed before and after w2's claim, and one of w2's.
func TestCheckOneWriterFencedNeedsARival(t *testing.T) {
	rebuilt := opID(opRebuilt)
	// refuse records a refusal of a write under token, with claims the
	// number of claims the world had seen (those before it).
	refuse := func(b *builder, token sluice.FencingToken, claims int) {
		b.s.Fenced = append(b.s.Fenced, FencedRecord{Op: rebuilt, Token: token, Proc: "w" + string(rune('0'+token)),
			At: b.now, Call: "cas", From: sluice.Broadcast, Claims: claims})
	}
	// rival is the position of w2's claim of opRebuilt among the claims.
	rival := func(b *builder) int {
		c := b.claimRecord(rebuilt, 2)
		return slices.IndexFunc(b.s.Claims, func(x ClaimRecord) bool { return x == *c })
	}
	for _, c := range []struct {
		name  string
		edit  func(b *builder)
		fired bool
	}{
		{"w1 refused after w2's claim", func(b *builder) { refuse(b, 1, rival(b)+1) }, false},
		{"w1 refused at the end of the run", func(b *builder) { refuse(b, 1, len(b.s.Claims)) }, false},
		{"a token no claim granted", func(b *builder) { refuse(b, 9, len(b.s.Claims)) }, false},
		{"w1 refused before w2's claim", func(b *builder) { refuse(b, 1, rival(b)) }, true},
		{"w2, the last holder, refused", func(b *builder) { refuse(b, 2, len(b.s.Claims)) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			c.edit(b)
			got := CheckOneWriter(&b.s)
			if !c.fired {
				if len(got) != 0 {
					t.Errorf("want clean, got:\n%s", describe(got))
				}
				return
			}
			if len(got) != 1 || got[0].Operation != rebuilt || !strings.Contains(got[0].Message, "was refused as fenced, yet no claim had taken the row") {
				t.Errorf("want one violation about op %s's refusal, got:\n%s", rebuilt, describe(got))
			}
		})
	}
}

// handScript builds the records one-writer's hand-back clause reads from a
// script, each step "PROC ACT [OP,...]": claim (one batch of the listed
// operations, tokens counted per operation), release, park, final (a
// terminal write), write (any other), fenced, storefail, resolve (an
// operator's claim, PROC "op"); "+DUR" lets virtual time pass. A release,
// park or write is under the process's claim of the operation (a release
// by a process that never claimed it, under the row's latest token).
func handScript(t *testing.T, script string) *Snapshot {
	t.Helper()
	s := &Snapshot{Claims: []ClaimRecord{}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tokens := map[sluice.OperationID]sluice.FencingToken{}
	held := map[string]sluice.FencingToken{}
	eachStep(t, script, &at, func(step string, f []string) {
		if len(f) < 2 {
			t.Fatalf("script %q: step %q is not PROC ACT [OP,...]", script, step)
		}
		proc, act := f[0], f[1]
		var ops []sluice.OperationID
		if len(f) > 2 {
			for _, o := range strings.Split(f[2], ",") {
				ops = append(ops, sluice.OperationID(o))
			}
		}
		for i, op := range ops {
			switch act {
			case "claim", "resolve":
				tokens[op]++
				s.Claims = append(s.Claims, ClaimRecord{Op: op, Token: tokens[op], Proc: proc, At: at, Operator: act == "resolve", First: i == 0 && act == "claim"})
				held[proc+"/"+string(op)] = tokens[op]
			case "release", "park":
				token, ok := held[proc+"/"+string(op)]
				if !ok { // a process that never claimed it: under the row's token
					token = tokens[op]
				}
				r := ReleaseRecord{Op: op, Token: token, Proc: proc, At: at}
				s.Releases = append(s.Releases, r)
				if act == "park" {
					s.Parks = append(s.Parks, r)
				}
			case "final", "write":
				s.Writes = append(s.Writes, WriteRecord{Op: op, Token: held[proc+"/"+string(op)], Proc: proc, At: at, Terminal: act == "final"})
			default:
				t.Fatalf("script %q: unknown act %q", script, act)
			}
		}
		switch act {
		case "fenced":
			s.Fenced = append(s.Fenced, FencedRecord{Proc: proc, At: at, Call: "cas", Claims: len(s.Claims)})
		case "storefail":
			s.StoreFailures = append(s.StoreFailures, StoreFailure{Proc: proc, Call: "cas", At: at, Claims: len(s.Claims)})
		}
	})
	return s
}

// Goal: every row a worker claimed is handed back (released, parked or
// written into a terminal state under the claim's token by that worker)
// before the worker's next batch, unless a fence or a store failure of its
// own cut the batch short or another claim took the row meanwhile (blind
// bug 148: a step that moved the row and asked for a park went unparked,
// and the worker moved on with the row still leased to it).
func TestCheckOneWriterHandsBatchesBack(t *testing.T) {
	for _, c := range []struct {
		name, script string
		fired        string // the operation named; "" for clean
	}{
		{"released, parked, finished", "w1 claim a,b,c; w1 release a; w1 park b; w1 final c; w1 claim d", ""},
		{"one row kept", "w1 claim a,b; w1 release a; w1 write b; w1 claim d", "b"},
		{"kept, claimed again by itself", "w1 claim a; w1 write a; +30s; w1 claim a", "a"},
		{"the last batch is not judged", "w1 claim a; w1 write a", ""},
		{"a fence cut the batch short", "w1 claim a,b; w1 fenced; w1 claim d", ""},
		{"a store failure cut it short", "w1 claim a,b; w1 release a; w1 storefail; w1 claim d", ""},
		{"a claim whose answer was lost", "w1 claim a,b; w1 storefail; +30s; w1 claim d", ""},
		{"another's fence or failure does not excuse", "w1 claim a; w2 claim b; w2 fenced; w2 storefail; w1 claim d", "a"},
		{"a fence before the batch does not excuse", "w1 claim x; w1 fenced; w1 claim a; w1 claim d", "a"},
		{"taken over by another's claim", "w1 claim a; +30s; w2 claim a; w1 claim d", ""},
		{"an operator's resolution", "w1 claim a; op resolve a; w1 claim d", ""},
		{"a release under an earlier claim's token", "w1 claim a; w1 release a; w1 claim a; w1 claim d", "a"},
		{"another process's release", "w1 claim a; w2 release a; w1 claim d", "a"},
		{"another process's batch between is its own", "w1 claim a; w2 claim b; w2 release b; w1 release a; w1 claim d", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CheckOneWriter(handScript(t, c.script))
			if c.fired == "" {
				if len(got) != 0 {
					t.Errorf("want clean, got:\n%s", describe(got))
				}
				return
			}
			if len(got) != 1 || got[0].Invariant != OneWriter || got[0].Operation != sluice.OperationID(c.fired) ||
				!strings.Contains(got[0].Message, "without handing it back") {
				t.Errorf("want one one-writer violation about op %s kept, got:\n%s", c.fired, describe(got))
			}
		})
	}
}

// Goal: a claim call that took fewer rows than it asked for passed over no
// row the world's records say was due: created, not terminal, its wait
// over, no live lease (Lease past the claim and each write under it, ended
// by a release, a park, a terminal write or an operator's resolution).
func TestCheckOneWriterClaimsTakeDueRows(t *testing.T) {
	refused := "first send refused by the node: " + string(tron.CodeBandwidthError)
	leaseEnd := func(o *opb) time.Time { return lastWriteUnder(o.b, o.id, o.token).Add(lease) }
	for _, c := range []struct {
		name   string
		then   func(o *opb) // from broadcasting, w1 holding the row; ends with the call
		wantOK bool
	}{
		{"a lapsed lease passed over", func(o *opb) {
			o.b.now = leaseEnd(o)
			o.b.claimCall("w2", 8, 0)
		}, false},
		{"a live lease a nanosecond before it lapses", func(o *opb) {
			o.b.now = leaseEnd(o).Add(-time.Nanosecond)
			o.b.claimCall("w2", 8, 0)
		}, true},
		{"a write renewed the lease", func(o *opb) {
			end := leaseEnd(o)
			o.b.now = end.Add(-2 * time.Second)
			o.step(sluice.Broadcast, nil)
			o.b.now = end
			o.b.claimCall("w2", 8, 0)
		}, true},
		{"an operator's retry passed over", func(o *opb) {
			o.refuse(tron.CodeBandwidthError).park(refused)
			o.resolve("alice", sluice.Broadcasting, "node fixed", nil)
			o.b.claimCall("w2", 8, 0)
		}, false},
		{"a call that took as many as it asked for", func(o *opb) {
			o.b.now = leaseEnd(o)
			o.b.create(13, 1_000_000, "c13").claimBy("w2")
			o.b.claimCall("w2", 1, 1)
		}, true},
		{"the row taken by the call", func(o *opb) {
			o.b.now = leaseEnd(o)
			o.claimBy("w2")
			o.b.claimCall("w2", 8, 1)
		}, true},
		{"a stale release frees nothing", func(o *opb) {
			held := o.token
			o.b.now = leaseEnd(o)
			o.claimBy("w2")
			o.release(held, 0) // w1 wakes and lets go of a lease it lost
			o.b.claimCall("w3", 8, 0)
		}, true},
		{"let go before its lease lapsed, after a quiet call, passed over", func(o *opb) {
			o.b.claimCall("w2", 8, 0) // the lease is live: nothing due
			o.release(o.token, 0)     // a graceful stop: due at once
			o.b.tick(time.Second)
			o.b.claimCall("w2", 8, 0)
		}, false},
		{"let go with a wait not yet over", func(o *opb) {
			o.b.claimCall("w2", 8, 0)
			o.release(o.token, time.Minute)
			o.b.tick(time.Second)
			o.b.claimCall("w2", 8, 0)
		}, true},
		{"an operator's retry after a quiet call, passed over", func(o *opb) {
			o.refuse(tron.CodeBandwidthError).park(refused)
			o.b.claimCall("w2", 8, 0) // parked: nothing due
			o.resolve("alice", sluice.Broadcasting, "node fixed", nil)
			o.b.claimCall("w2", 8, 0)
		}, false},
		{"a terminal row is not due", func(o *opb) {
			o.step(sluice.Review, nil)
			o.b.now = leaseEnd(o)
			o.b.claimCall("w2", 8, 0)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			o := b.create(12, 1_000_000, "c12").claim().build()
			o.step(sluice.Broadcasting, nil)
			c.then(o)
			wantOneWriterOn(t, b, opID(12), c.wantOK, "passed it over")
		})
	}
}

// wantOneWriterOn checks one-writer on b's run for op id: clean when
// wantOK, else violations, each mentioning mention.
func wantOneWriterOn(t *testing.T, b *builder, id sluice.OperationID, wantOK bool, mention string) {
	t.Helper()
	var got []Violation
	for _, v := range CheckOneWriter(&b.s) {
		if v.Operation == id {
			got = append(got, v)
		}
	}
	if ok := len(got) == 0; ok != wantOK {
		t.Errorf("CheckOneWriter: kept = %v, want %v:\n%s", ok, wantOK, describe(got))
	}
	for _, v := range got {
		if !strings.Contains(v.Message, mention) {
			t.Errorf("unexpected violation: %s", v)
		}
	}
}
