package model

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"sluicesim/sluice"
)

// Goal: the porcupine model accepts exactly the intake histories that some
// sequential order explains. Times are a logical clock: [call, return].
// Payloads p1 and p2 are two instructions under one id; bad is invalid.
func TestCheckLinearizable(t *testing.T) {
	const id = "11111111-1111-4111-8111-111111111111"
	p1 := pay(id, alice, 1_000_000)
	p2 := pay(id, alice, 2_000_000)
	bad := pay(id, alice, 0)
	// p1 from another customer's balance: another instruction.
	q1 := payFor(id, pauper, alice, 1_000_000)
	badCustomer := payFor(id, "cust a", alice, 1_000_000)
	none := Payload{}
	post := func(client string, sent Payload, out Outcome, answer Payload, call, ret int64) IntakeRecord {
		return IntakeRecord{Client: client, ID: id, Sent: sent, Outcome: out, Answer: answer, Call: call, Return: ret}
	}
	// upper is r sent with the id in upper case: the same operation.
	upper := func(r IntakeRecord) IntakeRecord {
		r.ID = strings.ToUpper(r.ID)
		r.Sent.ID = r.ID
		return r
	}
	// A present read shows the operation's log, which is its creation.
	created := sluice.Event{Seq: 1, OperationID: id, From: sluice.None, To: sluice.Requested, At: t0}
	read := func(client string, present bool, answer Payload, call, ret int64) ReadRecord {
		r := ReadRecord{Client: client, ID: id, Present: present, Answer: answer, Call: call, Return: ret}
		if present {
			r.State, r.History = sluice.Requested, []HistoryEntry{historyEntry(created)}
		}
		return r
	}
	tests := []struct {
		name   string
		posts  []IntakeRecord
		reads  []ReadRecord
		wantOK bool
	}{
		{"create, replay, conflict in order", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), post("b", p1, Replayed, p1, 3, 4), post("c", p2, Conflict, none, 5, 6),
		}, nil, true},
		{"two concurrent identical posts: one created, one replayed", []IntakeRecord{
			post("a", p1, Created, p1, 1, 4), post("b", p1, Replayed, p1, 2, 3),
		}, nil, true},
		{"two concurrent identical posts both created", []IntakeRecord{
			post("a", p1, Created, p1, 1, 4), post("b", p1, Created, p1, 2, 3),
		}, nil, false},
		{"two payloads both created", []IntakeRecord{
			post("a", p1, Created, p1, 1, 4), post("b", p2, Created, p2, 2, 3),
		}, nil, false},
		{"replay that returned another payload", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), post("b", p1, Replayed, p2, 3, 4),
		}, nil, false},
		{"conflict with nothing there", []IntakeRecord{
			post("c", p2, Conflict, none, 1, 2), post("a", p1, Created, p1, 3, 4),
		}, nil, false},
		{"a read after created must see the row", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2),
		}, []ReadRecord{read("r", false, none, 3, 4)}, false},
		{"a read overlapping the create may miss it", []IntakeRecord{
			post("a", p1, Created, p1, 1, 4),
		}, []ReadRecord{read("r", false, none, 2, 3)}, true},
		{"a read that sees the row before anyone posted", []IntakeRecord{
			post("a", p1, Created, p1, 3, 4),
		}, []ReadRecord{read("r", true, p1, 1, 2)}, false},
		{"a read that sees another payload", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2),
		}, []ReadRecord{read("r", true, p2, 3, 4)}, false},
		{"a lost answer that took effect", []IntakeRecord{
			post("a", p1, Failed, none, 1, 0), post("a", p1, Replayed, p1, 5, 6),
		}, []ReadRecord{read("r", true, p1, 3, 4)}, true},
		{"a lost answer that did not take effect", []IntakeRecord{
			post("a", p1, Failed, none, 1, 0), post("b", p2, Created, p2, 3, 4),
		}, nil, true},
		{"invalid posts change nothing", []IntakeRecord{
			post("x", bad, Invalid, none, 1, 2), post("a", p1, Created, p1, 3, 4),
		}, []ReadRecord{read("r", false, none, 2, 3)}, true},
		{"a replay under the id in upper case", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), upper(post("b", p1, Replayed, p1, 3, 4)),
		}, nil, true},
		{"a conflict for the stored instruction under the id in upper case", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), upper(post("b", p1, Conflict, none, 3, 4)),
		}, nil, false},
		{"the same amount spelt otherwise is the same instruction", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), post("b", Payload{ID: id, Customer: p1.Customer, To: p1.To, Amount: "1.000000", Asset: p1.Asset}, Replayed, p1, 3, 4),
		}, nil, true},
		{"a valid payload called invalid", []IntakeRecord{
			post("x", p1, Invalid, none, 1, 2),
		}, nil, false},
		{"another customer under a used id is a conflict", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), post("b", q1, Conflict, none, 3, 4),
		}, nil, true},
		{"another customer under a used id replayed", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), post("b", q1, Replayed, p1, 3, 4),
		}, nil, false},
		{"unfunded, nothing stored", []IntakeRecord{
			post("a", q1, Unfunded, none, 1, 2),
		}, []ReadRecord{read("r", false, none, 3, 4)}, true},
		{"unfunded, then created once funded", []IntakeRecord{
			post("a", q1, Unfunded, none, 1, 2), post("a", q1, Created, q1, 3, 4),
		}, nil, true},
		{"unfunded, and a read saw a row created by nobody", []IntakeRecord{
			post("a", q1, Unfunded, none, 1, 2),
		}, []ReadRecord{read("r", true, q1, 3, 4)}, false},
		{"unfunded while a create overlaps it", []IntakeRecord{
			post("a", p1, Created, p1, 1, 4), post("b", p1, Unfunded, none, 2, 3),
		}, nil, true},
		{"unfunded after the row exists: a replay must return it", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), post("b", p1, Unfunded, none, 3, 4),
		}, nil, false},
		{"unfunded after another payload's row exists: that is a conflict", []IntakeRecord{
			post("a", p1, Created, p1, 1, 2), post("b", q1, Unfunded, none, 3, 4),
		}, nil, false},
		{"unfunded after a lost answer that may have created the row", []IntakeRecord{
			post("a", p1, Failed, none, 1, 0), post("b", p1, Unfunded, none, 3, 4),
		}, nil, true},
		{"unfunded after a lost answer, then a read shows the row", []IntakeRecord{
			post("a", p1, Failed, none, 1, 0), post("b", p1, Unfunded, none, 3, 4),
		}, []ReadRecord{read("r", true, p1, 5, 6)}, true},
		{"unfunded, a read shows the row, and unfunded again", []IntakeRecord{
			post("a", p1, Failed, none, 1, 0), post("b", p1, Unfunded, none, 7, 8),
		}, []ReadRecord{read("r", true, p1, 5, 6)}, false},
		{"an invalid customer told unfunded", []IntakeRecord{
			post("x", badCustomer, Unfunded, none, 1, 2),
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Snapshot{Intake: tt.posts, Reads: tt.reads, Events: []sluice.Event{created}}
			vs, rep := CheckLinearizable(s, 10*time.Second)
			if ok := len(vs) == 0; ok != tt.wantOK {
				t.Fatalf("linearizable = %v (%v), want %v", ok, vs, tt.wantOK)
			}
			if !tt.wantOK {
				if vs[0].Invariant != LinearizableIntake || vs[0].Operation != id || !strings.Contains(vs[0].Message, "POST") {
					t.Errorf("violation = %+v, want one naming %s and its history", vs[0], id)
				}
				var b bytes.Buffer
				if err := rep.Visualize(&b); err != nil || !bytes.Contains(b.Bytes(), []byte("<html")) {
					t.Errorf("visualization: %v, %d bytes", err, b.Len())
				}
			}
			if rep.Operations != len(tt.posts)+len(tt.reads) {
				t.Errorf("report counts %d operations, want %d", rep.Operations, len(tt.posts)+len(tt.reads))
			}
		})
	}
}

