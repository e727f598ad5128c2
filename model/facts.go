package model

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Fact is one thing that happened in a run, as a trace records it: a
// closed set of kinds, each with typed fields. The worlds emit facts; the
// trace file carries each fact's fields next to its one-line text (which is
// derived from the fields, see Text); reports and tools read the fields,
// never the text. The kernel (sim) stores a fact as opaque JSON and knows
// nothing of withdrawals.
type Fact struct {
	Kind FactKind `json:"kind"`
	// Op is the world's short name of the operation concerned ("op7"), or
	// the quoted id a client sent when it is not one of the world's.
	Op string `json:"op,omitempty"`
	// Claimed are the rows a claim took.
	Claimed []ClaimedRow `json:"claimed,omitempty"`
	Token   int64        `json:"token,omitempty"`
	// From and To are states (a CAS's edge; To alone is a read's state).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	Txid string `json:"txid,omitempty"` // short form
	// Retired is the txid a rebuild gives up (short form).
	Retired string `json:"retired,omitempty"`
	// Answer is what the other side said: a node's code or error, a
	// client's outcome, a lookup's summary.
	Answer string `json:"answer,omitempty"`
	// Failed marks an answer that is not a plain success: a node's lie,
	// refusal, error or timeout.
	Failed bool `json:"failed,omitempty"`
	// Fenced marks a write refused for its token.
	Fenced  bool          `json:"fenced,omitempty"`
	Err     string        `json:"err,omitempty"` // any other error
	Dur     time.Duration `json:"dur,omitempty"` // a pause, stall, jump or slow answer; a release's delay
	Skew    time.Duration `json:"skew,omitempty"`
	Created bool          `json:"created,omitempty"`
	Holder  string        `json:"holder,omitempty"` // the worker whose lease lapsed
	Label   string        `json:"label,omitempty"`  // a hostile client's category/case
	N       int           `json:"n,omitempty"`      // a count (missed slots)
}

// ClaimedRow is one row a claim took: operation, the state it was in, and
// the token the claim got.
type ClaimedRow struct {
	Op    string `json:"op"`
	State string `json:"state"`
	Token int64  `json:"token"`
}

// FactKind names a kind of fact. The set is closed: Text refuses a kind it
// does not know, and a test checks every kind has a text and a report class.
type FactKind string

// The kinds of fact, grouped by who emits them.
const (
	// Worker and server faults (the world's fault menu).
	FactCrash            FactKind = "crash"
	FactStop             FactKind = "stop" // a graceful stop: the worker's context cancelled
	FactPause            FactKind = "pause"
	FactPauseBeforeWrite FactKind = "pause-before-write"
	FactWake             FactKind = "wake"
	FactClockJump        FactKind = "clock-jump"
	FactSlowAnswer       FactKind = "slow-answer"
	FactStall            FactKind = "stall"
	FactSignerFails      FactKind = "signer-fails"
	FactStoreError       FactKind = "store-error" // Answer: the call; Created: it took effect first
	FactStoreStall       FactKind = "store-stall"
	// Store calls as the world saw them.
	FactInsert       FactKind = "insert"
	FactGet          FactKind = "get"
	FactClaim        FactKind = "claim"
	FactLeaseExpired FactKind = "lease-expired"
	FactCAS          FactKind = "cas"
	FactRelease      FactKind = "release"
	FactPark         FactKind = "park"    // Answer: the reason
	FactResolve      FactKind = "resolve" // an operator's action; Answer: why
	FactFencedStop   FactKind = "fenced-stop"
	// Node calls and the chain.
	FactBroadcast   FactKind = "broadcast"
	FactLookup      FactKind = "lookup"
	FactRelay       FactKind = "relay"
	FactNodeRestart FactKind = "node-restart"
	FactEvict       FactKind = "evict"
	FactMissedSlots FactKind = "missed-slots"
	FactNodeLag     FactKind = "node-lag" // N: blocks behind; Answer: which node
	FactReorg       FactKind = "reorg"    // N: depth
	FactShortage    FactKind = "shortage" // Answer: trx or energy; Dur: until topped up
	// FactEnergyPrice: the energy price changed. N: sun a unit; Dur: how
	// long a spike lasts (0 for the fall back).
	FactEnergyPrice FactKind = "energy-price"
	// FactOddExecution: a transfer succeeded other than as asked, or is
	// reported otherwise. Answer: the kind.
	FactOddExecution FactKind = "odd-execution"
	// Clients and the run.
	FactOperator       FactKind = "operator" // Answer: what it did and how it went
	FactClientPost     FactKind = "client-post"
	FactLivenessBudget FactKind = "liveness-budget-spent"
)

// FactKinds lists every kind, in the order above.
var FactKinds = []FactKind{
	FactCrash, FactStop, FactPause, FactPauseBeforeWrite, FactWake, FactClockJump, FactSlowAnswer, FactStall, FactSignerFails,
	FactStoreError, FactStoreStall,
	FactInsert, FactGet, FactClaim, FactLeaseExpired, FactCAS, FactRelease, FactPark, FactResolve, FactFencedStop,
	FactBroadcast, FactLookup, FactRelay, FactNodeRestart, FactEvict, FactMissedSlots, FactNodeLag, FactReorg, FactShortage, FactEnergyPrice, FactOddExecution,
	FactOperator, FactClientPost, FactLivenessBudget,
}

