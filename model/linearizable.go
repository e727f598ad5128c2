package model

import (
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// ReadRecord is one GET of an operation and what it returned.
type ReadRecord struct {
	Client string
	ID     string
	// Status is the HTTP status of the answer; 0 when not recorded, in
	// which case Present alone says 200 or 404. Any other status is an
	// answer that showed nothing: a 5xx is a read that failed, which only
	// a store failure during it excuses (StoreFailed).
	Status int
	// StoreFailed: the world failed one of the store calls this read's
	// server made, so a 5xx answer is the store's, not intake's.
	StoreFailed bool
	Present     bool         // 200 (false: 404)
	Answer      Payload      // the payload the body showed
	State       sluice.State // the state read
	// History is the event log the body showed, oldest first.
	History []HistoryEntry
	// Txid is the txid the body named (hex), "" if none.
	Txid string
	// Bounded: the world counted the operation's log at the read's call
	// (LogAtCall events) and at its return (LogAtReturn), on the same
	// clock as Call and Return. The history shown must then be the log's
	// first k events for some k between the two. Without bounds (a live
	// system) it must be some prefix of the final log.
	Bounded                bool
	LogAtCall, LogAtReturn int
	// Call and Return: see IntakeRecord.
	Call, Return int64
}

// HistoryEntry is one event as a GET shows it: the strings of the body.
type HistoryEntry struct {
	From, To    string // state names; "none" for the creation
	At          string // RFC 3339 with nanoseconds, UTC
	Txid        string // hex, "" if none
	RetiredTxid string // hex, "" if none
}

// The porcupine model. State, input and output are small comparable values;
// Step is a pure function of them.

// linState is one operation id's row as intake sees it: absent, or present
// with a payload hash. The row's lifecycle state is the workers' business
// and not part of the model.
type linState struct {
	Exists bool
	Hash   string
}

type linInput struct {
	Read bool
	ID   string
	// Hash is a post's payload key ("" for an invalid payload): equal
	// exactly for the same instruction, customer included.
	Hash string
	// succ, when set, holds the sets of states this post most often steps
	// to, made once with the input (linFast's; linModel ignores it).
	succ *linSucc
}

type linOutput struct {
	Outcome  Outcome // posts
	Returned string  // Created/Replayed: the hash of the row returned
	Present  bool    // reads
	Hash     string  // reads: the hash of the row read
}

// linModel is nondeterministic only for posts whose answer was lost (the
// client timed out, or the answer was a failure): such a post may or may
// not have inserted the row. Invalid and Unfunded posts change nothing;
// Unfunded is legal only where the id is absent.
var linModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		// Operations on different ids never interact: checking each id
		// alone is sound and keeps every search tiny.
		byID := map[string][]porcupine.Operation{}
		var ids []string
		for _, op := range history {
			id := op.Input.(linInput).ID
			if _, ok := byID[id]; !ok {
				ids = append(ids, id)
			}
			byID[id] = append(byID[id], op)
		}
		slices.Sort(ids)
		out := make([][]porcupine.Operation, 0, len(ids))
		for _, id := range ids {
			out = append(out, byID[id])
		}
		return out
	},
	Init: func() []any { return []any{linState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(linState), input.(linInput), output.(linOutput)
		if in.Read {
			if out.Present == s.Exists && (!s.Exists || out.Hash == s.Hash) {
				return []any{s}
			}
			return nil
		}
		switch out.Outcome {
		case Invalid:
			if in.Hash == "" {
				return []any{s}
			}
		case Unfunded:
			// Refused for want of funds: it created nothing, and it can
			// only have been said while the id was free. With a row there,
			// Insert finds it before any funds are looked at, and the
			// answer is the row (a replay) or a conflict.
			if !s.Exists && in.Hash != "" {
				return []any{s}
			}
		case Created:
			if !s.Exists && in.Hash != "" && out.Returned == in.Hash {
				return []any{linState{Exists: true, Hash: in.Hash}}
			}
		case Replayed:
			if s.Exists && s.Hash == in.Hash && out.Returned == in.Hash {
				return []any{s}
			}
		case Conflict:
			if s.Exists && in.Hash != "" && s.Hash != in.Hash {
				return []any{s}
			}
		case Failed:
			if !s.Exists && in.Hash != "" {
				return []any{s, linState{Exists: true, Hash: in.Hash}}
			}
			return []any{s}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(linState) == b.(linState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		if in.Read {
			if !out.Present {
				return "GET -> 404"
			}
			return "GET -> " + short(out.Hash)
		}
		if in.Hash == "" {
			return "POST invalid -> " + out.Outcome.String()
		}
		s := "POST " + short(in.Hash) + " -> " + out.Outcome.String()
		if out.Returned != "" {
			s += " " + short(out.Returned)
		}
		return s
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		if !s.Exists {
			return "absent"
		}
		return "present " + short(s.Hash)
	},
}

func short(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}

// linKey is the porcupine model's value for a payload with the given key
// and intent: "" for one the model finds invalid (key ""), otherwise the
// key with the customer added, so that the same payment from another
// customer's balance is another instruction here whether or not the key
// already covers the customer.
func linKey(key string, in Intent) string {
	if key == "" {
		return ""
	}
	return key + "/" + string(in.Customer)
}

// LinearizabilityReport is the outcome of the check, with what is needed to
// draw porcupine's visualization of it.
type LinearizabilityReport struct {
	Result     porcupine.CheckResult
	Operations int
	model      porcupine.Model
	// The history checked and the check's bound: Visualize runs porcupine
	// again on them, verbosely, for the partial linearizations it draws
	// (the check itself does not keep them: only a failing run is drawn).
	history []porcupine.Operation
	timeout time.Duration
}

// Visualize writes porcupine's self-contained HTML visualization.
func (r *LinearizabilityReport) Visualize(w io.Writer) error {
	_, info := porcupine.CheckOperationsVerbose(r.model, r.history, r.timeout)
	return porcupine.Visualize(r.model, info, w)
}

// CheckLinearizable checks the intake history (s.Intake and s.Reads). A
// check that runs out of time is reported as a violation saying so: an
// unknown result is never a pass.
//
// Call and Return must come from one logical clock that orders every call
// and return point of the run. A post whose answer never came (Failed with
// Return 0) is open-ended: it may take effect any time after its call.
//
// Each id is checked on its own (the model has no state across ids). An id
// whose operations happen one after another has one possible order and is
// replayed in it; porcupine searches the ids where operations overlap, and
// decides every history with an illegal id (checkLinHistory).
func CheckLinearizable(s *Snapshot, timeout time.Duration) ([]Violation, *LinearizabilityReport) {
	s = withMemo(s)
	ix := s.index()
	// The operations in the order above (intake, then reads), with their
	// inputs and outputs (linFast's form: porcupine gets pointers to them).
	type linOp struct {
		in        linInput
		out       linOutput
		client    int
		call, ret int64
	}
	lops := make([]linOp, 0, len(s.Intake)+len(s.Reads))
	succ := make([]linSucc, len(s.Intake))     // the posts' common successors
	clients := make(map[string]int, cap(lops)) // at most one client per operation
	client := func(name string) int {
		if id, ok := clients[name]; ok {
			return id
		}
		clients[name] = len(clients)
		return clients[name]
	}
	for i := range s.Intake {
		r := &s.Intake[i]
		ret := r.Return
		if r.Outcome == Failed && ret == 0 {
			ret = math.MaxInt64
		}
		in := linInput{ID: string(ix.intakeKey[i]), Hash: ix.sentOf(i).lin}
		if in.Hash != "" {
			in.succ = succ[i].init(in.Hash)
		}
		lops = append(lops, linOp{in: in, out: linOutput{Outcome: r.Outcome, Returned: ix.answerOf(i).lin},
			client: client(r.Client), call: r.Call, ret: ret})
	}
	for i := range s.Reads {
		r := &s.Reads[i]
		if r.Status != 0 && r.Status != 200 && r.Status != 404 {
			continue // no information about the row
		}
		lops = append(lops, linOp{in: linInput{Read: true, ID: string(ix.readKey[i])},
			out:    linOutput{Present: r.Present, Hash: ix.readAnswerOf(i).lin},
			client: client(r.Client), call: r.Call, ret: r.Return})
	}
	// The history is the operations grouped by id, ids in order, each id's
	// in the order above, so that partitioning only cuts it: the parts are
	// linModel.Partition's.
	order := make([]int32, len(lops))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return strings.Compare(lops[a].in.ID, lops[b].in.ID) })
	history := make([]porcupine.Operation, len(lops))
	for j, i := range order {
		op := &lops[i]
		history[j] = porcupine.Operation{ClientId: op.client, Input: &op.in, Call: op.call, Output: &op.out, Return: op.ret}
	}
	m := linFast
	res := checkLinHistory(history, timeout)
	rep := &LinearizabilityReport{Result: res, Operations: len(history), model: m, history: history, timeout: timeout}
	vs := append(verdict(res, m, history, timeout), checkReadHistories(s)...)
	return finish(vs), rep
}

