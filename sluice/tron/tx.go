package tron

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// Txid identifies a transaction: sha256 of its serialized raw_data. The
// signature is not part of it, so re-signing the same raw_data (even with a
// random-nonce signer) never changes the txid. That is the property the whole
// recovery design rests on.
type Txid [32]byte

// String is the lowercase hex form used by TRON's APIs. (hex.EncodeToString
// would allocate twice: its buffer, then the string.)
func (t Txid) String() string {
	var buf [2 * len(t)]byte
	hex.Encode(buf[:], t[:])
	return string(buf[:])
}

// Short is the first 8 hex characters, for logs and traces.
func (t Txid) Short() string {
	var buf [8]byte
	hex.Encode(buf[:], t[:4])
	return string(buf[:])
}

// IsZero reports whether t is unset.
func (t Txid) IsZero() bool { return t == Txid{} }

// MarshalText writes the hex form.
func (t Txid) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads the hex form.
func (t *Txid) UnmarshalText(b []byte) error {
	p, err := ParseTxid(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// ParseTxid reads a 64-character hex txid.
func ParseTxid(s string) (Txid, error) {
	var t Txid
	if len(s) != 64 {
		return t, fmt.Errorf("txid %q: want 64 hex characters, got %d", s, len(s))
	}
	if _, err := hex.Decode(t[:], []byte(s)); err != nil {
		return t, fmt.Errorf("txid %q: %v", s, err)
	}
	return t, nil
}

// TransferSelector is the 4-byte selector of transfer(address,uint256).
var TransferSelector = [4]byte{0xa9, 0x05, 0x9c, 0xbb}

// TransferTopic is topic0 of the TRC-20 Transfer(address,address,uint256) event.
var TransferTopic = mustHex32("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")

// TriggerSmartContract is the one contract a sluice transaction carries: a
// call of Data on Contract, paid for by Owner.
type TriggerSmartContract struct {
	Owner    Address // the hot wallet that signs and pays
	Contract Address // the token contract (USDT)
	Data     []byte  // ABI-encoded call
}

// RawData is the signed part of a transaction. Its canonical serialization is
// what the txid hashes.
//
// The mock serializes canonically instead of with protobuf: what matters for
// the design is that the bytes are a pure function of the fields.
type RawData struct {
	RefBlockBytes [2]byte // bytes 6..8 of the referenced block's number (TAPoS)
	RefBlockHash  [8]byte // bytes 8..16 of the referenced block's id (TAPoS)
	Expiration    int64   // milliseconds since the epoch, chain time
	Timestamp     int64   // milliseconds since the epoch, the builder's clock
	FeeLimit      int64   // sun
	// Memo is raw_data.data. sluice writes the operation id and build number
	// here, so two operations paying the same amount to the same address in
	// the same millisecond still get distinct txids.
	Memo     []byte
	Contract TriggerSmartContract
}

// rawMagic opens every serialization; rawFixed is the size of everything
// but Memo and Contract.Data.
const (
	rawMagic = "tron-raw-v1"
	rawFixed = len(rawMagic) + 2 + 8 + 3*8 + 4 + 2*len(Address{}) + 4
)

// Marshal is the canonical serialization: fixed field order, length-prefixed
// variable fields. A pure function of the fields.
func (r RawData) Marshal() []byte { return r.appendMarshal(make([]byte, 0, r.Size())) }

// Size is len(r.Marshal()), without building it.
func (r RawData) Size() int { return rawFixed + len(r.Memo) + len(r.Contract.Data) }

// appendMarshal appends the canonical serialization to b.
func (r *RawData) appendMarshal(b []byte) []byte {
	b = append(b, rawMagic...)
	b = append(b, r.RefBlockBytes[:]...)
	b = append(b, r.RefBlockHash[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Expiration))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Timestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(r.FeeLimit))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Memo)))
	b = append(b, r.Memo...)
	b = append(b, r.Contract.Owner[:]...)
	b = append(b, r.Contract.Contract[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Contract.Data)))
	b = append(b, r.Contract.Data...)
	return b
}

// Txid is sha256 of the canonical raw_data. The serialization goes into a
// buffer on the stack: every sluice transaction fits (an operation id and a
// build number of memo, a 68-byte transfer), and a bigger one only spills to
// the heap.
func (r RawData) Txid() Txid {
	var buf [320]byte
	return sha256.Sum256(r.appendMarshal(buf[:0]))
}

