package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"sluicesim/sluice"
)

// The diff helpers stand in for cmp.Diff, which the module does not depend
// on. They compare times with Equal and bytes by content, so that a store
// that round-trips through a database (another time.Location, nil for an
// empty bytea) is judged on meaning, not representation. Each difference is
// one "field: got X, want Y" line.

func diffOperation(got, want sluice.Operation) []string {
	var d diffs
	d.eq("ID", got.ID, want.ID)
	d.eq("Request", got.Request, want.Request)
	d.eq("RequestHash", got.RequestHash, want.RequestHash)
	d.eq("State", got.State, want.State)
	d.eq("Token", got.Token, want.Token)
	d.eq("ClaimedBy", got.ClaimedBy, want.ClaimedBy)
	d.time("LeaseUntil", got.LeaseUntil, want.LeaseUntil)
	d.time("NotBefore", got.NotBefore, want.NotBefore)
	d.eq("Envelope.Txid", got.Envelope.Txid, want.Envelope.Txid)
	// Marshal is a pure function of every raw_data field, slices included.
	d.bytes("Envelope.Raw", got.Envelope.Raw.Marshal(), want.Envelope.Raw.Marshal())
	d.bytes("Envelope.Signature", got.Envelope.Signature, want.Envelope.Signature)
	d.eq("Builds", got.Builds, want.Builds)
	d.eq("Reason", got.Reason, want.Reason)
	d.time("FirstSentAt", got.FirstSentAt, want.FirstSentAt)
	d.eq("Parks", got.Parks, want.Parks)
	d.eq("ParkReason", got.ParkReason, want.ParkReason)
	d.time("ParkedSince", got.ParkedSince, want.ParkedSince)
	d.time("CreatedAt", got.CreatedAt, want.CreatedAt)
	d.time("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	return d
}

func diffEvent(got, want sluice.Event) []string {
	var d diffs
	d.eq("Seq", got.Seq, want.Seq)
	d.eq("OperationID", got.OperationID, want.OperationID)
	d.eq("From", got.From, want.From)
	d.eq("To", got.To, want.To)
	d.eq("Token", got.Token, want.Token)
	d.eq("Worker", got.Worker, want.Worker)
	d.time("At", got.At, want.At)
	d.eq("Txid", got.Txid, want.Txid)
	d.eq("RetiredTxid", got.RetiredTxid, want.RetiredTxid)
	switch {
	case got.Evidence == nil && want.Evidence == nil:
	case got.Evidence == nil || want.Evidence == nil:
		d.add("Evidence", got.Evidence, want.Evidence)
	default:
		g, w := *got.Evidence, *want.Evidence
		d.eq("Evidence.Txid", g.Txid, w.Txid)
		d.time("Evidence.Expiration", g.Expiration, w.Expiration)
		d.eq("Evidence.Margin", g.Margin, w.Margin)
		d.eq("Evidence.SolidNumber", g.SolidNumber, w.SolidNumber)
		d.time("Evidence.SolidTime", g.SolidTime, w.SolidTime)
		d.eq("Evidence.Lookup", g.Lookup, w.Lookup)
		d.eq("Evidence.LookupSolid", g.LookupSolid, w.LookupSolid)
		d.eq("Evidence.Receipt", g.Receipt, w.Receipt)
		d.eq("Evidence.BlockNumber", g.BlockNumber, w.BlockNumber)
		d.eq("Evidence.SeenSolid", g.SeenSolid, w.SeenSolid)
		// The rest whole, times aside (checked above, as instants): a
		// field added to Evidence and not stored shows up here as soon
		// as a test sets it, named or not.
		g.Expiration, g.SolidTime, w.Expiration, w.SolidTime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		d.eq("Evidence", g, w)
	}
	d.eq("Hold", got.Hold, want.Hold)
	switch {
	case got.Decision == nil && want.Decision == nil:
	case got.Decision == nil || want.Decision == nil:
		d.add("Decision", got.Decision, want.Decision)
	default:
		// Every field by name, so that a field added to Decision and not
		// stored shows up here as soon as a test sets it.
		d.eq("Decision", *got.Decision, *want.Decision)
	}
	d.eq("Note", got.Note, want.Note)
	return d
}

// diffHold and diffAccount compare plain values: every field is a number, a
// string or an enum, so equality is meaning.
func diffHold(got, want sluice.Hold) []string {
	var d diffs
	d.eq("Hold", got, want)
	return d
}

func diffAccount(got, want sluice.Account) []string {
	var d diffs
	d.eq("Account", got, want)
	return d
}

func diffEvents(got, want []sluice.Event) []string {
	var d diffs
	if len(got) != len(want) {
		d.add("length", len(got), len(want))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		for _, line := range diffEvent(got[i], want[i]) {
			d = append(d, fmt.Sprintf("[%d] %s", i, line))
		}
	}
	return d
}

type diffs []string

func (d *diffs) add(field string, got, want any) {
	*d = append(*d, fmt.Sprintf("%s: got %v, want %v", field, got, want))
}

func (d *diffs) eq(field string, got, want any) {
	if got != want {
		d.add(field, got, want)
	}
}

func (d *diffs) time(field string, got, want time.Time) {
	if !got.Equal(want) {
		d.add(field, got, want)
	}
}

func (d *diffs) bytes(field string, got, want []byte) {
	if !bytes.Equal(got, want) {
		d.add(field, fmt.Sprintf("%x", got), fmt.Sprintf("%x", want))
	}
}

// isSentinel reports whether err is one of sluice's operating conditions,
// which a caller would act on; a caller's bug must not look like one.
func isSentinel(err error) bool {
	for _, s := range []error{sluice.ErrFenced, sluice.ErrIllegalTransition, sluice.ErrTxidTaken, sluice.ErrNotFound, sluice.ErrPayloadMismatch,
		sluice.ErrInsufficientFunds, sluice.ErrHoldClosed, sluice.ErrHoldAction} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// cloneOperation and cloneEvents copy what a store returned without sharing
// anything with it, so a later read can be compared with an earlier one
// even if the store wrongly hands out its own memory.
func cloneOperation(op sluice.Operation) sluice.Operation {
	op.Envelope.Signature = bytes.Clone(op.Envelope.Signature)
	op.Envelope.Raw.Memo = bytes.Clone(op.Envelope.Raw.Memo)
	op.Envelope.Raw.Contract.Data = bytes.Clone(op.Envelope.Raw.Contract.Data)
	return op
}

func cloneEvents(evs []sluice.Event) []sluice.Event {
	out := make([]sluice.Event, len(evs))
	for i, ev := range evs {
		if ev.Evidence != nil {
			e := *ev.Evidence
			ev.Evidence = &e
		}
		if ev.Decision != nil {
			d := *ev.Decision
			ev.Decision = &d
		}
		out[i] = ev
	}
	return out
}
