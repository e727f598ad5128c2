package mocknode

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Every broadcast fault: what the caller sees next to the ground truth (is the
// transaction in the pool, does it land, did the node process it, did the
// fault fire). The dangerous rows are the ones where the two differ.
func TestBroadcastFaults(t *testing.T) {
	badSig := func(tx tron.Transaction) tron.Transaction {
		tx.Signature = bytes.Repeat([]byte{0xee}, len(tx.Signature))
		return tx
	}
	tests := []struct {
		name         string
		fault        Fault
		broken       bool   // send a badly signed transaction
		wantAnswer   string // code or "timeout"
		wantTruth    tron.Code
		wantPending  bool
		wantReached  bool
		wantAccepted bool
		wantFired    bool
	}{
		{"none", None, false, "SUCCESS", tron.CodeSuccess, true, true, true, false},
		{"lose request", LoseRequest, false, AnswerTimeout, "", false, false, false, true},
		{"accept then timeout", AcceptThenTimeout, false, AnswerTimeout, tron.CodeSuccess, true, true, true, true},
		{"accept then timeout, rejected", AcceptThenTimeout, true, AnswerTimeout, tron.CodeSigError, false, true, false, true},
		{"busy", Busy, false, "SERVER_BUSY", "", false, false, false, true},
		{"no connection", NoConnection, false, "NO_CONNECTION", "", false, false, false, true},
		{"bandwidth exhausted", BandwidthExhausted, false, "BANDWITH_ERROR", "", false, false, false, true},
		{"contract state refusal", ContractStateRefusal, false, "CONTRACT_VALIDATE_ERROR", "", false, false, false, true},
		{"unknown code", UnknownCode, false, string(unknownCode), tron.CodeSuccess, true, true, true, true},
		{"unknown code, rejected", UnknownCode, true, string(unknownCode), tron.CodeSigError, false, true, false, true},
		{"relay fail after accept", RelayFailAfterAccept, false, "NOT_ENOUGH_EFFECTIVE_CONNECTION", tron.CodeSuccess, true, true, true, true},
		{"relay fail, not a success", RelayFailAfterAccept, true, "SIGERROR", tron.CodeSigError, false, true, false, false},
		{"other error after accept", OtherErrorAfterAccept, false, "OTHER_ERROR", tron.CodeSuccess, true, true, true, true},
		{"other error, not a success", OtherErrorAfterAccept, true, "SIGERROR", tron.CodeSigError, false, true, false, false},
		{"expiration lie", ExpirationLie, false, "TRANSACTION_EXPIRATION_ERROR", tron.CodeSuccess, true, true, true, true},
		{"expiration lie, node lacks it", ExpirationLie, true, "SIGERROR", tron.CodeSigError, false, true, false, false},
		{"tapos lie", TaposLie, false, "TAPOS_ERROR", tron.CodeSuccess, true, true, true, true},
		{"tapos lie, node lacks it", TaposLie, true, "SIGERROR", tron.CodeSigError, false, true, false, false},
		{"signature lie, a first send", SignatureLie, false, "SUCCESS", tron.CodeSuccess, true, true, true, false},
		{"query fault on a broadcast is ignored", QueryTimeout, false, "SUCCESS", tron.CodeSuccess, true, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			tx := e.tx("fault", 3)
			if tt.broken {
				tx = badSig(tx)
			}
			e.node.Next(Broadcast, tt.fault)
			if got := e.send(tx); got != tt.wantAnswer {
				t.Errorf("caller saw %s, want %s", got, tt.wantAnswer)
			}
			wire := e.node.Wire()
			if len(wire) != 1 {
				t.Fatalf("%d wire attempts, want 1", len(wire))
			}
			w := wire[0]
			if w.Answer != tt.wantAnswer || w.Truth != tt.wantTruth || w.Reached != tt.wantReached ||
				w.Accepted != tt.wantAccepted || w.Fired != tt.wantFired || w.Fault != tt.fault {
				t.Errorf("wire = {Fault:%s Fired:%v Reached:%v Truth:%q Answer:%q Accepted:%v}, want {Fault:%s Fired:%v Reached:%v Truth:%q Answer:%q Accepted:%v}",
					w.Fault, w.Fired, w.Reached, w.Truth, w.Answer, w.Accepted,
					tt.fault, tt.wantFired, tt.wantReached, tt.wantTruth, tt.wantAnswer, tt.wantAccepted)
			}
			if got := e.status(tx.Txid()) == tron.Pending; got != tt.wantPending {
				t.Errorf("pending after the call = %v, want %v", got, tt.wantPending)
			}
			wantFired := 0
			if tt.wantFired {
				wantFired = 1
			}
			if got := firedCount(e.node, tt.fault); tt.fault != None && got != wantFired {
				t.Errorf("FaultsFired[%s] = %d, want %d", tt.fault, got, wantFired)
			}

			// Ground truth decides: what was pending lands, whatever the
			// caller was told; what was not never does.
			e.at(time.Minute)
			if got := e.status(tx.Txid()) == tron.Included; got != tt.wantPending {
				t.Errorf("included a minute later = %v, want %v", got, tt.wantPending)
			}
		})
	}
}

