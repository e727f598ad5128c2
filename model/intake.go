package model

import (
	"fmt"
	"math"
	"strings"

	"sluicesim/sluice"
)

// CheckIntakeUniqueness checks that intake kept one row per operation id and
// told every client the truth about it, judged against what each client
// sent (its own strings, read by the model's reference code), never against
// production's request hash or parser.
//
//   - Operation ids are unique among the rows, and every row has exactly one
//     creation event (From None).
//   - At most one client is told it created a given id.
//   - A Created or Replayed answer is for the payload sent: the client's
//     payload is valid, the row holds that very instruction (recipient,
//     amount in base units, asset), and the answer's body shows it. A created
//     row is in state requested; a replay shows a state the operation
//     actually passed through.
//   - A Conflict was refused rightly (the payload sent is valid and differs
//     from the row's) and changed nothing: the row still holds its creator's
//     instruction.
//   - Invalid is the answer exactly for payloads the model reads as
//     invalid, and an invalid request never leaves a row that no valid
//     request could have created.
//   - Unfunded (the customer's balance did not cover the amount) is an
//     answer only to a valid payload (validation comes first), and it
//     stores nothing: a row that only an Unfunded request could have made
//     is one no recorded request created (below). Whether the id was free
//     at the refusal is linearizability's to judge. And it is never the
//     answer for a customer whose deposits cover every withdrawal any row
//     holds for them plus this one: at every instant after the deposits,
//     such a customer's balance covered the amount (holds and payments only
//     ever take what some row asks for; see refusedWrongly).
//   - When intake was recorded at all, every row was created by a recorded
//     request: one told Created, or one that failed (its answer lost, so its
//     insert may have committed) with the row's instruction.
func CheckIntakeUniqueness(s *Snapshot) []Violation {
	var vs []Violation
	add := func(id sluice.OperationID, format string, args ...any) {
		vs = append(vs, Violation{Invariant: IntakeUniqueness, Operation: id, Message: fmt.Sprintf(format, args...)})
	}

	rowCount := make(map[sluice.OperationID]int)
	for _, op := range s.Operations {
		rowCount[op.ID]++
	}
	rows := rowsByID(s)
	creations := make(map[sluice.OperationID]int)
	visited := make(map[sluice.OperationID]map[sluice.State]bool)
	for _, e := range s.Events {
		if e.From == sluice.None {
			creations[e.OperationID]++
		}
		if visited[e.OperationID] == nil {
			visited[e.OperationID] = make(map[sluice.State]bool)
		}
		visited[e.OperationID][e.To] = true
	}
	byKey := make(map[sluice.OperationID][]IntakeRecord)
	for _, r := range s.Intake {
		byKey[opKey(r.ID)] = append(byKey[opKey(r.ID)], r)
	}
	funds := readFunds(s)

	// Each record on its own.
	for _, r := range s.Intake {
		id := opKey(r.ID)
		row := rows[id]
		who := fmt.Sprintf("client %s (call %d)", r.Client, r.Call)
		sent, sentBad := s.sentIntent(&r)
		switch r.Outcome {
		case Created, Replayed:
			if sentBad != "" {
				add(id, "%s sent an invalid payload under id %q (%s) and was told %s", who, r.ID, sentBad, r.Outcome)
				break
			}
			if row == nil {
				add(id, "%s was told op %s was %s, but no row exists", who, id, r.Outcome)
			} else if held := rowIntent(row); !SameInstruction(held, sent) {
				add(id, "%s sent %s for op %s and was told %s, but the row holds %s", who, describeOrder(sent), id, r.Outcome, describeOrder(held))
			}
			if shown, bad := s.intent(r.Answer); bad != "" {
				add(id, "%s was told op %s was %s with a payload the model cannot read (%s)", who, id, r.Outcome, bad)
			} else if !SameInstruction(shown, sent) {
				add(id, "%s sent %s for op %s and was told %s with %s: a %s answer returns the payload sent",
					who, describeOrder(sent), id, r.Outcome, describeOrder(shown), r.Outcome)
			}
			switch {
			case r.Outcome == Created && r.State != sluice.Requested:
				add(id, "%s was told op %s was created in state %s, want requested", who, id, r.State)
			case r.Outcome == Replayed && row != nil && !visited[id][r.State]:
				add(id, "%s was told op %s is %s, a state its log never entered", who, id, r.State)
			}
		case Conflict:
			switch {
			case sentBad != "":
				add(id, "%s sent an invalid payload under id %q (%s) and was told conflict, not invalid", who, r.ID, sentBad)
			case row == nil:
				add(id, "%s was refused op %s as a conflict (sent %s), but no row exists", who, id, describeOrder(sent))
			case SameInstruction(rowIntent(row), sent):
				add(id, "%s was refused op %s as a conflict, but sent the stored instruction %s: the refusal was wrong", who, id, describeOrder(sent))
			}
		case Unfunded:
			switch {
			case sentBad != "":
				add(id, "%s sent an invalid payload under id %q (%s) and was told unfunded, not invalid", who, r.ID, sentBad)
			case funds.refusedWrongly(sent):
				add(id, "%s was refused %d units for customer %s as unfunded, but the customer's deposits (%d units) cover that and every withdrawal any row holds for them (%d units)",
					who, sent.Units, sent.Customer, funds.deposited[sent.Customer], funds.committed[sent.Customer])
			}
		case Invalid:
			if sentBad == "" {
				add(id, "%s sent a valid payload (%s) and was refused as invalid", who, describeOrder(sent))
			}
			if row != nil && !couldCreate(s, byKey[id], row) {
				add(id, "%s sent an invalid request for id %q, and op %s exists although no valid request created it", who, r.ID, id)
			}
		case Failed:
			// The answer is unknown: the insert may or may not have
			// committed, and nothing was promised.
		default:
			add(id, "%s for id %q has %s: the world recorded no outcome", who, r.ID, r.Outcome)
		}
	}

	// Each id across its records.
	for _, id := range sortedKeys(byKey) {
		var created []IntakeRecord
		for _, r := range byKey[id] {
			if r.Outcome == Created {
				created = append(created, r)
			}
		}
		if len(created) > 1 {
			clients := make([]string, len(created))
			for i, r := range created {
				clients[i] = fmt.Sprintf("%s (call %d)", r.Client, r.Call)
			}
			add(id, "op %s was created %d times: %s", id, len(created), strings.Join(clients, ", "))
		}
		if row := rows[id]; row != nil && len(created) > 0 {
			if want, bad := s.sentIntent(&created[0]); bad == "" && !SameInstruction(rowIntent(row), want) {
				add(id, "op %s holds %s, not %s that its creator %s (call %d) sent",
					id, describeOrder(rowIntent(row)), describeOrder(want), created[0].Client, created[0].Call)
			}
		}
	}

	// Each row.
	reported := make(map[sluice.OperationID]bool)
	for _, op := range s.Operations {
		if reported[op.ID] {
			continue
		}
		reported[op.ID] = true
		if n := rowCount[op.ID]; n > 1 {
			add(op.ID, "op %s has %d rows", op.ID, n)
		}
		if n := creations[op.ID]; n != 1 {
			add(op.ID, "op %s has %d creation events, want 1", op.ID, n)
		}
		if len(s.Intake) > 0 && !couldCreate(s, byKey[op.ID], &op) {
			add(op.ID, "op %s (%s) exists, but no recorded request created it", op.ID, describeOrder(rowIntent(&op)))
		}
	}
	return finish(vs)
}

