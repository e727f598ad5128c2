package operator

import (
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// The JSON forms of the API's answers. Amounts are decimal strings, as in
// the intake API; times are RFC 3339 UTC; durations Go's ("1m30s").

type itemView struct {
	OperationID string        `json:"operation_id"`
	State       string        `json:"state"`
	Customer    string        `json:"customer"`
	ToAddress   string        `json:"to_address"`
	Amount      string        `json:"amount"`
	Asset       string        `json:"asset"`
	Txid        string        `json:"txid,omitempty"`
	Txids       []string      `json:"txids"`
	Builds      int           `json:"builds"`
	Reason      string        `json:"reason,omitempty"`
	Parked      bool          `json:"parked"`
	Parks       int           `json:"parks"`
	ParkReason  string        `json:"park_reason,omitempty"`
	ParkedSince string        `json:"parked_since,omitempty"`
	NotBefore   string        `json:"not_before,omitempty"`
	FirstSentAt string        `json:"first_sent_at,omitempty"`
	Waited      string        `json:"waited,omitempty"`
	CreatedAt   string        `json:"created_at"`
	UpdatedAt   string        `json:"updated_at"`
	Decision    *decisionView `json:"decision,omitempty"`
	Evidence    *evidenceView `json:"evidence,omitempty"`
	Actions     []string      `json:"actions"`
}

type decisionView struct {
	Action   string `json:"action"`
	Reason   string `json:"reason"`
	Waited   string `json:"waited"`
	Rebuilds int    `json:"rebuilds"`
}

type evidenceView struct {
	Txid        string `json:"txid"`
	Lookup      string `json:"lookup"`
	Expiration  string `json:"expiration,omitempty"`
	Margin      string `json:"margin"`
	SolidNumber int64  `json:"solid_number"`
	SolidTime   string `json:"solid_time,omitempty"`
	LookupSolid int64  `json:"lookup_solid"`
	Receipt     string `json:"receipt,omitempty"`
	BlockNumber int64  `json:"block_number,omitempty"`
	// SeenSolid, for an inclusion only: whether the node that showed it
	// called its block solid (a failed receipt proves nothing otherwise).
	SeenSolid *bool  `json:"seen_solid,omitempty"`
	Proves    bool   `json:"proves"`
	Summary   string `json:"summary"`
}

type queueView struct {
	Items []itemView `json:"items"`
	Next  string     `json:"next,omitempty"`
}

type accountView struct {
	Customer  string `json:"customer"`
	Balance   string `json:"balance"`
	Held      string `json:"held"`
	Paid      string `json:"paid"`
	Deposited string `json:"deposited"`
}

type creditView struct {
	Ref      string      `json:"ref"`
	Credited bool        `json:"credited"` // false: this ref was credited before
	Account  accountView `json:"account"`
}

func viewItem(it Item) itemView {
	op := it.Operation
	v := itemView{
		OperationID: string(op.ID),
		State:       op.State.String(),
		Customer:    string(op.Request.Customer),
		ToAddress:   op.Request.To.String(),
		Amount:      op.Request.Amount.String(),
		Asset:       op.Request.Asset,
		Txid:        txidText(op.Envelope.Txid),
		Txids:       make([]string, 0, len(it.Txids)),
		Builds:      op.Builds,
		Reason:      op.Reason,
		Parked:      op.Parked(),
		Parks:       op.Parks,
		ParkReason:  op.ParkReason,
		ParkedSince: timeText(op.ParkedSince),
		FirstSentAt: timeText(op.FirstSentAt),
		CreatedAt:   timeText(op.CreatedAt),
		UpdatedAt:   timeText(op.UpdatedAt),
		Actions:     actions(op),
	}
	if !op.State.Terminal() {
		v.NotBefore = timeText(op.NotBefore)
	}
	if it.Waited > 0 {
		v.Waited = it.Waited.Round(time.Millisecond).String()
	}
	for _, t := range it.Txids {
		v.Txids = append(v.Txids, t.String())
	}
	if d := it.Decision; d != nil {
		v.Decision = &decisionView{Action: d.Action.String(), Reason: d.Reason, Waited: d.Waited.Round(time.Millisecond).String(), Rebuilds: d.Rebuilds}
	}
	if e := it.Evidence; e != nil {
		ev := viewEvidence(*e)
		v.Evidence = &ev
	}
	return v
}

func viewEvidence(e sluice.Evidence) evidenceView {
	v := evidenceView{
		Txid:        e.Txid.String(),
		Lookup:      e.Lookup.String(),
		Margin:      e.Margin.String(),
		SolidNumber: e.SolidNumber,
		SolidTime:   timeText(e.SolidTime),
		LookupSolid: e.LookupSolid,
		Receipt:     e.Receipt,
		BlockNumber: e.BlockNumber,
		Proves:      e.Proves(),
		Summary:     e.String(),
	}
	if e.Lookup != tron.Included {
		v.Expiration = timeText(e.Expiration)
	} else {
		v.SeenSolid = &e.SeenSolid
	}
	return v
}

// actions are the actions that may apply to op, for a person reading the
// queue: whether each lands still depends on the chain at the moment.
func actions(op sluice.Operation) []string {
	out := []string{}
	switch {
	case op.State == sluice.Review:
		out = append(out, Cancel.String())
		if !op.Envelope.Txid.IsZero() {
			out = append(out, ResolvePaid.String())
		}
	case op.State.Terminal():
	case op.Envelope.Txid.IsZero() || op.Parked():
		out = append(out, Retry.String(), Cancel.String())
	default:
		out = append(out, Retry.String())
	}
	return out
}

func viewAccount(a sluice.Account) accountView {
	return accountView{Customer: string(a.Customer), Balance: a.Balance.String(), Held: a.Held.String(),
		Paid: a.Paid.String(), Deposited: a.Deposited.String()}
}

func txidText(t tron.Txid) string {
	if t.IsZero() {
		return ""
	}
	return t.String()
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