// Goal: histories on different ids are independent: one id's violation is
// found among many clean ones, and named.
func TestCheckLinearizablePartitions(t *testing.T) {
	var posts []IntakeRecord
	for i := range 50 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012x", 0xabc00+i)
		p := pay(id, alice, 1_000_000)
		posts = append(posts, IntakeRecord{Client: "c", ID: id, Sent: p, Outcome: Created, Answer: p, Call: int64(2 * i), Return: int64(2*i + 1)})
	}
	if vs, _ := CheckLinearizable(&Snapshot{Intake: posts}, 10*time.Second); len(vs) != 0 {
		t.Fatalf("clean history: %v", vs)
	}
	bad := posts[17]
	bad.Client, bad.Call, bad.Return = "d", 1000, 1001
	posts = append(posts, bad) // created twice, sequentially
	vs, _ := CheckLinearizable(&Snapshot{Intake: posts}, 10*time.Second)
	if len(vs) != 1 || string(vs[0].Operation) != bad.ID {
		t.Errorf("violations = %v, want one naming %s", vs, bad.ID)
	}
}

// Goal: an unknown result (the check ran out of time) is a violation, never
// a pass.
func TestUnknownIsNotAPass(t *testing.T) {
	vs := verdict(porcupine.Unknown, linModel.ToModel(), nil, time.Second)
	if len(vs) != 1 || vs[0].Invariant != LinearizableIntake || !strings.Contains(vs[0].Message, "unknown, not a pass") {
		t.Errorf("unknown result gave violations %v, want one saying it is not a pass", vs)
	}
	if vs := verdict(porcupine.Ok, linModel.ToModel(), nil, time.Second); len(vs) != 0 {
		t.Errorf("ok result gave violations %v", vs)
	}
}