// checkReadHistories checks what every successful GET showed beyond the
// payload porcupine checks: that it is about the operation asked for, and
// that its state and history are the operation's log as it stood at one
// instant within the read (a prefix of the log, its last entry the state
// shown, its length within the counts at call and return). Reads are
// independent of one another and the log only grows by atomic appends, so
// checking each read against the window of prefixes is exactly
// linearizability of the reads against the log.
func checkReadHistories(s *Snapshot) []Violation {
	var vs []Violation
	ix := s.index()
	for j := range s.Reads {
		r := &s.Reads[j]
		id := ix.readKey[j]
		add := func(format string, args ...any) {
			vs = append(vs, Violation{Invariant: LinearizableIntake, Operation: id,
				Message: fmt.Sprintf("read %s (call %d) of op %s: ", r.Client, r.Call, id) + fmt.Sprintf(format, args...)})
		}
		if r.Status >= 500 {
			if !r.StoreFailed {
				add("answered %d with no store failure to blame: intake could not show an operation it holds", r.Status)
			}
			continue
		}
		if !r.Present {
			continue
		}
		if shown := opKey(r.Answer.ID); shown != id {
			add("the answer is about op %s", shown)
			continue
		}
		if row := ix.row(s, id); row != nil {
			if in, bad := ix.readAnswerOf(j).in, ix.readAnswerOf(j).bad; bad != "" {
				add("the answer's payload is unreadable (%s)", bad)
			} else if held := rowIntent(row); !SameInstruction(in, held) {
				add("the answer shows %s, but the operation holds %s", describeOrder(in), describeOrder(held))
			}
		}
		log := ix.events(id) // positions in Events
		k := len(r.History)
		switch {
		case k == 0:
			add("the history is empty, but every operation's log opens with its creation")
			continue
		case k > len(log):
			add("the history has %d entries, but the operation's log never held more than %d", k, len(log))
			continue
		}
		for i := range r.History {
			if h, e := &r.History[i], &s.Events[log[i]]; !shows(h, e) {
				add("history entry %d is %s, but the operation's log has %s there", i+1, describeEntry(*h), describeEntry(historyEntry(*e)))
				break
			}
		}
		if last := r.History[k-1].To; last != r.State.String() {
			add("the state shown is %s, but the history shown ends in %s: not one instant of the log", r.State, last)
		}
		// Each event carries the txid in force after it, so the instant
		// the history shows has one txid, and the answer must name that
		// one: it is what the client watches the chain for.
		if last := r.History[k-1].Txid; r.Txid != last {
			add("the answer names txid %s, but at the instant its history shows the operation's txid was %s: not one instant of the log", short(r.Txid), short(last))
		}
		if r.Bounded && (k < r.LogAtCall || k > r.LogAtReturn) {
			add("the history has %d entries, but the log held %d at the call and %d at the return: no instant within the read shows it",
				k, r.LogAtCall, r.LogAtReturn)
		}
	}
	return vs
}

