package model

import (
	"fmt"

	"sluicesim/sluice"
)

// RequestShown judges a request as an API showed it to a person (an
// operator's page, the answer to an action) against the request its row
// holds: read as the model reads a client's (ReadIntent: the amount in base
// units by its own parser, the recipient by its own base58 reader), it must
// be the row's, field by field. "" when it is; otherwise which field
// differs and how. A person deciding whether to cancel or resolve a
// withdrawal reads its amount and recipient there: an amount shown in base
// units (independent bug 155, a million times too big) or another
// recipient has them act on a withdrawal that is not the one stored. It
// allocates nothing when the request is the row's (the simulator's person
// looks before every action); the texts are made only to say what differs.
func RequestShown(p Payload, r sluice.Request) string {
	in, why := ReadIntent(p)
	switch {
	case why != "":
		return fmt.Sprintf("shows a request no client could have made (customer %q, to_address %q, amount %q, asset %q): %s",
			p.Customer, p.To, p.Amount, p.Asset, why)
	case in.Customer != r.Customer:
		return fmt.Sprintf("shows customer %q, the row holds %q", p.Customer, r.Customer)
	case in.To != [21]byte(r.To):
		return fmt.Sprintf("shows to_address %q, the row holds %s", p.To, Base58Address([21]byte(r.To)))
	case in.Units != uint64(r.Amount):
		return fmt.Sprintf("shows amount %q (%d base units by the model's reading), the row holds %d base units", p.Amount, in.Units, uint64(r.Amount))
	case in.Asset != r.Asset:
		return fmt.Sprintf("shows asset %q, the row holds %q", p.Asset, r.Asset)
	}
	return ""
}
