package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
)

// CheckFunds checks the customers' money: for every customer, balance +
// held + paid out = what was deposited, at every point of the run and at
// the end; no hold closed twice; no hold left open on an operation that is
// confirmed, failed or rejected; every hold carrying the numbers its client
// asked for.
//
// The model computes the ledger itself, never from the store's accounts:
//
//   - Deposits are the world's own record of the credits it made. The
//     store's Deposited must equal them (a credit nobody made, say a
//     release paid out twice, shows here). Those made while the processes
//     ran (LateDeposits) count from where they took effect: before the
//     next event of the log, and in each reading taken after them.
//   - At every point: the world reads each account after every write that
//     touches money; each reading must add up (LedgerBreaks) and equal the
//     model's own books at that point of the log (LedgerReadings: the
//     replay below, deposits and intents, so a store that moves money
//     early, late or twice and puts it right before the end shows); and
//     the model replays the event log in Seq order: a creation holds its
//     client's amount (refused if the
//     balance could not cover it: an overdraft), an event that closes the
//     hold settles or releases it, and a second close, a close on an event
//     that does not enter confirmed, failed or rejected, a settle that does
//     not enter confirmed or a release that enters confirmed are each a
//     violation. Entering confirmed, failed or rejected without a close
//     leaves a hold on a terminal operation.
//   - At the end: each customer's expected numbers follow from the rows'
//     states and the clients' intents alone (paid: confirmed; held: open or
//     in review; balance: the rest of the deposits), and the store's account
//     must equal them to the unit; each operation's hold must exist, carry
//     its intent's customer and amount, and be settled exactly when the row
//     is confirmed, released exactly when failed or rejected, held
//     otherwise. Whether a confirmed operation really paid, and a failed one
//     really moved nothing, is the chain's to say: conservation and
//     at-most-once check that against the ledger of the chain, so that a
//     settled hold stands for money that moved and a released one for money
//     that did not.
func CheckFunds(s *Snapshot) []Violation {
	s = withMemo(s)
	var vs []Violation
	add := func(id sluice.OperationID, format string, args ...any) {
		vs = append(vs, Violation{Invariant: Funds, Operation: id, Message: fmt.Sprintf(format, args...)})
	}
	if len(s.Deposits) == 0 && len(s.LateDeposits) == 0 && len(s.Accounts) == 0 && len(s.Holds) == 0 && len(s.LedgerBreaks) == 0 {
		// A snapshot without a ledger (hand-built, or from before holds):
		// nothing to judge. One whose reader saw the ledger break (an
		// audit that found rows and no ledger at all) is judged.
		return nil
	}
	for _, b := range s.LedgerBreaks {
		add("", "the store's ledger did not add up %s", b)
	}
	if len(s.LedgerReadings) > 0 {
		// Every account the world read after a write must be the model's
		// books at that point of the log: a store whose numbers add up but
		// are not yet (or no longer) what the log says shows here, even if
		// it puts them right before the end. The first divergence of each
		// customer is reported.
		books := readBooks(s)
		deposited := make(map[sluice.CustomerID]int64)
		for _, d := range s.Deposits {
			deposited[d.Customer] += int64(d.Amount)
		}
		off := make(map[sluice.CustomerID]bool)
		for _, r := range s.LedgerReadings {
			a := r.Account
			if off[a.Customer] {
				continue
			}
			// A late deposit only adds to the balance: where it fell among
			// the events does not change the sum at the reading.
			l, late := books.at(a.Customer, r.Seq), s.depositedBefore(a.Customer, r.LateDeposits)
			l.balance += late
			if int64(a.Balance) != l.balance || int64(a.Held) != l.held || int64(a.Paid) != l.paid || int64(a.Deposited) != deposited[a.Customer]+late {
				off[a.Customer] = true
				mid := ""
				if r.LateDeposits > 0 {
					mid = fmt.Sprintf(" (after %d deposits made mid-run)", r.LateDeposits)
				}
				add("", "customer %s: just after event #%d%s the store's account was balance %d, held %d, paid %d, deposited %d; by the model's books at that event it must be balance %d, held %d, paid %d, deposited %d",
					a.Customer, r.Seq, mid, a.Balance, a.Held, a.Paid, a.Deposited, l.balance, l.held, l.paid, deposited[a.Customer]+late)
			}
		}
	}

	deposited := make(map[sluice.CustomerID]money.Amount)
	for _, d := range s.Deposits {
		deposited[d.Customer] += d.Amount
	}
	// The replay starts from the deposits made before any process and
	// adds each late one before the first event after it.
	startDeposited := maps.Clone(deposited)
	for _, d := range s.LateDeposits {
		deposited[d.Credit.Customer] += d.Credit.Amount
	}
	late := slices.SortedStableFunc(slices.Values(s.LateDeposits), func(a, b LateDeposit) int { return cmp.Compare(a.AfterSeq, b.AfterSeq) })
	meant := intents(s)
	ix := s.index()
	want := func(id sluice.OperationID) holdWant { return wantHold(s, meant, ix, id) }

	// The replay: every point of the run, in the log's order.
	type ledger struct{ balance, held, paid int64 }
	books := make(map[sluice.CustomerID]*ledger)
	book := func(c sluice.CustomerID) *ledger {
		if books[c] == nil {
			books[c] = &ledger{balance: int64(startDeposited[c])}
		}
		return books[c]
	}
	// How each operation's hold was closed (HoldKeep: not yet), and by
	// which event; by slot.
	closed := make([]sluice.HoldAction, len(ix.ids))
	closedAt := make([]int64, len(ix.ids))
	for i := range s.Events {
		e := &s.Events[i]
		for len(late) > 0 && late[0].AfterSeq < e.Seq {
			book(late[0].Credit.Customer).balance += int64(late[0].Credit.Amount)
			late = late[1:]
		}
		id, k := e.OperationID, ix.evSlot[i]
		at := lazyAt{id, e}
		if e.From == sluice.None {
			h := want(id)
			l := book(h.customer)
			if l.balance < int64(h.amount) {
				add(id, "%s holds %d units of customer %s, whose balance was only %d: an overdraft", at, h.amount, h.customer, l.balance)
			}
			l.balance -= int64(h.amount)
			l.held += int64(h.amount)
			continue
		}
		entersClose := e.To == sluice.Confirmed || e.To == sluice.Failed || e.To == sluice.Rejected
		switch {
		case e.Hold == sluice.HoldKeep && entersClose && e.From != e.To:
			add(id, "%s enters %s but leaves the hold open", at, e.To)
		case e.Hold == sluice.HoldKeep:
		case !entersClose:
			add(id, "%s %ss the hold without entering confirmed, failed or rejected", at, e.Hold)
		case closed[k] != sluice.HoldKeep:
			add(id, "%s %ss the hold a second time (already %sd at event #%d)", at, e.Hold, closed[k], closedAt[k])
		case e.Hold == sluice.HoldSettle && e.To != sluice.Confirmed:
			add(id, "%s settles the hold (the customer pays) without a confirmation", at)
		case e.Hold == sluice.HoldRelease && e.To == sluice.Confirmed:
			add(id, "%s releases the hold (the customer is refunded) on a confirmation", at)
		}
		if e.Hold == sluice.HoldKeep || closed[k] != sluice.HoldKeep {
			continue
		}
		closed[k], closedAt[k] = e.Hold, e.Seq
		h := want(id)
		l := book(h.customer)
		l.held -= int64(h.amount)
		if e.Hold == sluice.HoldSettle {
			l.paid += int64(h.amount)
		} else {
			l.balance += int64(h.amount)
		}
	}

	// The end: the model's own books from states and intents.
	expect := make(map[sluice.CustomerID]*ledger)
	for c, d := range deposited {
		expect[c] = &ledger{balance: int64(d)}
	}
	holds := make(map[sluice.OperationID]sluice.Hold, len(s.Holds))
	for _, h := range s.Holds {
		if _, dup := holds[h.Operation]; dup {
			add(h.Operation, "op %s has two holds", h.Operation)
		}
		holds[h.Operation] = h
	}
	seen := make([]bool, len(ix.ids)) // by slot
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if seen[k] {
			continue
		}
		seen[k] = true
		w := want(op.ID)
		l := expect[w.customer]
		if l == nil {
			l = &ledger{}
			expect[w.customer] = l
		}
		wantState := sluice.HoldHeld
		switch op.State {
		case sluice.Confirmed:
			l.paid += int64(w.amount)
			wantState = sluice.HoldSettled
		case sluice.Failed, sluice.Rejected:
			wantState = sluice.HoldReleased
		default:
			l.held += int64(w.amount)
		}
		if wantState != sluice.HoldReleased {
			l.balance -= int64(w.amount)
		}
		h, ok := holds[op.ID]
		switch {
		case !ok:
			add(op.ID, "op %s (%s) has no hold", op.ID, op.State)
			continue
		case h.Customer != w.customer || h.Amount != w.amount:
			add(op.ID, "op %s's hold is %d units of customer %s, but its client asked for %d units of customer %s",
				op.ID, h.Amount, h.Customer, w.amount, w.customer)
		}
		if h.State != wantState {
			add(op.ID, "op %s is %s but its hold is %s (want %s)", op.ID, op.State, h.State, wantState)
		}
		delete(holds, op.ID)
	}
	for _, id := range sortedKeys(holdsByID(holds)) {
		add(id, "a hold of %d units of customer %s names operation %s, which has no row", holds[id].Amount, holds[id].Customer, id)
	}

	accounts := make(map[sluice.CustomerID]sluice.Account, len(s.Accounts))
	for _, a := range s.Accounts {
		accounts[a.Customer] = a
	}
	for _, c := range sortedKeys(expect) {
		l, a := expect[c], accounts[c]
		if l.balance < 0 {
			add("", "customer %s: the operations the store accepted hold or paid %d units more than was deposited (%d)", c, -l.balance, deposited[c])
		}
		if a.Deposited != deposited[c] {
			add("", "customer %s: the store says %d units were deposited, the world deposited %d", c, a.Deposited, deposited[c])
		}
		if int64(a.Balance) != l.balance || int64(a.Held) != l.held || int64(a.Paid) != l.paid {
			add("", "customer %s: the store's account is balance %d, held %d, paid %d; by the operations' states it must be balance %d, held %d, paid %d",
				c, a.Balance, a.Held, a.Paid, l.balance, l.held, l.paid)
		}
	}
	for _, c := range sortedKeys(accountsByID(accounts)) {
		if _, ok := expect[c]; ok {
			continue
		}
		// Nothing deposited and no operation: the books are all zeros, and
		// a balance credited without a deposit is money too.
		switch a := accounts[c]; {
		case a.Deposited != 0:
			add("", "customer %s has an account with %d deposited, but the world deposited nothing for it", c, a.Deposited)
		case a.Balance != 0 || a.Held != 0 || a.Paid != 0:
			add("", "customer %s has an account of balance %d, held %d, paid %d, deposited 0, but the world deposited nothing for it and no operation holds or pays from it",
				c, a.Balance, a.Held, a.Paid)
		}
	}
	return finish(vs)
}

