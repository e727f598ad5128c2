package model

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// refTransferTopic is keccak256("Transfer(address,address,uint256)"), the
// first topic of every ERC-20/TRC-20 Transfer log, written out here rather
// than taken from the core's tron package.
var refTransferTopic = func() (t [32]byte) {
	b, err := hex.DecodeString("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")
	if err != nil || len(b) != 32 {
		panic("model: bad Transfer topic constant")
	}
	copy(t[:], b)
	return t
}()

// refTransfer is one USDT movement as the model reads it.
type refTransfer struct {
	From, To [21]byte
	Units    uint64
}

// reportedUSDT is what the node told a caller of in's logs, read by the
// model: the USDT Transfer logs (other contracts' logs move no USDT). An
// honest node reports one log per movement the inclusion really made
// (Inclusion.Moved, always on the USDT contract: the mock refuses an extra
// log that claims to be USDT); under Execution.Lie it reports
// Execution.Logs, which the model decodes itself. ok is false when a
// reported USDT log is not a well-formed Transfer: then nothing the core
// could read confirms either. The transfers are appended to ts.
func reportedUSDT(in mocknode.Inclusion, ts []refTransfer) (_ []refTransfer, ok bool) {
	if !in.Execution.Lie {
		for _, m := range in.Moved {
			ts = append(ts, refTransfer{From: m.From, To: m.To, Units: m.Amount})
		}
		return ts, true
	}
	ok = true
	for _, l := range in.Execution.Logs {
		if [21]byte(append([]byte{0x41}, l.Address[:]...)) != refUSDTContract {
			continue
		}
		t, good := refReadTransfer(l)
		if !good {
			ok = false
			continue
		}
		ts = append(ts, t)
	}
	return ts, ok
}

// refReadTransfer decodes a Transfer log: three topics (the event, from, to
// as 32-byte words with 12 zero bytes first) and a 32-byte amount.
func refReadTransfer(l tron.Log) (refTransfer, bool) {
	if len(l.Topics) != 3 || l.Topics[0] != refTransferTopic || len(l.Data) != 32 {
		return refTransfer{}, false
	}
	var t refTransfer
	for i, dst := range []*[21]byte{&t.From, &t.To} {
		w := l.Topics[i+1]
		for _, b := range w[:12] {
			if b != 0 {
				return refTransfer{}, false
			}
		}
		dst[0] = 0x41
		copy(dst[1:], w[12:])
	}
	for _, b := range l.Data[:24] {
		if b != 0 {
			return refTransfer{}, false // beyond uint64: not any amount we send
		}
	}
	t.Units = binary.BigEndian.Uint64(l.Data[24:])
	return t, true
}

// reportedExactly says whether the node reported exactly one USDT Transfer
// log for in, from the hot wallet to want.To for want.Units: the only
// report on which a confirmation is honest. why says what differs.
func reportedExactly(in mocknode.Inclusion, hot [21]byte, want Intent) (why string, exact bool) {
	var buf [2]refTransfer // more than one is refused: room to see a second
	ts, ok := reportedUSDT(in, buf[:0])
	switch {
	case !ok:
		return "a malformed USDT log", false
	case len(ts) == 0:
		return "no USDT Transfer log", false
	case len(ts) > 1:
		return fmt.Sprintf("%d USDT Transfer logs", len(ts)), false
	}
	t := ts[0]
	if t.From != hot || t.To != want.To || t.Units != want.Units {
		return fmt.Sprintf("a USDT Transfer log of %d units from %s to %s", t.Units, Base58Address(t.From), Base58Address(t.To)), false
	}
	return "", true
}

// movedExactly says whether in really moved exactly want: one USDT movement
// from the hot wallet to want.To of want.Units, and nothing else. why
// describes the inclusion ("whose transfer goes to ...") when it did not.
func movedExactly(in mocknode.Inclusion, s *Snapshot, want Intent) (why string, exact bool) {
	switch {
	case in.Receipt != tron.ReceiptSuccess:
		return "whose receipt is " + in.Receipt, false
	case len(in.Moved) == 0:
		return "which moved no tokens", false
	case len(in.Moved) > 1:
		return fmt.Sprintf("which made %d movements (%s)", len(in.Moved), describeMoves(in.Moved)), false
	}
	if bad := transferMismatch(s, want, in.Moved[0]); bad != "" {
		return "whose transfer " + bad, false
	}
	return "", true
}

func describeMoves(ms []tron.Transfer) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d units from %s to %s", m.Amount, Base58Address(m.From), Base58Address(m.To))
		if [21]byte(m.Contract) != refUSDTContract {
			s += " on " + Base58Address(m.Contract)
		}
	}
	return s
}
