package mocknode

import (
	"fmt"
	"strings"

	"sluicesim/sluice/tron"
)

// ExecRequest is what the execution hook sees: a USDT transfer about to
// succeed in a block. The hook is asked only when the transfer would succeed
// as asked (no SetOutcome override, the owner can pay the amount), once per
// inclusion: a transaction re-included after a reorg is asked again.
type ExecRequest struct {
	Txid    tron.Txid
	Block   tron.Block   // the including block
	Owner   tron.Address // who signs and pays (the hot wallet)
	To      tron.Address // the recipient the call data names
	Amount  uint64       // the amount the call data names
	Balance uint64       // the owner's balance before this transaction
	Reorged bool         // the transaction was on a block a reorg orphaned
}

// Log is the Transfer log the exact execution emits: the one a confirmation
// check looks for. A world builds lies from it.
func (r ExecRequest) Log() tron.Log {
	return tron.TransferLog(tron.USDTContract, r.Owner, r.To, r.Amount)
}

// Execution is what a successful USDT transfer really does, and what the node
// reports of it. The zero Execution is the exact one: the amount moves from
// the owner to the recipient and one Transfer log says so.
//
// Every field but Lie and Logs keeps the logs honest: the USDT Transfer logs
// the node reports describe exactly the movements on the ledger
// (Inclusion.Moved). Lie is the one variant where the node's logs and the
// ledger differ. The fields combine: a fee on a redirected transfer, an
// extra log next to a fee, a lie over any of them; contradictions panic.
type Execution struct {
	// NoTransfer: the receipt is SUCCESS, yet no token moves and no USDT
	// Transfer log is emitted (a contract that returns false instead of
	// reverting, a paused token).
	NoTransfer bool

	// Redirect: the tokens go to To, Amount of them, instead of what the
	// call data asked, and the log says so. If the owner cannot pay
	// Amount the transaction reverts.
	Redirect bool
	To       tron.Address
	Amount   uint64

	// Fee > 0 is a fee-on-transfer: FeeTo gets Fee out of the amount and
	// the recipient the rest; the owner pays the amount. Two logs say so,
	// the fee's first, as TetherToken emits them. Fee may not exceed the
	// amount. A zero Fee charges nothing whatever FeeTo is (TetherToken
	// emits no fee log then), so a world may compute the fee from basis
	// points without a special case for small amounts.
	Fee   uint64
	FeeTo tron.Address

	// Extra are logs emitted by other contracts during the call (a hook on
	// the recipient, a wrapper token), reported before the USDT log(s).
	// They move no USDT; a log with the USDT contract's address panics
	// (that would be a lie: use Lie).
	Extra []tron.Log

	// Lie: the node reports Logs instead of the logs of what really
	// happened. The ledger, Moved and Transfer follow the other fields.
	// Logs without Lie panics, so a lie is never an accident.
	Lie  bool
	Logs []tron.Log
}

// IsExact reports whether e does exactly what was asked and reports exactly
// that: the default execution (or a zero fee).
func (e Execution) IsExact() bool {
	return !e.NoTransfer && !e.Redirect && e.Fee == 0 && len(e.Extra) == 0 && !e.Lie
}

// String is a one-line description for traces: "exact", or the variants,
// e.g. "redirect 5 to T... + fee 1 to T... + lie (1 log)".
func (e Execution) String() string {
	if e.IsExact() {
		return "exact"
	}
	var parts []string
	if e.NoTransfer {
		parts = append(parts, "no transfer")
	}
	if e.Redirect {
		parts = append(parts, fmt.Sprintf("redirect %d to %s", e.Amount, e.To))
	}
	if e.Fee > 0 {
		parts = append(parts, fmt.Sprintf("fee %d to %s", e.Fee, e.FeeTo))
	}
	if len(e.Extra) > 0 {
		parts = append(parts, fmt.Sprintf("%d extra log(s)", len(e.Extra)))
	}
	if e.Lie {
		parts = append(parts, fmt.Sprintf("lie (%d log(s))", len(e.Logs)))
	}
	return strings.Join(parts, " + ")
}

// check panics on an execution that contradicts itself: the hook is the
// world's wiring, and a silent reinterpretation would hide the bug.
func (e Execution) check() {
	bad := func(why string) { panic(fmt.Sprintf("mocknode: execution hook returned %+v: %s", e, why)) }
	if e.NoTransfer && (e.Redirect || e.Fee > 0) {
		bad("NoTransfer moves nothing, so it takes no redirect and no fee")
	}
	if !e.Redirect && (!e.To.IsZero() || e.Amount != 0) {
		bad("To and Amount are for Redirect")
	}
	if e.Redirect && e.To.IsZero() {
		bad("Redirect needs a To")
	}
	if e.Fee > 0 && e.FeeTo.IsZero() {
		bad("a fee needs a FeeTo")
	}
	for _, l := range e.Extra {
		if l.Address == tron.USDTContract.Bytes20() {
			bad("an extra log on the USDT contract would misreport the ledger: use Lie")
		}
	}
	if len(e.Logs) > 0 && !e.Lie {
		bad("Logs are reported only with Lie set")
	}
}

