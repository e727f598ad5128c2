package model

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"sluicesim/sluice"
)

// LinearizableIntake is the seventh invariant: every answer a client saw
// from intake (posts and reads, with their call and return points) is
// explained by some sequential order of the same requests.
const LinearizableIntake = "linearizable-intake"

// ReadRecord is one GET of an operation and what it returned.
type ReadRecord struct {
	Client      string
	ID          string
	Present     bool         // 200 (false: 404)
	RequestHash string       // the payload hash of the row read
	State       sluice.State // the state read
	// Call and Return: see IntakeRecord.
	Call, Return int64
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
	Hash string // a post's payload hash ("" for an invalid payload)
}

type linOutput struct {
	Outcome  Outcome // posts
	Returned string  // Created/Replayed: the hash of the row returned
	Present  bool    // reads
	Hash     string  // reads: the hash of the row read
}

// linModel is nondeterministic only for posts whose answer was lost (the
// client timed out, or the answer was a failure): such a post may or may
// not have inserted the row.
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

// LinearizabilityReport is the outcome of the check, with what is needed to
// draw porcupine's visualization of it.
type LinearizabilityReport struct {
	Result     porcupine.CheckResult
	Operations int
	model      porcupine.Model
	info       porcupine.LinearizationInfo
}

// Visualize writes porcupine's self-contained HTML visualization.
func (r *LinearizabilityReport) Visualize(w io.Writer) error {
	return porcupine.Visualize(r.model, r.info, w)
}

// CheckLinearizable checks the intake history (s.Intake and s.Reads). A
// check that runs out of time is reported as a violation saying so: an
// unknown result is never a pass.
//
// Call and Return must come from one logical clock that orders every call
// and return point of the run. A post whose answer never came (Failed with
// Return 0) is open-ended: it may take effect any time after its call.
func CheckLinearizable(s *Snapshot, timeout time.Duration) ([]Violation, *LinearizabilityReport) {
	var history []porcupine.Operation
	clients := map[string]int{}
	client := func(name string) int {
		if id, ok := clients[name]; ok {
			return id
		}
		clients[name] = len(clients)
		return clients[name]
	}
	for _, r := range s.Intake {
		ret := r.Return
		if r.Outcome == Failed && ret == 0 {
			ret = math.MaxInt64
		}
		history = append(history, porcupine.Operation{
			ClientId: client(r.Client),
			Input:    linInput{ID: strings.ToLower(r.ID), Hash: r.RequestHash},
			Call:     r.Call,
			Output:   linOutput{Outcome: r.Outcome, Returned: r.Returned},
			Return:   ret,
		})
	}
	for _, r := range s.Reads {
		history = append(history, porcupine.Operation{
			ClientId: client(r.Client),
			Input:    linInput{Read: true, ID: strings.ToLower(r.ID)},
			Call:     r.Call,
			Output:   linOutput{Present: r.Present, Hash: r.RequestHash},
			Return:   r.Return,
		})
	}
	m := linModel.ToModel()
	res, info := porcupine.CheckOperationsVerbose(m, history, timeout)
	rep := &LinearizabilityReport{Result: res, Operations: len(history), model: m, info: info}
	return verdict(res, m, history, timeout), rep
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
			return part[0].Input.(linInput).ID
		}
	}
	return ""
}

func illegalDetail(m porcupine.Model, history []porcupine.Operation) string {
	for _, part := range m.Partition(history) {
		if porcupine.CheckOperations(m, part) {
			continue
		}
		ops := slices.Clone(part)
		slices.SortFunc(ops, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
		var b strings.Builder
		fmt.Fprintf(&b, ": operation %s saw", ops[0].Input.(linInput).ID)
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