// historyEntry is e as a GET must show it, by the model's own formatting.
func historyEntry(e sluice.Event) HistoryEntry {
	h := HistoryEntry{From: e.From.String(), To: e.To.String(), At: e.At.UTC().Format(time.RFC3339Nano)}
	if !e.Txid.IsZero() {
		h.Txid = hex.EncodeToString(e.Txid[:])
	}
	if !e.RetiredTxid.IsZero() {
		h.RetiredTxid = hex.EncodeToString(e.RetiredTxid[:])
	}
	return h
}

// shows reports whether h == historyEntry(*e), without building the
// entry's strings.
func shows(h *HistoryEntry, e *sluice.Event) bool {
	if h.From != e.From.String() || h.To != e.To.String() {
		return false
	}
	var buf [64]byte
	if string(e.At.UTC().AppendFormat(buf[:0], time.RFC3339Nano)) != h.At {
		return false
	}
	return showsTxid(h.Txid, e.Txid) && showsTxid(h.RetiredTxid, e.RetiredTxid)
}

// showsTxid reports whether h is t as historyEntry writes it.
func showsTxid(h string, t tron.Txid) bool {
	if t.IsZero() {
		return h == ""
	}
	var buf [2 * len(t)]byte
	hex.Encode(buf[:], t[:])
	return string(buf[:]) == h
}

func describeEntry(h HistoryEntry) string {
	return fmt.Sprintf("%s->%s at %s txid %s", h.From, h.To, h.At, short(h.Txid))
}

// verdict turns porcupine's result into violations.
func verdict(res porcupine.CheckResult, m porcupine.Model, history []porcupine.Operation, timeout time.Duration) []Violation {
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return []Violation{{Invariant: LinearizableIntake,
			Message: fmt.Sprintf("the linearizability check of %d intake operations timed out after %s: unknown, not a pass", len(history), timeout)}}
	}
	return []Violation{{Invariant: LinearizableIntake, Operation: sluice.OperationID(firstIllegalID(m, history)),
		Message: fmt.Sprintf("the intake history of %d operations is not linearizable%s", len(history), illegalDetail(m, history))}}
}

// firstIllegalID finds the lowest id whose own history is not linearizable,
// so that the violation names an operation.
func firstIllegalID(m porcupine.Model, history []porcupine.Operation) string {
	for _, part := range m.Partition(history) {
		if !porcupine.CheckOperations(m, part) {
			return linID(part[0].Input)
		}
	}
	return ""
}

// linID is the id an input names, in linModel's form or linFast's.
func linID(input any) string {
	if in, ok := input.(*linInput); ok {
		return in.ID
	}
	return input.(linInput).ID
}

func illegalDetail(m porcupine.Model, history []porcupine.Operation) string {
	for _, part := range m.Partition(history) {
		if porcupine.CheckOperations(m, part) {
			continue
		}
		ops := slices.Clone(part)
		slices.SortFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
		var b strings.Builder
		fmt.Fprintf(&b, ": operation %s saw", linID(ops[0].Input))
		for i, op := range ops {
			if i > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s", m.DescribeOperation(op.Input, op.Output))
		}
		return b.String()
	}
	return ""
}