// Goal: what a GET shows beyond the payload (its state and history) is the
// operation's own log as it stood at one instant within the read. Method:
// break one read in a clean run. r1 read opHappy after it confirmed (7
// events); r2 read opRebuilt mid-flight, when its log held 5 events
// (creation to broadcasting).
func TestCheckReadHistoriesCatches(t *testing.T) {
	check := func(s *Snapshot) []Violation { vs, _ := CheckLinearizable(s, 10*time.Second); return vs }
	happy, rebuilt := opID(opHappy), opID(opRebuilt)
	historyOf := func(b *builder, id sluice.OperationID) []HistoryEntry {
		var h []HistoryEntry
		for _, e := range b.events(id) {
			h = append(h, historyEntry(*e))
		}
		return h
	}
	for _, c := range []corruption{
		{
			// opCrashed took the same path as opHappy: same states, other
			// times and txids.
			name: "history of another operation", op: happy, mention: "history entry 1 is none->requested at",
			break_: func(b *builder) { b.readOf("r1").History = historyOf(b, opID(opCrashed)) },
		},
		{
			name: "history that saw the future", op: rebuilt, mention: "the history has 6 entries, but the log held 5 at the call and 5 at the return",
			break_: func(b *builder) {
				r := b.readOf("r2")
				r.History = historyOf(b, rebuilt)[:6]
				r.State = sluice.Signing
			},
		},
		{
			name: "history older than the call", op: rebuilt, mention: "the history has 4 entries, but the log held 5 at the call",
			break_: func(b *builder) {
				r := b.readOf("r2")
				r.History = r.History[:4]
				r.State = sluice.Signed
			},
		},
		{
			name: "state that is not the history's last", op: rebuilt, mention: "the state shown is broadcast, but the history shown ends in broadcasting",
			break_: func(b *builder) { b.readOf("r2").State = sluice.Broadcast },
		},
		{
			name: "history longer than the log ever was", op: happy, mention: "the history has 8 entries, but the operation's log never held more than 7",
			break_: func(b *builder) {
				r := b.readOf("r1")
				r.History = append(r.History, r.History[len(r.History)-1])
				r.LogAtReturn = 8
			},
		},
		{
			name: "empty history", op: happy, mention: "the history is empty",
			break_: func(b *builder) { b.readOf("r1").History = nil },
		},
		{
			// A rebuild between intake's two reads (the row, then the log)
			// cut at the row's state alone: a history at the new txid, the
			// answer naming the old one.
			name: "answer naming a txid the history's instant does not have", op: rebuilt, mention: "the answer names txid",
			break_: func(b *builder) { b.readOf("r2").Txid = txidFor("other").String() },
		},
		{
			name: "answer naming no txid where the history has one", op: happy, mention: "the answer names txid",
			break_: func(b *builder) { b.readOf("r1").Txid = "" },
		},
		{
			name: "entry with another txid", op: happy, mention: "history entry 3 is",
			break_: func(b *builder) { b.readOf("r1").History[2].Txid = txidFor("other").String() },
		},
		{
			name: "answer about another operation", op: happy, mention: "the answer is about op " + string(opID(opCrashed)),
			break_: func(b *builder) { b.readOf("r1").Answer.ID = string(opID(opCrashed)) },
		},
		{
			// Porcupine sees it too: the read returned a payload no post
			// stored.
			name: "answer showing another recipient", op: happy, mention: "the answer shows 1500000 units of " + sluice.Asset + " to " + bob.String(),
			break_: func(b *builder) { b.readOf("r1").Answer.To = bob.String() },
		},
		{
			name: "read of a held operation that failed with a 500", op: happy, mention: "answered 500 with no store failure to blame",
			break_: func(b *builder) {
				r := b.readOf("r1")
				r.Status, r.Present, r.Answer, r.State, r.History = 500, false, Payload{}, sluice.None, nil
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, LinearizableIntake, check, c) })
	}
}