// effects is what e does to a request: the USDT movements on the ledger, in
// order, and the logs the node reports. ok is false when the owner cannot
// pay what really leaves it (a redirect beyond its balance): the contract
// reverts.
func (e Execution) effects(r ExecRequest) (moves []tron.Transfer, logs []tron.Log, ok bool) {
	if e.IsExact() && r.Amount <= r.Balance {
		moves, logs = exactEffects(r.Owner, r.To, r.Amount)
		return moves, logs, true
	}
	logs = cloneLogs(e.Extra)
	if !e.NoTransfer {
		to, amount := r.To, r.Amount
		if e.Redirect {
			to, amount = e.To, e.Amount
		}
		if amount > r.Balance {
			return nil, nil, false
		}
		if e.Fee > amount {
			panic(fmt.Sprintf("mocknode: execution hook returned a fee of %d on a transfer of %d", e.Fee, amount))
		}
		if e.Fee > 0 {
			moves = append(moves, tron.Transfer{Contract: tron.USDTContract, From: r.Owner, To: e.FeeTo, Amount: e.Fee})
		}
		moves = append(moves, tron.Transfer{Contract: tron.USDTContract, From: r.Owner, To: to, Amount: amount - e.Fee})
		for _, m := range moves {
			logs = append(logs, tron.TransferLog(m.Contract, m.From, m.To, m.Amount))
		}
	}
	if e.Lie {
		logs = cloneLogs(e.Logs)
	}
	return moves, logs, true
}

func (e Execution) clone() Execution {
	e.Extra = cloneLogs(e.Extra)
	e.Logs = cloneLogs(e.Logs)
	return e
}

// SetExecution installs the hook asked, at inclusion time, what each
// successful USDT transfer really does (see Execution); nil restores the
// exact execution for every transfer. Without a hook the node behaves as it
// always has.
func (net *Network) SetExecution(hook func(ExecRequest) Execution) { net.exec = hook }

// TransferEnergy is the energy a USDT transfer uses, whatever its amount
// and recipient: TetherToken's transfer costs about 65,000 energy to an
// address holding no USDT and about half that to one that does; the model
// takes the larger, once for every transfer.
const TransferEnergy = 65_000

// execute runs an included transfer against the ledger. A failed transaction
// is still on chain and uses up its txid; it moves no tokens and emits no log.
func (net *Network) execute(hdr tron.Block, p pending) {
	c := p.tx.Raw.Contract
	to, amount, err := tron.DecodeTransfer(c.Data)
	if err != nil {
		panic(fmt.Sprintf("mocknode: pending %s is not a transfer: broadcast let it through: %v", p.id, err))
	}
	inc := Inclusion{
		Txid:        p.id,
		BlockNumber: hdr.Number,
		BlockTime:   hdr.Time,
		Owner:       c.Owner,
		FeeLimit:    p.tx.Raw.FeeLimit,
	}
	var logs []tron.Log
	cost := TransferEnergy * net.energyPrice
	if o, ok := net.outcomes[p.id]; ok {
		inc.Receipt = o
		net.events[OverrideReceipt]++
	} else if cost > inc.FeeLimit {
		// The fee limit cannot buy the energy the contract needs: it runs
		// until the limit is spent, and the whole limit burns.
		inc.Receipt = tron.ReceiptOutOfEnergy
		inc.Burnt = inc.FeeLimit
		net.events[PricedOutOfEnergy]++
	} else if inc.Burnt = cost; net.balances[c.Owner] < amount {
		inc.Receipt = tron.ReceiptRevert
		net.events[InsufficientBalance]++
	} else {
		req := ExecRequest{Txid: p.id, Block: hdr, Owner: c.Owner, To: to, Amount: amount,
			Balance: net.balances[c.Owner], Reorged: net.wasOrphan[p.id]}
		var ex Execution
		if net.exec != nil {
			ex = net.exec(req)
			ex.check()
			ex = ex.clone() // the hook may reuse its slices
		}
		moves, reported, ok := ex.effects(req)
		inc.Execution = ex
		if !ok {
			inc.Receipt = tron.ReceiptRevert
			net.events[InsufficientBalance]++
		} else {
			inc.Receipt = tron.ReceiptSuccess
			if !ex.IsExact() {
				net.events[OddExecution]++
			}
			net.move(moves)
			inc.Moved = moves
			if len(moves) > 0 {
				// The movement to the recipient: with the exact execution
				// exactly what the one Transfer log says (decoded from a log
				// as it always was, which spells addresses with the 0x41
				// prefix whatever the raw data held).
				last := moves[len(moves)-1]
				inc.Transfer, inc.TransferOK = loggedTransfer(last), true
			}
			logs = reported
		}
	}
	net.onChain[p.id] = net.landed.len()
	net.landed.push(landing{inc: inc, logs: logs, tx: p})
}

// move applies movements to the ledger, each a debit before its credit so a
// transfer to oneself nets to zero.
func (net *Network) move(moves []tron.Transfer) {
	for _, m := range moves {
		if net.balances[m.From] < m.Amount {
			panic(fmt.Sprintf("mocknode: ledger: %s pays %d with %d", m.From, m.Amount, net.balances[m.From]))
		}
		net.balances[m.From] -= m.Amount
		net.balances[m.To] += m.Amount
	}
}

// unmove reverses movements, last first: what a reorg does to an orphaned
// inclusion. Orphaned inclusions are the newest, undone newest first, so
// every credit is still there to take back.
func (net *Network) unmove(moves []tron.Transfer) {
	for i := len(moves) - 1; i >= 0; i-- {
		m := moves[i]
		if net.balances[m.To] < m.Amount {
			panic(fmt.Sprintf("mocknode: ledger: undoing %d to %s finds only %d", m.Amount, m.To, net.balances[m.To]))
		}
		net.balances[m.To] -= m.Amount
		net.balances[m.From] += m.Amount
	}
}
