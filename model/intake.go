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
//     request could have created. A refusal that names a field
//     (IntakeRecord.Field) names one at fault (BlameOf).
//   - Unfunded (the customer's balance did not cover the amount) is an
//     answer only to a valid payload (validation comes first), and it
//     stores nothing: a row that only an Unfunded request could have made
//     is one no recorded request created (below). Whether the id was free
//     at the refusal is linearizability's to judge. And it is never the
//     answer for a customer whose deposits made before the call (a late
//     deposit counts from its Tick) cover every withdrawal any row
//     holds for them plus this one: at every instant after the deposits,
//     such a customer's balance covered the amount (holds and payments only
//     ever take what some row asks for; see refusedWrongly). When the world
//     bounded the call in the log (IntakeRecord.Bounded), it is never the
//     answer while the model's own books (the deposits, the intents' holds
//     and the releases, as funds replays them) had the customer's balance
//     at or above the amount at every event from the call to the answer:
//     money a release gave back must be there to hold again.
//   - Failed (the outcome unknown) is an answer only when the world failed
//     one of the request's store calls (IntakeRecord.StoreFailed), or the
//     client heard nothing.
//   - When intake was recorded at all, every row was created by a recorded
//     request: one told Created, or one that failed (its answer lost, so its
//     insert may have committed) with the row's instruction.
func CheckIntakeUniqueness(s *Snapshot) []Violation {
	s = withMemo(s)
	var vs []Violation
	add := func(id sluice.OperationID, format string, args ...any) {
		vs = append(vs, Violation{Invariant: IntakeUniqueness, Operation: id, Message: fmt.Sprintf(format, args...)})
	}

	ix := s.index()
	// The records by the id they name: group g's records are
	// recPos[recStart[g]:recStart[g+1]], in record order.
	group := make(map[sluice.OperationID]int32, len(s.Operations))
	groupIDs := make([]sluice.OperationID, 0, len(s.Intake)) // by group: first-seen order
	recGroup := make([]int32, len(s.Intake))
	for i, id := range ix.intakeKey {
		g, ok := group[id]
		if !ok {
			g = int32(len(groupIDs))
			group[id] = g
			groupIDs = append(groupIDs, id)
		}
		recGroup[i] = g
	}
	recPos, recStart := groupBy(recGroup, len(groupIDs))
	byKey := func(id sluice.OperationID) []int32 {
		g, ok := group[id]
		if !ok {
			return nil
		}
		return recPos[recStart[g]:recStart[g+1]]
	}
	// visited reports whether id's log ever entered state st.
	visited := func(id sluice.OperationID, st sluice.State) bool {
		k, ok := ix.slot[id]
		return ok && ix.visited[k][st/64]&(1<<(st%64)) != 0
	}
	var funds *fundsBound  // read on first use: only an unfunded answer needs it
	var books *ledgerBooks // likewise, for a bounded one

	// Each record on its own.
	for i := range s.Intake {
		r := &s.Intake[i]
		id := ix.intakeKey[i]
		row := ix.row(s, id)
		who := lazyWho{r.Client, r.Call}
		sent, sentBad := ix.sentOf(i).in, ix.sentOf(i).bad
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
			if shown, bad := ix.answerOf(i).in, ix.answerOf(i).bad; bad != "" {
				add(id, "%s was told op %s was %s with a payload the model cannot read (%s)", who, id, r.Outcome, bad)
			} else if !SameInstruction(shown, sent) {
				add(id, "%s sent %s for op %s and was told %s with %s: a %s answer returns the payload sent",
					who, describeOrder(sent), id, r.Outcome, describeOrder(shown), r.Outcome)
			}
			switch {
			case r.Outcome == Created && r.State != sluice.Requested:
				add(id, "%s was told op %s was created in state %s, want requested", who, id, r.State)
			case r.Outcome == Created && r.Txid != "":
				add(id, "%s was told op %s was created with txid %s, but a new operation has none", who, id, short(r.Txid))
			case r.Outcome == Replayed && row != nil && !visited(id, r.State):
				add(id, "%s was told op %s is %s, a state its log never entered", who, id, r.State)
			case r.Outcome == Replayed && row != nil && !ix.enteredWith(s, id, r.State, r.Txid):
				// Each event carries the txid in force after it.
				add(id, "%s was told op %s is %s with txid %s, but its log never entered %s with that txid", who, id, r.State, short(r.Txid), r.State)
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
			if funds == nil {
				f := readFunds(s)
				funds = &f
			}
			switch {
			case sentBad != "":
				add(id, "%s sent an invalid payload under id %q (%s) and was told unfunded, not invalid", who, r.ID, sentBad)
			case funds.refusedWrongly(s, sent, r.Call):
				add(id, "%s was refused %d units for customer %s as unfunded, but the customer's deposits before the call (%d units) cover that and every withdrawal any row holds for them (%d units)",
					who, sent.Units, sent.Customer, addSat(funds.deposited[sent.Customer], s.depositedByTick(sent.Customer, r.Call)), funds.committed[sent.Customer])
			case r.Bounded && funds.recorded && sent.Units <= math.MaxInt64:
				if books == nil {
					b := readBooks(s)
					books = &b
				}
				// A late deposit made before the call is in the balance at
				// every event of it (it came before SeqAtCall's successor);
				// one made during the call may have come after the check.
				least := books.least(sent.Customer, r.SeqAtCall, r.SeqAtReturn)
				if late := s.depositedByTick(sent.Customer, r.Call); late <= math.MaxInt64-uint64(max(least, 0)) {
					least += int64(late)
				}
				if least >= int64(sent.Units) {
					add(id, "%s was refused %d units for customer %s as unfunded, but by the model's books the customer's balance was at least %d units from event #%d to event #%d, the whole call",
						who, sent.Units, sent.Customer, least, r.SeqAtCall, r.SeqAtReturn)
				}
			}
		case Invalid:
			if sentBad == "" {
				add(id, "%s sent a valid payload (%s) and was refused as invalid", who, describeOrder(sent))
			} else if !namesAFault(r, sentBad) {
				add(id, "%s sent an invalid request under id %q (%s) and was refused naming the field %q, which is not at fault", who, r.ID, sentBad, r.Field)
			}
			if row != nil && !couldCreate(s, ix, byKey(id), row) {
				add(id, "%s sent an invalid request for id %q, and op %s exists although no valid request created it", who, r.ID, id)
			}
		case Failed:
			// The answer is unknown: the insert may or may not have
			// committed, and nothing was promised. That is an answer
			// for a store that failed under the request (a 503), or for
			// a client that heard nothing; anything else the world saw
			// was owed the truth.
			switch {
			case r.Status == 0:
			case r.Status < 500:
				add(id, "%s for id %q was answered %d, a status intake does not give a POST", who, r.ID, r.Status)
			case !r.StoreFailed:
				add(id, "%s for id %q was answered %d with no store failure to blame: told nothing where intake could have answered", who, r.ID, r.Status)
			}
		default:
			add(id, "%s for id %q has %s: the world recorded no outcome", who, r.ID, r.Outcome)
		}
	}

	// Each id across its records.
	for g, id := range groupIDs {
		first := -1 // the first record told Created
		n := 0
		for _, i := range recPos[recStart[g]:recStart[g+1]] {
			if s.Intake[i].Outcome == Created {
				if n++; n == 1 {
					first = int(i)
				}
			}
		}
		if n > 1 {
			var created []IntakeRecord
			for _, i := range recPos[recStart[g]:recStart[g+1]] {
				if s.Intake[i].Outcome == Created {
					created = append(created, s.Intake[i])
				}
			}
			clients := make([]string, len(created))
			for i, r := range created {
				clients[i] = fmt.Sprintf("%s (call %d)", r.Client, r.Call)
			}
			add(id, "op %s was created %d times: %s", id, len(created), strings.Join(clients, ", "))
		}
		if row := ix.row(s, id); row != nil && first >= 0 {
			if want, bad := ix.sentOf(first).in, ix.sentOf(first).bad; bad == "" && !SameInstruction(rowIntent(row), want) {
				add(id, "op %s holds %s, not %s that its creator %s (call %d) sent",
					id, describeOrder(rowIntent(row)), describeOrder(want), s.Intake[first].Client, s.Intake[first].Call)
			}
		}
	}

	// Each row.
	reported := make([]bool, len(ix.ids)) // by slot
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if reported[k] {
			continue
		}
		reported[k] = true
		if n := ix.rowStart[k+1] - ix.rowStart[k]; n > 1 {
			add(op.ID, "op %s has %d rows", op.ID, n)
		}
		if n := ix.creations[k]; n != 1 {
			add(op.ID, "op %s has %d creation events, want 1", op.ID, n)
		}
		if len(s.Intake) > 0 && !couldCreate(s, ix, byKey(op.ID), op) {
			add(op.ID, "op %s (%s) exists, but no recorded request created it", op.ID, describeOrder(rowIntent(op)))
		}
	}
	return finish(vs)
}

