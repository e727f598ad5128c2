package model

import (
	"fmt"
	"strings"

	"sluicesim/sluice"
)

// CheckIntakeUniqueness checks that intake kept one row per operation id and
// told every client the truth about it.
//
//   - Operation ids are unique among the rows, and every row has exactly one
//     creation event (From None).
//   - At most one client is told it created a given id.
//   - A Created or Replayed answer returned the stored row: its hash is the
//     row's. A created row is in state requested; a replay returns the
//     original payload (the record's own hash) in a state the operation
//     actually passed through.
//   - A Conflict was refused rightly (the payload differs from the row's)
//     and changed nothing: the row still holds its creator's payload.
//   - An invalid payload is never accepted, and an invalid request never
//     leaves a row that no valid request could have created.
//   - When intake was recorded at all, every row was created by a recorded
//     request: one told Created, or one that failed (its answer lost, so its
//     insert may have committed) with the row's payload.
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

	// Each record on its own.
	for _, r := range s.Intake {
		id := opKey(r.ID)
		row := rows[id]
		who := fmt.Sprintf("client %s (call %d)", r.Client, r.Call)
		switch r.Outcome {
		case Created, Replayed:
			if r.RequestHash == "" {
				add(id, "%s sent an invalid payload under id %q and was told %s", who, r.ID, r.Outcome)
			}
			switch {
			case row == nil:
				add(id, "%s was told op %s was %s (payload %s), but no row exists", who, id, r.Outcome, shortHash(r.Returned))
			case r.Returned != row.RequestHash:
				add(id, "%s was told op %s was %s with payload %s, but the row holds %s", who, id, r.Outcome, shortHash(r.Returned), shortHash(row.RequestHash))
			}
			if r.RequestHash != "" && r.Returned != r.RequestHash {
				add(id, "%s sent payload %s for op %s and was told %s with payload %s: a %s answer returns the payload sent",
					who, shortHash(r.RequestHash), id, r.Outcome, shortHash(r.Returned), r.Outcome)
			}
			switch {
			case r.Outcome == Created && r.State != sluice.Requested:
				add(id, "%s was told op %s was created in state %s, want requested", who, id, r.State)
			case r.Outcome == Replayed && row != nil && !visited[id][r.State]:
				add(id, "%s was told op %s is %s, a state its log never entered", who, id, r.State)
			}
		case Conflict:
			switch {
			case row == nil:
				add(id, "%s was refused op %s as a conflict (payload %s), but no row exists", who, id, shortHash(r.RequestHash))
			case r.RequestHash == row.RequestHash:
				add(id, "%s was refused op %s as a conflict, but sent the stored payload %s: the refusal was wrong", who, id, shortHash(r.RequestHash))
			}
		case Invalid:
			if row != nil && !couldCreate(byKey[id], row) {
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
				clients[i] = fmt.Sprintf("%s (call %d, payload %s)", r.Client, r.Call, shortHash(r.RequestHash))
			}
			add(id, "op %s was created %d times: %s", id, len(created), strings.Join(clients, ", "))
		}
		if row := rows[id]; row != nil && len(created) > 0 && row.RequestHash != created[0].RequestHash {
			add(id, "op %s holds payload %s, not %s of its creator %s (call %d): a later request changed the row",
				id, shortHash(row.RequestHash), shortHash(created[0].RequestHash), created[0].Client, created[0].Call)
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
		if len(s.Intake) > 0 && !couldCreate(byKey[op.ID], &op) {
			add(op.ID, "op %s (payload %s) exists, but no recorded request created it", op.ID, shortHash(op.RequestHash))
		}
	}
	return finish(vs)
}

// couldCreate reports whether one of the records may have created row: one
// told Created, or one whose answer was lost and whose payload is the row's.
func couldCreate(records []IntakeRecord, row *sluice.Operation) bool {
	for _, r := range records {
		if r.Outcome == Created || (r.Outcome == Failed && r.RequestHash != "" && r.RequestHash == row.RequestHash) {
			return true
		}
	}
	return false
}
