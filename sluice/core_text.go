package sluice

import (
	"strconv"
	"time"

	"sluicesim/sluice/tron"
)

// The texts below (event notes, reasons, evidence summaries) are written on
// every step of every operation. They are built by appending into a buffer
// on the caller's stack and converted to a string once, instead of with
// fmt.Sprintf, which boxes every argument and formats through reflection:
// that was a large share of a worker's allocations. Each helper writes
// exactly what the fmt verb it replaces wrote; core_text_test.go holds them
// to fmt over many values.

// appendInt appends n as %d does.
func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// appendShort appends t.Short() (%s of it): the first 8 hex characters.
func appendShort(b []byte, t tron.Txid) []byte {
	const hexDigits = "0123456789abcdef"
	for _, c := range t[:4] {
		b = append(b, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return b
}

// appendDuration appends d.String() (%s of a time.Duration). The String call
// is inlined and its result does not escape, so it is built on the stack.
func appendDuration(b []byte, d time.Duration) []byte { return append(b, d.String()...) }

// confirmedNote is fmt.Sprintf("confirmed txid=%s in solid block #%d", txid.Short(), block).
func confirmedNote(txid tron.Txid, block int64) string {
	var a [64]byte
	b := append(a[:0], "confirmed txid="...)
	b = appendShort(b, txid)
	b = append(b, " in solid block #"...)
	return string(appendInt(b, block))
}

// builtNote is fmt.Sprintf("built txid=%s expiration=%s", txid.Short(),
// msTime(expiration).Format(time.RFC3339)).
func builtNote(txid tron.Txid, expiration int64) string {
	var a [80]byte
	b := append(a[:0], "built txid="...)
	b = appendShort(b, txid)
	b = append(b, " expiration="...)
	return string(msTime(expiration).AppendFormat(b, time.RFC3339))
}

// rebuildNote is fmt.Sprintf("rebuild #%d: %s; retired %s, new txid=%s",
// n, why, old.Short(), txid.Short()).
func rebuildNote(n int, why string, old, txid tron.Txid) string {
	var a [160]byte
	b := append(a[:0], "rebuild #"...)
	b = appendInt(b, int64(n))
	b = append(b, ": "...)
	b = append(b, why...)
	b = append(b, "; retired "...)
	b = appendShort(b, old)
	b = append(b, ", new txid="...)
	return string(appendShort(b, txid))
}

// includedWhy is fmt.Sprintf("included in #%d, solid head #%d", block, solid).
func includedWhy(block, solid int64) string {
	var a [64]byte
	b := append(a[:0], "included in #"...)
	b = appendInt(b, block)
	b = append(b, ", solid head #"...)
	return string(appendInt(b, solid))
}

// txidNote is prefix + txid.Short(), in one allocation.
func txidNote(prefix string, txid tron.Txid) string {
	var a [64]byte
	return string(appendShort(append(a[:0], prefix...), txid))
}

// codeNote is notePrefixes[prefix] + string(c). Every answer a node gives
// (the known codes) comes back as a string made once, at start, without an
// allocation per step: a broadcast's answer is in a note or a why on every
// send and re-send.
func codeNote(prefix notePrefix, c tron.Code) string {
	if k := codeIndex(c); k >= 0 {
		return codeNotes[prefix][k]
	}
	return notePrefixes[prefix] + string(c)
}

// notePrefix names one of notePrefixes.
type notePrefix int

const (
	acceptedPrefix notePrefix = iota
	resentAcceptedPrefix
	firstSendRejectedPrefix
	firstSendRefusedPrefix
	firstSendNotTakenPrefix
	firstSendUnclearPrefix
	resendNotTakenPrefix
	resendRefusedPrefix
	resentPrefix
)

var notePrefixes = [...]string{
	acceptedPrefix:          "accepted: ",
	resentAcceptedPrefix:    "re-sent, accepted: ",
	firstSendRejectedPrefix: "first send rejected: ",
	firstSendRefusedPrefix:  "first send refused by the node: ",
	firstSendNotTakenPrefix: "first send not taken: ",
	firstSendUnclearPrefix:  "first send unclear: ",
	resendNotTakenPrefix:    "re-send not taken: ",
	resendRefusedPrefix:     "re-send refused by the node: ",
	resentPrefix:            "re-sent: ",
}

// knownCodes are the codes codeNotes holds texts for.
var knownCodes = [...]tron.Code{
	tron.CodeSuccess, tron.CodeNoConnection, tron.CodeNotEnoughEffectiveConnection, tron.CodeServerBusy,
	tron.CodeBlockUnsolidified, tron.CodeContractValidateError, tron.CodeContractExeError, tron.CodeBandwidthError,
	tron.CodeDupTransactionError, tron.CodeTaposError, tron.CodeTooBigTransactionError,
	tron.CodeTransactionExpirationError, tron.CodeSigError, tron.CodeOtherError,
}

// codeNotes[p][k] is notePrefixes[p] + string(knownCodes[k]).
var codeNotes = func() (t [len(notePrefixes)][len(knownCodes)]string) {
	for p, prefix := range notePrefixes {
		for k, c := range knownCodes {
			t[p][k] = prefix + string(c)
		}
	}
	return t
}()

// codeIndex is c's position in knownCodes, or -1.
func codeIndex(c tron.Code) int {
	for k, known := range knownCodes {
		if c == known {
			return k
		}
	}
	return -1
}

// reconciledNote is "reconciled: txid " + s.String(), as constants for the
// two statuses reconcile writes it for.
func reconciledNote(s tron.Status) string {
	switch s {
	case tron.Pending:
		return "reconciled: txid pending"
	case tron.Included:
		return "reconciled: txid included"
	}
	return "reconciled: txid " + s.String()
}

// appendMemo appends the envelope memo of build n, fmt's "sluice:%s:%d".
func appendMemo(b []byte, id OperationID, n int) []byte {
	b = append(b, "sluice:"...)
	b = append(b, id...)
	b = append(b, ':')
	return appendInt(b, int64(n))
}

// appendTo appends e.String() to b.
func (e *Evidence) appendTo(b []byte) []byte {
	if e.Lookup == tron.Included {
		// "txid=%s included in #%d with receipt %s, solid=#%d"
		b = append(b, "txid="...)
		b = appendShort(b, e.Txid)
		b = append(b, " included in #"...)
		b = appendInt(b, e.BlockNumber)
		b = append(b, " with receipt "...)
		b = append(b, e.Receipt...)
		b = append(b, ", solid=#"...)
		b = appendInt(b, e.SolidNumber)
		if !e.SeenSolid {
			// Only ever on evidence that proves nothing (Proves), so no
			// filed proof's text carries it.
			b = append(b, ", not solid where seen"...)
		}
		return b
	}
	// "txid=%s expiration=%s margin=%s solid=#%d@%s lookup=%s (node solid #%d)"
	b = append(b, "txid="...)
	b = appendShort(b, e.Txid)
	b = append(b, " expiration="...)
	b = e.Expiration.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, " margin="...)
	b = appendDuration(b, e.Margin)
	b = append(b, " solid=#"...)
	b = appendInt(b, e.SolidNumber)
	b = append(b, '@')
	b = e.SolidTime.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, " lookup="...)
	b = append(b, e.Lookup.String()...)
	b = append(b, " (node solid #"...)
	b = appendInt(b, e.LookupSolid)
	return append(b, ')')
}

// casError is Pipeline.cas's failed write, fmt.Errorf("%s %s->%s token=%d:
// %w", id, from, to, token, err), formatted only when read: a fenced write
// is routine (a zombie after a lease expiry), and the worker only tests it
// with errors.Is.
type casError struct {
	id       OperationID
	from, to State
	token    FencingToken
	err      error
}

func (e *casError) Error() string {
	var a [160]byte
	b := append(a[:0], e.id...)
	b = append(b, ' ')
	b = append(b, e.from.String()...)
	b = append(b, "->"...)
	b = append(b, e.to.String()...)
	b = append(b, " token="...)
	b = strconv.AppendUint(b, uint64(e.token), 10)
	b = append(b, ": "...)
	b = append(b, e.err.Error()...)
	return string(b)
}

func (e *casError) Unwrap() error { return e.err }
