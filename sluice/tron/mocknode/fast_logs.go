package mocknode

import (
	"encoding/binary"
	"strconv"

	"sluicesim/sluice/tron"
)

// Copies of logs and of an exact execution's effects, each in one
// allocation where its shape allows. A worker's lookup of an included
// transfer copies its log (the node's record must not share memory with
// what it hands out), and every inclusion executes a transfer: in the
// simulator's profiles these were three allocations a lookup and four an
// inclusion.

// transferLogSpace holds one Transfer log's topics and data.
type transferLogSpace struct {
	topics [3][32]byte
	data   [32]byte
}

// oneLog is a one-log list with room for the log's topics and data: the
// shape of every transfer's logs.
type oneLog struct {
	logs [1]tron.Log
	transferLogSpace
}

// cloneLogs copies logs and everything they point to, keeping nil as nil:
// a nil list, nil topics for a log with none, nil data for nil data.
func cloneLogs(logs []tron.Log) []tron.Log {
	if logs == nil {
		return nil
	}
	if len(logs) == 1 && len(logs[0].Topics) <= 3 && len(logs[0].Data) <= 32 {
		c := new(oneLog)
		l := &logs[0]
		c.logs[0] = tron.Log{Address: l.Address, Topics: copyTopics(c.topics[:0:len(l.Topics)], l.Topics), Data: copyData(c.data[:0:len(l.Data)], l.Data)}
		return c.logs[:]
	}
	out := make([]tron.Log, len(logs))
	for i, l := range logs {
		out[i] = tron.Log{
			Address: l.Address,
			Topics:  copyTopics(nil, l.Topics),
			Data:    copyData(nil, l.Data),
		}
	}
	return out
}

// copyTopics appends topics to dst, which has room for them or is nil; no
// topics is nil.
func copyTopics(dst, topics [][32]byte) [][32]byte {
	if len(topics) == 0 {
		return nil
	}
	return append(dst, topics...)
}

// copyData appends data to dst, which has room for it or is nil; nil stays
// nil, and empty data stays empty, not nil.
func copyData(dst, data []byte) []byte {
	if data == nil {
		return nil
	}
	if dst == nil {
		dst = []byte{}
	}
	return append(dst, data...)
}

// exactEffects is what the exact execution of a transfer of amount from
// owner to to does: one movement, and the one Transfer log saying so,
// together in one allocation. It is Execution{}.effects for a request the
// owner can pay.
func exactEffects(owner, to tron.Address, amount uint64) (moves []tron.Transfer, logs []tron.Log) {
	c := new(struct {
		moves [1]tron.Transfer
		oneLog
	})
	c.moves[0] = tron.Transfer{Contract: tron.USDTContract, From: owner, To: to, Amount: amount}
	c.logs[0] = transferLog(&c.transferLogSpace, tron.USDTContract, owner, to, amount)
	return c.moves[:], c.logs[:]
}

// transferLog is tron.TransferLog(contract, from, to, amount), written in
// space.
func transferLog(space *transferLogSpace, contract, from, to tron.Address, amount uint64) tron.Log {
	space.topics[0] = tron.TransferTopic
	space.topics[1], space.topics[2] = topicOf(from), topicOf(to)
	space.data = [32]byte{}
	binary.BigEndian.PutUint64(space.data[24:], amount)
	return tron.Log{Address: contract.Bytes20(), Topics: space.topics[:], Data: space.data[:]}
}

// topicOf is an address as an indexed event argument: its 20 bytes,
// left-padded to 32.
func topicOf(a tron.Address) [32]byte {
	var t [32]byte
	b := a.Bytes20()
	copy(t[12:], b[:])
	return t
}

// loggedTransfer is tron.ParseTransferLog(tron.TransferLog(m...)), which
// always parses: m with its addresses spelled as a log spells them, with
// the 0x41 prefix whatever m's held.
func loggedTransfer(m tron.Transfer) tron.Transfer {
	return tron.Transfer{
		Contract: tron.AddressFromBytes20(m.Contract.Bytes20()),
		From:     tron.AddressFromBytes20(m.From.Bytes20()),
		To:       tron.AddressFromBytes20(m.To.Bytes20()),
		Amount:   m.Amount,
	}
}

// timeoutError is a call's timeout fault: tron.ErrTimeout, with the call,
// its transaction (for a broadcast or a lookup) and its worker. It says
// what fmt.Errorf("mocknode: %s %s by %q: %w", ...) said, but composes the
// text only when asked: a balancer's failover drops the errors of the
// attempts before the last unread, and a timeout is a common fault.
type timeoutError struct {
	call    string // "broadcast", "lookup", "head block", "solid block"
	worker  string
	txid    tron.Txid
	hasTxid bool
}

func (e *timeoutError) Error() string {
	b := make([]byte, 0, 64)
	b = append(append(b, "mocknode: "...), e.call...)
	if e.hasTxid {
		b = append(append(b, ' '), e.txid.Short()...)
	}
	b = strconv.AppendQuote(append(b, " by "...), e.worker)
	return string(append(append(b, ": "...), tron.ErrTimeout.Error()...))
}

func (e *timeoutError) Unwrap() error { return tron.ErrTimeout }