// lazyWho names a client's request in messages ("client c3 (call 17)"),
// formatted only when printed.
type lazyWho struct {
	client string
	call   int64
}

func (w lazyWho) String() string { return fmt.Sprintf("client %s (call %d)", w.client, w.call) }

// describeOrder is describeIntent with the customer who pays: in intake's
// messages the customer may be all that tells two instructions apart.
func describeOrder(in Intent) string {
	return describeIntent(in) + " from customer " + string(in.Customer)
}

// fundsBound is, per customer, what the world deposited before any process
// ran (the late deposits are counted per call) and the most that
// holds and payments can ever have taken from it: the sum of the amounts
// of every row that names the customer (a row holds its amount at most
// once, from its creation; nothing else takes money from a balance), each
// the amount and customer its client asked for (the row's own only when no
// client is known: a store with a wrong scale holds ten times as much, and
// its refusals must not look right for it).
type fundsBound struct {
	deposited, committed map[sluice.CustomerID]uint64
	recorded             bool // the snapshot carries the world's deposits
}

func readFunds(s *Snapshot) fundsBound {
	f := fundsBound{deposited: map[sluice.CustomerID]uint64{}, committed: map[sluice.CustomerID]uint64{}, recorded: s.Deposits != nil || s.LateDeposits != nil}
	for _, d := range s.Deposits {
		f.deposited[d.Customer] = addSat(f.deposited[d.Customer], uint64(d.Amount))
	}
	meant, ix := intents(s), s.index()
	for i := range s.Operations {
		h := wantHold(s, meant, ix, s.Operations[i].ID)
		f.committed[h.customer] = addSat(f.committed[h.customer], uint64(h.amount))
	}
	return f
}

// refusedWrongly reports whether an Unfunded answer to in, called at the
// logical clock's call, was wrong: the customer's deposits made before the
// call cover in's amount on top of every amount a row holds for the
// customer, so the balance covered it at every instant of the call. The
// deposits made before any process (Deposits) precede every post; a late
// one counts only if it took effect before the call began. A snapshot
// without recorded deposits (nil) judges nothing.
func (f fundsBound) refusedWrongly(s *Snapshot, in Intent, call int64) bool {
	need := addSat(f.committed[in.Customer], in.Units)
	if !f.recorded || need == math.MaxUint64 {
		return false // nothing recorded, or a need too large to judge
	}
	return addSat(f.deposited[in.Customer], s.depositedByTick(in.Customer, call)) >= need
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
// The records are positions in Intake.
func couldCreate(s *Snapshot, ix *index, records []int32, row *sluice.Operation) bool {
	for _, i := range records {
		switch s.Intake[i].Outcome {
		case Created:
			return true
		case Failed:
			if rd := ix.sentOf(int(i)); rd.bad == "" && SameInstruction(rd.in, rowIntent(row)) {
				return true
			}
		}
	}
	return false
}