// Text is the fact's one-line description, derived from its fields.
func (f Fact) Text() string {
	switch f.Kind {
	case FactCrash:
		return "CRASH"
	case FactStop:
		return "STOP (its context cancelled, as by SIGTERM)"
	case FactPause:
		return "PAUSE " + f.Dur.String()
	case FactPauseBeforeWrite:
		return "PAUSE before write " + f.Dur.String()
	case FactWake:
		return "wakes from pause"
	case FactClockJump:
		return fmt.Sprintf("wall clock jumps %s (skew now %s)", f.Dur, f.Skew)
	case FactSlowAnswer:
		return "SLOW answer " + f.Dur.String()
	case FactStall:
		return "STALL " + f.Dur.String()
	case FactSignerFails:
		return "signer fails"
	case FactStoreError:
		if f.Created {
			return "STORE " + f.Answer + " took effect, its answer lost"
		}
		return "STORE " + f.Answer + " fails, nothing happened"
	case FactStoreStall:
		return "STORE stalls " + f.Dur.String()
	case FactInsert:
		return fmt.Sprintf("insert %s created=%v%s", f.Op, f.Created, f.errSuffix())
	case FactGet:
		return fmt.Sprintf("get %s %s%s", f.Op, f.To, f.errSuffix())
	case FactClaim:
		var sb strings.Builder
		sb.WriteString("claim")
		for _, c := range f.Claimed {
			fmt.Fprintf(&sb, " %s:%s/t%d", c.Op, c.State, c.Token)
		}
		return sb.String() + f.errSuffix()
	case FactLeaseExpired:
		return fmt.Sprintf("lease expired: %s held by %s (token=%d) taken over", f.Op, f.Holder, f.Token)
	case FactCAS:
		s := fmt.Sprintf("cas %s %s->%s token=%d", f.Op, f.From, f.To, f.Token)
		if f.Txid != "" {
			s += " txid=" + f.Txid
		}
		if f.Retired != "" {
			s += " retired=" + f.Retired
		}
		return s + f.errSuffix()
	case FactRelease:
		return fmt.Sprintf("release %s token=%d after=%s%s", f.Op, f.Token, f.Dur, f.errSuffix())
	case FactPark:
		return fmt.Sprintf("park %s token=%d after=%s: %s%s", f.Op, f.Token, f.Dur, f.Answer, f.errSuffix())
	case FactResolve:
		return fmt.Sprintf("OPERATOR %s %s->%s token=%d: %s%s", f.Op, f.From, f.To, f.Token, f.Answer, f.errSuffix())
	case FactFencedStop:
		return "fenced: stops"
	case FactBroadcast:
		return "broadcast " + f.Txid + " -> " + f.Answer
	case FactLookup:
		return "lookup " + f.Txid + " -> " + f.Answer
	case FactRelay:
		return "relay re-sends " + f.Txid + " -> " + f.Answer
	case FactNodeRestart:
		return nodeName(f.Answer) + " restarts: pending pool lost"
	case FactEvict:
		return nodeName(f.Answer) + " evicts " + f.Txid
	case FactMissedSlots:
		return "producers miss " + strconv.Itoa(f.N) + " slots"
	case FactNodeLag:
		return f.Answer + " lags " + strconv.Itoa(f.N) + " blocks"
	case FactReorg:
		return "REORG: the last " + strconv.Itoa(f.N) + " blocks orphaned"
	case FactShortage:
		return "HOT WALLET short of " + f.Answer + " for " + f.Dur.String()
	case FactEnergyPrice:
		if f.Dur == 0 {
			return "ENERGY PRICE back to " + strconv.Itoa(f.N) + " sun"
		}
		return "ENERGY PRICE up to " + strconv.Itoa(f.N) + " sun for " + f.Dur.String()
	case FactOddExecution:
		return "ODD EXECUTION of " + f.Txid + ": " + f.Answer
	case FactClientPost:
		label := ""
		if f.Label != "" {
			label = " (hostile " + f.Label + ")"
		}
		return "client " + f.Op + " POST" + label + " -> " + f.Answer
	case FactOperator:
		return "OPERATOR acts on " + f.Op + ": " + f.Answer
	case FactLivenessBudget:
		return "liveness budget spent"
	}
	panic("model: fact of unknown kind " + strconv.Quote(string(f.Kind)))
}

// nodeName is the node a chain event names ("node 2"), or "node" in a world
// of one.
func nodeName(which string) string {
	if which == "" {
		return "node"
	}
	return which
}

func (f Fact) errSuffix() string {
	switch {
	case f.Fenced:
		return " FENCED"
	case f.Err != "":
		return " err=" + f.Err
	}
	return ""
}

// ReadFact decodes a trace event's data; ok is false for an event that
// carries none (or one this build cannot read).
func ReadFact(data []byte) (f Fact, ok bool) {
	if len(data) == 0 || json.Unmarshal(data, &f) != nil || f.Kind == "" {
		return Fact{}, false
	}
	return f, true
}

// Ops are the operations the fact concerns.
func (f Fact) Ops() []string {
	if len(f.Claimed) > 0 {
		out := make([]string, len(f.Claimed))
		for i, c := range f.Claimed {
			out[i] = c.Op
		}
		return out
	}
	if f.Op != "" {
		return []string{f.Op}
	}
	return nil
}

// TokenOf is the fencing token the fact shows for op (0 when none).
func (f Fact) TokenOf(op string) int64 {
	for _, c := range f.Claimed {
		if c.Op == op {
			return c.Token
		}
	}
	if f.Op == op {
		return f.Token
	}
	return 0
}
