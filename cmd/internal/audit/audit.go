package audit

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/nodehttp"
)

// Checker is one of model's invariants, by name, with the checker model
// exports for it: the same function the simulator runs.
type Checker struct {
	Name  string
	Check func(*model.Snapshot) []model.Violation
	// OnLedger: judged on the ledger's snapshot (Ledger.Snapshot: rows,
	// log and ledger of one moment) rather than on the rows read one by one
	// with the chain.
	OnLedger bool
}

// Live is the part of model.Invariants a live system can be judged by. They
// run in model.Invariants' order.
//
// no-operational-failure judges each failed operation by the node's
// answers to its sends (the mock's ground truth records every broadcast
// and its answer), its inclusions' receipts, and its row's park count
// standing in for the parks a run's observer sees (parksOf); a failed
// operation is terminal, so none of its txids is ever left to the next
// audit.
//
// fee-limits reads the fee limit each inclusion's bytes carry from the
// node's ground truth, and FeeLimitMax from the configuration `sluice
// serve` runs with; an inclusion left to the next audit can only hide a
// finding, never make one.
var Live = []Checker{
	{model.TxidOwnership, model.CheckTxidOwnership, false},
	{model.AtMostOnce, model.CheckAtMostOnce, false},
	{model.Conservation, model.CheckConservation, false},
	{model.Funds, model.CheckFunds, true},
	{model.NoOperationalFailure, model.CheckNoOperationalFailure, false},
	{model.FeeLimits, model.CheckFeeLimits, false},
	{model.AuditLog, model.CheckAuditLog, false},
}

// NotLive is the rest of model.Invariants, each with why the audit cannot
// judge a live system by it: what it needs that neither the database nor
// the chain holds.
var NotLive = map[string]string{
	model.Liveness:           "needs a heal point and a budget; a live system always has operations in flight (the audit counts them and names the oldest)",
	model.Progress:           "judges each failure by what the node answered its sends (a record only a run's observer keeps) and each rejection by the client's payload, which the database does not hold",
	model.PacedPolling:       "needs every lookup each worker made, with the claims, writes and releases around it, as an outside observer saw them; the node's ground truth records no lookups and the database only the writes",
	model.IntakeUniqueness:   "judges what each client was told against what it sent; no client's requests are recorded (one row per id is the primary key's, one creation event audit-log's)",
	model.OneWriter:          "needs every claim and write as an outside observer saw them; the database keeps only their results",
	model.LinearizableIntake: "needs the clients' calls and answers with their times",
}

// Node is what the audit asks of the node: its ground truth (the mock's
// /mock/truth) and an ordinary lookup. *nodehttp.Client is one.
type Node interface {
	Truth(ctx context.Context) (nodehttp.Truth, error)
	looker
}

// Config sets up an audit.
type Config struct {
	// Rescan is how many of the last solid blocks reconciliation rescans; 0
	// rescans every one.
	Rescan int64
}

// Report is what an audit read and found.
type Report struct {
	Operations int            `json:"operations"`
	States     map[string]int `json:"states"`
	// Open counts the operations not terminal; OldestOpen is the oldest of
	// them, a withdrawal that may be stuck.
	Open       int                `json:"open"`
	OldestOpen sluice.OperationID `json:"oldest_open,omitempty"`
	OldestAt   time.Time          `json:"oldest_open_created,omitzero"`

	Solid      int64 `json:"solid"` // the chain's solid head when read
	Blocks     int   `json:"blocks"`
	Inclusions int   `json:"inclusions"`
	// Deferred counts the txids the node saw whose fate the audit left to
	// the next one: those of operations in flight.
	Deferred int `json:"deferred"`
	// Money is what was read of the customers' ledger.
	Money Money `json:"money"`

	Rescan     Rescan            `json:"rescan"`
	Checked    []Count           `json:"checked"`     // in model.Invariants order, reconciliation last
	NotChecked []Skip            `json:"not_checked"` // in model.Invariants order
	Violations []model.Violation `json:"violations"`
}

// Count is one check's number of violations.
type Count struct {
	Name       string `json:"name"`
	Violations int    `json:"violations"`
}