func holdsByID(m map[sluice.OperationID]sluice.Hold) map[sluice.OperationID]bool {
	out := make(map[sluice.OperationID]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func accountsByID(m map[sluice.CustomerID]sluice.Account) map[sluice.CustomerID]bool {
	out := make(map[sluice.CustomerID]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// holdWant is the hold an operation must carry: its client's customer and
// amount.
type holdWant struct {
	customer sluice.CustomerID
	amount   money.Amount
}

// wantHold is id's holdWant: from its client's intent, the row's request
// only when no client is known.
func wantHold(s *Snapshot, meant *intentsByID, ix *index, id sluice.OperationID) holdWant {
	if in, ok := meant.of(id); ok {
		return holdWant{in.Customer, money.Amount(in.Units)}
	}
	if row := ix.row(s, id); row != nil {
		return holdWant{row.Request.Customer, row.Request.Amount}
	}
	return holdWant{}
}

// ledgerPoint is a customer's books just after the event Seq.
type ledgerPoint struct{ seq, balance, held, paid int64 }

// ledgerBooks is every customer's ledger through the run by the model's own
// books, as funds replays them: the world's deposits (made before any
// client posts) in the balance, each creation moving its amount from the
// balance to held, each hold's first close moving it from held to the
// balance (a release) or to paid (a settle); amounts and customers are the
// clients' intents. start is the balance before the first event, points
// each change in Seq order.
type ledgerBooks struct {
	start  map[sluice.CustomerID]int64
	points map[sluice.CustomerID][]ledgerPoint
}

func readBooks(s *Snapshot) ledgerBooks {
	b := ledgerBooks{start: map[sluice.CustomerID]int64{}, points: map[sluice.CustomerID][]ledgerPoint{}}
	for _, d := range s.Deposits {
		b.start[d.Customer] += int64(d.Amount)
	}
	meant := intents(s)
	ix := s.index()
	cur := make(map[sluice.CustomerID]ledgerPoint, len(b.start))
	for c, d := range b.start {
		cur[c] = ledgerPoint{balance: d}
	}
	closed := make([]bool, len(ix.ids)) // by slot: the hold's first close seen
	for i := range s.Events {
		e := &s.Events[i]
		if e.From != sluice.None && (e.Hold == sluice.HoldKeep || closed[ix.evSlot[i]]) {
			continue
		}
		h := wantHold(s, meant, ix, e.OperationID)
		if h.customer == "" {
			continue
		}
		l, a := cur[h.customer], int64(h.amount)
		switch {
		case e.From == sluice.None:
			l.balance, l.held = l.balance-a, l.held+a
		case e.Hold == sluice.HoldSettle:
			closed[ix.evSlot[i]] = true
			l.held, l.paid = l.held-a, l.paid+a
		default:
			closed[ix.evSlot[i]] = true
			l.held, l.balance = l.held-a, l.balance+a
		}
		l.seq = e.Seq
		cur[h.customer] = l
		b.points[h.customer] = append(b.points[h.customer], l)
	}
	return b
}

// at is c's books just after the event seq.
func (b ledgerBooks) at(c sluice.CustomerID, seq int64) ledgerPoint {
	l := ledgerPoint{seq: seq, balance: b.start[c]}
	for _, p := range b.points[c] {
		if p.seq > seq {
			break
		}
		l = p
	}
	l.seq = seq
	return l
}

// least is c's lowest balance from just after the event lo to just after
// the event hi: the balance any step between them could have seen.
func (b ledgerBooks) least(c sluice.CustomerID, lo, hi int64) int64 {
	least := b.at(c, lo).balance
	for _, p := range b.points[c] {
		if p.seq > lo && p.seq <= hi {
			least = min(least, p.balance)
		}
	}
	return least
}