// A lie about a transaction that is already included: the caller is told it
// expired (or failed TAPoS), the node has it in a block.
func TestLiesAboutIncludedTransaction(t *testing.T) {
	for _, f := range []Fault{ExpirationLie, TaposLie} {
		t.Run(f.String(), func(t *testing.T) {
			e := newEnv(t, nil)
			tx := e.tx("included", 1)
			e.mustSend(tx, tron.CodeSuccess)
			e.at(3 * time.Second)
			e.node.Next(Broadcast, f)
			got := e.send(tx)
			want := tron.CodeTaposError
			if f == ExpirationLie {
				want = tron.CodeTransactionExpirationError
			}
			if got != string(want) {
				t.Errorf("re-send of an included transaction = %s, want %s", got, want)
			}
			w := e.node.Wire()[1]
			if !w.Fired || w.Truth != tron.CodeDupTransactionError || !w.Accepted {
				t.Errorf("wire = %+v, want fired, truth DUP, accepted", w)
			}
			if got := e.status(tx.Txid()); got != tron.Included {
				t.Errorf("status %s, want included", got)
			}
		})
	}

	t.Run("an honest expiration answer is not a lie", func(t *testing.T) {
		// Re-sent after its expiration, an included transaction already
		// gets TRANSACTION_EXPIRATION_ERROR: the lie changes nothing and
		// does not count as fired.
		e := newEnv(t, nil)
		tx := e.tx("included", 1)
		e.mustSend(tx, tron.CodeSuccess)
		e.at(2 * time.Minute)
		e.node.Next(Broadcast, ExpirationLie)
		e.mustSend(tx, tron.CodeTransactionExpirationError)
		if w := e.node.Wire()[1]; w.Fired {
			t.Errorf("wire = %+v, want not fired", w)
		}
	})
}

// Query faults: a timeout hides the answer; a broadcast fault on a query does
// not apply and is recorded as not fired.
func TestQueryFaults(t *testing.T) {
	type call struct {
		kind CallKind
		do   func(e *env) error
	}
	calls := []call{
		{Lookup, func(e *env) error { _, err := e.w1.Lookup(e.t.Context(), tron.Txid{}); return err }},
		{Head, func(e *env) error { _, err := e.w1.HeadBlock(e.t.Context()); return err }},
		{Solid, func(e *env) error { _, err := e.w1.SolidBlock(e.t.Context()); return err }},
	}
	tests := []struct {
		name        string
		fault       Fault
		wantTimeout bool
	}{
		{"none", None, false},
		{"query timeout", QueryTimeout, true},
		{"lose request does not apply", LoseRequest, false},
		{"expiration lie does not apply", ExpirationLie, false},
	}
	for _, c := range calls {
		for _, tt := range tests {
			t.Run(c.kind.String()+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, nil)
				e.node.Next(c.kind, tt.fault)
				err := c.do(e)
				if got := errors.Is(err, tron.ErrTimeout); got != tt.wantTimeout {
					t.Errorf("timed out = %v (err %v), want %v", got, err, tt.wantTimeout)
				}
				if err != nil && !tt.wantTimeout {
					t.Errorf("unexpected error %v", err)
				}
				q := e.node.Queries()
				if len(q) != 1 {
					t.Fatalf("%d queries recorded, want 1", len(q))
				}
				if q[0].Kind != c.kind || q[0].Fault != tt.fault || q[0].Fired != tt.wantTimeout {
					t.Errorf("query = %+v, want kind %s fault %s fired %v", q[0], c.kind, tt.fault, tt.wantTimeout)
				}
				if got := q[0].Answer == AnswerTimeout; got != tt.wantTimeout {
					t.Errorf("recorded answer %q, timeout %v", q[0].Answer, tt.wantTimeout)
				}
				if tt.fault != None && tt.fault != QueryTimeout && firedCount(e.node, tt.fault) != 0 {
					t.Errorf("FaultsFired counts %s on a %s call", tt.fault, c.kind)
				}
			})
		}
	}
}