// describeOrder is describeIntent with the customer who pays: in intake's
// messages the customer may be all that tells two instructions apart.
func describeOrder(in Intent) string {
	return describeIntent(in) + " from customer " + string(in.Customer)
}

// fundsBound is, per customer, what the world deposited and the most that
// holds and payments can ever have taken from it: the sum of the amounts
// of every row that names the customer (a row holds its amount at most
// once, from its creation; nothing else takes money from a balance).
type fundsBound struct {
	deposited, committed map[sluice.CustomerID]uint64
	recorded             bool // the snapshot carries the world's deposits
}

func readFunds(s *Snapshot) fundsBound {
	f := fundsBound{deposited: map[sluice.CustomerID]uint64{}, committed: map[sluice.CustomerID]uint64{}, recorded: s.Deposits != nil}
	for _, d := range s.Deposits {
		f.deposited[d.Customer] = addSat(f.deposited[d.Customer], uint64(d.Amount))
	}
	for _, op := range s.Operations {
		f.committed[op.Request.Customer] = addSat(f.committed[op.Request.Customer], uint64(op.Request.Amount))
	}
	return f
}

// refusedWrongly reports whether an Unfunded answer to in was wrong: the
// customer's deposits cover in's amount on top of every amount a row holds
// for the customer, so the balance covered it at every instant after the
// deposits. It takes the deposits to precede every post, as the worlds and
// the live check make them (before any client starts); a snapshot without
// recorded deposits (nil) judges nothing.
func (f fundsBound) refusedWrongly(in Intent) bool {
	need := addSat(f.committed[in.Customer], in.Units)
	if !f.recorded || need == math.MaxUint64 {
		return false // nothing recorded, or a need too large to judge
	}
	return f.deposited[in.Customer] >= need
}

// addSat is a + b, saturating, so that a sum past 2^64 (some 18,000
// deposits of the largest amount) cannot wrap round to a small one. A
// saturated deposit total still compares right with any need below it.
func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// couldCreate reports whether one of the records may have created row: one
// told Created, or one whose answer was lost and whose valid payload is the
// row's instruction.
func couldCreate(s *Snapshot, records []IntakeRecord, row *sluice.Operation) bool {
	for _, r := range records {
		if r.Outcome == Created {
			return true
		}
		if r.Outcome == Failed {
			if in, bad := s.sentIntent(&r); bad == "" && SameInstruction(in, rowIntent(row)) {
				return true
			}
		}
	}
	return false
}