// Skip is one invariant the audit does not run, and why.
type Skip struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Run audits the database behind pool against node: it reads the store,
// then the chain, then asks the database which of the txids nobody owned
// at the read were written ahead since, and judges. The chain is read after
// the database because a worker writes a txid ahead before it sends it:
// whatever is on chain was then owned at the read, or is owned now.
func Run(ctx context.Context, pool *pgxpool.Pool, node Node, cfg Config) (*Report, error) {
	ops, events, err := ReadStore(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("reading the database: %w", err)
	}
	ledger, err := ReadLedger(ctx, pool)
	if err != nil {
		return nil, err
	}
	truth, err := node.Truth(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the node's ground truth (%s, which only the mock node serves): %w", nodehttp.PathTruth, err)
	}
	own := owned(ops, events)
	late, err := lateOwners(ctx, pool, strangers(truth, own))
	if err != nil {
		return nil, fmt.Errorf("reading txid_owners: %w", err)
	}
	rep := judge(ops, events, ledger, truth, late)
	rescan, vs, err := reconcile(ctx, node, truth, func(t tron.Txid) bool { return own[t] || late[t] }, cfg.Rescan)
	if err != nil {
		return nil, err
	}
	rep.Rescan = rescan
	rep.Checked = append(rep.Checked, Count{Reconciliation, len(vs)})
	rep.Violations = append(rep.Violations, vs...)
	return rep, nil
}

// judge runs the live invariants over what was read, the txids in flight
// left out; funds over the ledger's own snapshot.
func judge(ops []sluice.Operation, events []sluice.Event, ledger *Ledger, truth nodehttp.Truth, late map[tron.Txid]bool) *Report {
	if ledger == nil {
		ledger = &Ledger{} // none read: funds has nothing to judge
	}
	rep := &Report{Operations: len(ops), States: map[string]int{}, Solid: truth.Solid.Number,
		Blocks: len(truth.Blocks), Inclusions: len(truth.Inclusions), Money: ledger.summary()}
	for _, op := range ops {
		rep.States[op.State.String()]++
		if op.State.Terminal() {
			continue
		}
		rep.Open++
		if rep.OldestOpen == "" || op.CreatedAt.Before(rep.OldestAt) {
			rep.OldestOpen, rep.OldestAt = op.ID, op.CreatedAt
		}
	}
	chain, deferred := settled(truth, inFlight(ops, late))
	rep.Deferred = deferred
	snap := Snapshot(ops, events, chain, ledger)
	snap.Parks = parksOf(ops)
	funds := ledger.Snapshot()
	for _, inv := range model.Invariants {
		i := slices.IndexFunc(Live, func(c Checker) bool { return c.Name == inv.Name })
		if i < 0 {
			why, ok := NotLive[inv.Name]
			if !ok {
				why = "not classified for a live system yet"
			}
			rep.NotChecked = append(rep.NotChecked, Skip{inv.Name, why})
			continue
		}
		on := snap
		if Live[i].OnLedger {
			on = funds
		}
		vs := Live[i].Check(on)
		rep.Checked = append(rep.Checked, Count{inv.Name, len(vs)})
		rep.Violations = append(rep.Violations, vs...)
	}
	return rep
}

// Write prints the report as explore prints a run: what was read, each
// check's count, what was not checked and why, and the verdict with every
// violation. Every line starts with prefix.
func (r *Report) Write(w io.Writer, prefix string) {
	p := func(format string, args ...any) {
		if format == "" {
			// A blank line carries the prefix without its trailing space.
			fmt.Fprintln(w, strings.TrimRight(prefix, " "))
			return
		}
		fmt.Fprintf(w, prefix+format+"\n", args...)
	}
	var states string
	for _, s := range sluice.States {
		if n := r.States[s.String()]; n > 0 {
			states += fmt.Sprintf(", %s %d", s, n)
		}
	}
	p("operations: %d%s; %d open", r.Operations, states, r.Open)
	if r.Open > 0 {
		p("  oldest open: %s, created %s", r.OldestOpen, r.OldestAt.UTC().Format(time.RFC3339))
	}
	p("chain: solid head #%d, %d blocks, %d inclusions; %d txids of operations in flight left to the next audit", r.Solid, r.Blocks, r.Inclusions, r.Deferred)
	rs := r.Rescan
	m := r.Money
	p("ledger: %d accounts, %d credits (%s USDT deposited); holds: %d held, %d settled, %d released; %d operations from before the ledger left out",
		m.Accounts, m.Credits, m.Deposited, m.Held, m.Settled, m.Released, m.Legacy)
	p("reconciliation: solid blocks #%d..#%d: %d transactions, %d owned by an operation, %d by none (%d of them the hot wallet's)",
		rs.From, rs.To, rs.Transactions, rs.Known, rs.Unknown, rs.Strays)
	p("")
	p("%-22s %s", "invariant", "violations")
	for _, c := range r.Checked {
		p("  %-20s %d", c.Name, c.Violations)
	}
	p("not checked on a live system")
	for _, s := range r.NotChecked {
		p("  %-20s %s", s.Name, s.Why)
	}
	p("")
	if len(r.Violations) == 0 {
		p("verdict: every invariant holds")
		return
	}
	p("verdict: %d violation(s)", len(r.Violations))
	for _, v := range r.Violations {
		p("  %s: %s", v.Invariant, v.Message)
	}
}