// The script is consumed first, per call kind, first in first out; only when a
// kind's script is empty is the hook asked, once per call, with the call's
// kind, worker and txid.
func TestScriptThenHook(t *testing.T) {
	e := newEnv(t, nil)
	var asked []Call
	e.node.SetFaults(func(c Call) Fault {
		asked = append(asked, c)
		if c.Kind == Broadcast {
			return Busy
		}
		return None
	})
	e.node.Next(Broadcast, None)
	e.node.Next(Broadcast, UnknownCode)
	e.node.Next(Lookup, QueryTimeout)

	w2 := e.node.Client("w2")
	a, b, c := e.tx("a", 1), e.tx("b", 1), e.tx("c", 1)
	answers := []string{
		e.send(a),
		sendAs(t, w2, b),
		e.send(c),
	}
	want := []string{"SUCCESS", string(unknownCode), "SERVER_BUSY"}
	for i := range want {
		if answers[i] != want[i] {
			t.Errorf("broadcast #%d answer %s, want %s", i, answers[i], want[i])
		}
	}
	if _, err := e.w1.Lookup(t.Context(), a.Txid()); !errors.Is(err, tron.ErrTimeout) {
		t.Errorf("scripted lookup: err %v, want timeout", err)
	}
	if _, err := w2.Lookup(t.Context(), b.Txid()); err != nil {
		t.Errorf("hooked lookup: err %v, want none", err)
	}
	wantAsked := []Call{
		{Kind: Broadcast, Worker: "w1", Txid: c.Txid()},
		{Kind: Lookup, Worker: "w2", Txid: b.Txid()},
	}
	if len(asked) != len(wantAsked) {
		t.Fatalf("hook asked %d times (%+v), want %d", len(asked), asked, len(wantAsked))
	}
	for i := range wantAsked {
		if asked[i] != wantAsked[i] {
			t.Errorf("hook call #%d = %+v, want %+v", i, asked[i], wantAsked[i])
		}
	}

	e.node.SetFaults(nil)
	if got := e.send(c); got != "SUCCESS" {
		t.Errorf("after removing the hook: %s, want SUCCESS", got)
	}
}

// FaultsFired lists every fault but None, in Fault order, zeros included.
func TestFaultsFiredListsEveryFault(t *testing.T) {
	e := newEnv(t, nil)
	e.node.Next(Broadcast, Busy)
	e.node.Next(Broadcast, Busy)
	e.node.Next(Head, QueryTimeout)
	e.send(e.tx("a", 1))
	e.send(e.tx("a", 1))
	e.w1.HeadBlock(t.Context())
	got := e.node.FaultsFired()
	if len(got) != int(faultEnd)-1 {
		t.Fatalf("%d entries, want %d", len(got), int(faultEnd)-1)
	}
	for i, fc := range got {
		if want := Fault(i + 1); fc.Fault != want {
			t.Errorf("entry %d is %s, want %s", i, fc.Fault, want)
		}
		want := 0
		switch fc.Fault {
		case Busy:
			want = 2
		case QueryTimeout:
			want = 1
		}
		if fc.Count != want {
			t.Errorf("%s fired %d times, want %d", fc.Fault, fc.Count, want)
		}
	}
}

// Every fault, call kind and event has its own name.
func TestNames(t *testing.T) {
	seen := map[string]bool{}
	check := func(s string) {
		if s == "" || strings.Contains(s, "(") || seen[s] {
			t.Errorf("name %q is empty, a fallback or a duplicate", s)
		}
		seen[s] = true
	}
	for f := None; f < faultEnd; f++ {
		check(f.String())
	}
	for k := Broadcast; k < callKindEnd; k++ {
		check(k.String())
	}
	for ev := MissedSlot; ev < eventEnd; ev++ {
		check(ev.String())
	}
	for f := OrphanReturned; f <= OrphanVanished; f++ {
		check(f.String())
	}
}