// Transaction is raw_data plus its signature.
type Transaction struct {
	Raw       RawData
	Signature []byte
}

// Txid is the transaction's id; the signature does not take part.
func (t Transaction) Txid() Txid { return t.Raw.Txid() }

// TransferSize is the length of EncodeTransfer's call data.
const TransferSize = 4 + 32 + 32

// EncodeTransfer ABI-encodes transfer(to, amount): selector, the recipient's
// 20 bytes left-padded to 32, the amount as a 32-byte big-endian integer.
func EncodeTransfer(to Address, amount uint64) []byte {
	return AppendTransfer(make([]byte, 0, TransferSize), to, amount)
}

// AppendTransfer appends EncodeTransfer(to, amount) to b and returns the
// encoding alone, capped at its length (so appending to it never writes past
// it into b's spare capacity), in b's memory when b has TransferSize bytes of
// room.
func AppendTransfer(b []byte, to Address, amount uint64) []byte {
	start := len(b)
	b = append(b, TransferSelector[:]...)
	b = append(b, make([]byte, 12)...)
	body := to.Bytes20()
	b = append(b, body[:]...)
	b = append(b, make([]byte, 24)...)
	b = binary.BigEndian.AppendUint64(b, amount)
	return b[start:len(b):len(b)]
}

// ErrNotTransfer is returned by DecodeTransfer for call data that is not a
// well-formed transfer(address,uint256) with an amount that fits in uint64.
var ErrNotTransfer = errors.New("not a transfer(address,uint256) call")

// DecodeTransfer is the inverse of EncodeTransfer.
func DecodeTransfer(data []byte) (to Address, amount uint64, err error) {
	if len(data) != 68 || [4]byte(data[:4]) != TransferSelector {
		return to, 0, ErrNotTransfer
	}
	if !allZero(data[4:16]) || !allZero(data[36:60]) {
		return to, 0, ErrNotTransfer
	}
	return AddressFromBytes20([20]byte(data[16:36])), binary.BigEndian.Uint64(data[60:68]), nil
}

// Log is an EVM event log as TRON reports it: the emitting contract's 20-byte
// address (no 0x41 prefix), its topics and its data.
type Log struct {
	Address [20]byte
	Topics  [][32]byte
	Data    []byte
}

// TransferLog builds the log a successful TRC-20 transfer emits.
func TransferLog(contract, from, to Address, amount uint64) Log {
	// The topics and the data share one allocation: a log is built for
	// every transfer a node executes.
	m := &struct {
		topics [3][32]byte
		data   [32]byte
	}{topics: [3][32]byte{TransferTopic, pad32(from), pad32(to)}}
	binary.BigEndian.PutUint64(m.data[24:], amount)
	return Log{
		Address: contract.Bytes20(),
		Topics:  m.topics[:],
		Data:    m.data[:],
	}
}

// Transfer is a decoded TRC-20 Transfer event.
type Transfer struct {
	Contract Address
	From, To Address
	Amount   uint64
}

// ParseTransferLog decodes a Transfer event; ok is false for any other log,
// or one whose value does not fit in uint64.
func ParseTransferLog(l Log) (t Transfer, ok bool) {
	if len(l.Topics) != 3 || l.Topics[0] != TransferTopic || len(l.Data) != 32 {
		return t, false
	}
	if !allZero(l.Topics[1][:12]) || !allZero(l.Topics[2][:12]) || !allZero(l.Data[:24]) {
		return t, false
	}
	t.Contract = AddressFromBytes20(l.Address)
	t.From = AddressFromBytes20([20]byte(l.Topics[1][12:]))
	t.To = AddressFromBytes20([20]byte(l.Topics[2][12:]))
	t.Amount = binary.BigEndian.Uint64(l.Data[24:])
	return t, true
}

func pad32(a Address) [32]byte {
	var w [32]byte
	body := a.Bytes20()
	copy(w[12:], body[:])
	return w
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func mustHex32(s string) [32]byte {
	var w [32]byte
	if _, err := hex.Decode(w[:], []byte(s)); err != nil || len(s) != 64 {
		panic("tron: bad 32-byte hex constant " + s)
	}
	return w
}