// Goal: a read may show the log as it stood at any instant within the
// read: any prefix whose length is between the counts at the call and at
// the return, and without bounds (a live system) any prefix at all. Method:
// a read of opRebuilt after it confirmed, bounded to [3, n], shows each
// prefix in turn.
func TestCheckReadHistoriesAcceptsEveryInstantWithinTheRead(t *testing.T) {
	b := clean(t)
	id := opID(opRebuilt)
	r := b.read("r9", id)
	full, n := r.History, len(r.History)
	const atCall = 3
	for k := 1; k <= n; k++ {
		for _, bounded := range []bool{true, false} {
			b := clean(t)
			r := b.read("r9", id)
			r.History = full[:k]
			st, err := sluice.ParseState(full[k-1].To)
			if err != nil {
				t.Fatal(err)
			}
			r.State, r.Txid, r.Bounded, r.LogAtCall, r.LogAtReturn = st, full[k-1].Txid, bounded, atCall, n
			vs, _ := CheckLinearizable(&b.s, 10*time.Second)
			if want := !bounded || k >= atCall; (len(vs) == 0) != want {
				t.Errorf("read of %d of %d entries (bounded %v, log %d at call, %d at return): kept = %v, want %v:\n%s",
					k, n, bounded, atCall, n, len(vs) == 0, want, describe(vs))
			}
		}
	}
}

// Goal: the clean run's reads (one of a finished operation, one a prefix
// taken mid-flight) pass, and a read of an id no one posted may say 404.
func TestCheckReadHistoriesClean(t *testing.T) {
	b := clean(t)
	b.s.Reads = append(b.s.Reads, ReadRecord{Client: "r9", ID: string(opID(99)), Status: 404, Call: b.step + 1, Return: b.step + 2})
	if vs, _ := CheckLinearizable(&b.s, 10*time.Second); len(vs) != 0 {
		t.Errorf("clean reads: %d violations, want none:\n%s", len(vs), describe(vs))
	}
	if len(b.s.Reads) < 2 || len(b.readOf("r2").History) >= len(b.events(opID(opRebuilt))) {
		t.Errorf("setup: the clean run should hold a read of a strict prefix of opRebuilt's log")
	}
}

// Goal: a GET that answered 500 because the store failed under it (the
// world says so) is excused; the same 500 without a store failure is not
// (TestCheckReadHistoriesCatches).
func TestReadFailedByTheStoreIsExcused(t *testing.T) {
	b := clean(t)
	r := b.readOf("r1")
	r.Status, r.Present, r.Answer, r.State, r.History, r.StoreFailed = 500, false, Payload{}, sluice.None, nil, true
	if vs, _ := CheckLinearizable(&b.s, 10*time.Second); len(vs) != 0 {
		t.Errorf("a 500 with the store failed under it: %d violations, want none:\n%s", len(vs), describe(vs))
	}
}