// Invalid scripts and hooks are wiring bugs and panic.
func TestInvalidFaultsPanic(t *testing.T) {
	tests := []struct {
		name string
		do   func(e *env)
	}{
		{"Next with a bad kind", func(e *env) { e.node.Next(CallKind(0), None) }},
		{"Next with a bad fault", func(e *env) { e.node.Next(Broadcast, faultEnd) }},
		{"hook returns a bad fault", func(e *env) {
			e.node.SetFaults(func(Call) Fault { return Fault(-1) })
			e.w1.HeadBlock(e.t.Context())
		}},
		{"negative SkipSlots", func(e *env) { e.node.SkipSlots(-1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("did not panic")
				}
			}()
			tt.do(newEnv(t, nil))
		})
	}
}

// Goal: a signature lie is told only about bytes the node held before the
// call: a re-send of pending bytes is refused SIGERROR, stays pending and
// lands; a first send is taken as if no lie were asked (a node that
// refuses a signature never takes the bytes itself).
func TestSignatureLieOnlyOnAResend(t *testing.T) {
	e := newEnv(t, nil)
	tx := e.tx("sig", 3)
	e.node.Next(Broadcast, SignatureLie)
	if got := e.send(tx); got != "SUCCESS" {
		t.Fatalf("first send with a signature lie: %s, want SUCCESS", got)
	}
	e.node.Next(Broadcast, SignatureLie)
	if got := e.send(tx); got != "SIGERROR" {
		t.Fatalf("re-send with a signature lie: %s, want SIGERROR", got)
	}
	wire := e.node.Wire()
	if w := wire[len(wire)-1]; !w.Fired || !w.Accepted || w.Truth != tron.CodeDupTransactionError {
		t.Errorf("re-send's wire = %+v, want fired, accepted before (DUP_TRANSACTION_ERROR)", w)
	}
	if got := firedCount(e.node, SignatureLie); got != 1 {
		t.Errorf("FaultsFired[signature-lie] = %d, want 1", got)
	}
	e.at(time.Minute)
	if e.status(tx.Txid()) != tron.Included {
		t.Error("the refused re-send's bytes did not land")
	}
}

// Goal: a signature lie about bytes only another node holds refuses them
// without taking them, and the other node's copy still lands; about bytes
// no node holds, the node answers truly. Method: three nodes, gossip to
// the producer (node 0) delayed; send to node 1, then to node 0 with the
// lie while node 1's copy is on its way.
func TestSignatureLieAboutAnotherNodesCopy(t *testing.T) {
	e := newNetEnv(t, 3, nil)
	e.net.SetGossip(func(Hop) Gossip { return Gossip{Delay: 1500 * time.Millisecond} })
	e.at(time.Second)
	tx := e.tx("sig-elsewhere", 4)
	if got := e.sendTo(1, tx); got != "SUCCESS" {
		t.Fatalf("send to node 1: %s, want SUCCESS", got)
	}
	e.node.Next(Broadcast, SignatureLie)
	if got := e.sendTo(0, tx); got != "SIGERROR" {
		t.Fatalf("send to node 0 with a signature lie while node 1 holds the bytes: %s, want SIGERROR", got)
	}
	wire := e.net.Wire()
	if w := wire[len(wire)-1]; !w.Fired || w.Reached || w.Accepted {
		t.Errorf("refusal's wire = %+v, want fired, neither reached nor accepted", w)
	}
	if got := e.statusOn(0, tx.Txid()); got == pend {
		t.Error("node 0 took the bytes whose signature it refused")
	}
	e.at(time.Minute)
	if got := e.statuses(tx.Txid()); !slices.Equal(got, []tron.Status{tron.Included, tron.Included, tron.Included}) {
		t.Errorf("after a minute the nodes say %v, want included everywhere: node 1's copy lands", got)
	}

	lone := e.tx("sig-nowhere", 5)
	e.node.Next(Broadcast, SignatureLie)
	if got := e.sendTo(0, lone); got != "SUCCESS" {
		t.Errorf("send with a signature lie of bytes no node holds: %s, want SUCCESS (a true answer)", got)
	}
	if got := firedCount(e.node, SignatureLie); got != 1 {
		t.Errorf("FaultsFired[signature-lie] = %d, want 1", got)
	}
}
