package nodehttp

import (
	"encoding/hex"
	"fmt"
	"time"

	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// Endpoint paths.
const (
	PathBroadcast = "/wallet/broadcasttransaction"
	PathLookup    = "/wallet/gettransactioninfobyid"
	PathHead      = "/wallet/getnowblock"
	PathSolid     = "/walletsolidity/getnowblock"
	PathTruth     = "/mock/truth"
	PathHealth    = "/healthz"
)

// HeaderCaller names the caller of a node call.
const HeaderCaller = "X-Node-Caller"

// bodyMax bounds request and answer bodies of node calls. A transaction is a
// few hundred bytes; a lookup answer a few logs.
const bodyMax = 1 << 20

// txJSON is a transaction on the wire: byte fields in hex, addresses in
// base58, and the txid the sender computed, which the server checks.
type txJSON struct {
	Txid          tron.Txid    `json:"txid"`
	RefBlockBytes string       `json:"ref_block_bytes"`
	RefBlockHash  string       `json:"ref_block_hash"`
	Expiration    int64        `json:"expiration"`
	Timestamp     int64        `json:"timestamp"`
	FeeLimit      int64        `json:"fee_limit"`
	Memo          string       `json:"memo"`
	Owner         tron.Address `json:"owner_address"`
	Contract      tron.Address `json:"contract_address"`
	Data          string       `json:"data"`
	Signature     string       `json:"signature"`
}

func encodeTx(tx tron.Transaction) txJSON {
	r := tx.Raw
	return txJSON{
		Txid:          tx.Txid(),
		RefBlockBytes: hex.EncodeToString(r.RefBlockBytes[:]),
		RefBlockHash:  hex.EncodeToString(r.RefBlockHash[:]),
		Expiration:    r.Expiration,
		Timestamp:     r.Timestamp,
		FeeLimit:      r.FeeLimit,
		Memo:          hex.EncodeToString(r.Memo),
		Owner:         r.Contract.Owner,
		Contract:      r.Contract.Contract,
		Data:          hex.EncodeToString(r.Contract.Data),
		Signature:     hex.EncodeToString(tx.Signature),
	}
}

// decode rebuilds the transaction and checks that its txid is the one the
// sender named: a transaction mangled on the way must not reach the node.
func (j txJSON) decode() (tron.Transaction, error) {
	var tx tron.Transaction
	if err := hexInto(tx.Raw.RefBlockBytes[:], j.RefBlockBytes, "ref_block_bytes"); err != nil {
		return tx, err
	}
	if err := hexInto(tx.Raw.RefBlockHash[:], j.RefBlockHash, "ref_block_hash"); err != nil {
		return tx, err
	}
	var err error
	if tx.Raw.Memo, err = hexBytes(j.Memo, "memo"); err != nil {
		return tx, err
	}
	if tx.Raw.Contract.Data, err = hexBytes(j.Data, "data"); err != nil {
		return tx, err
	}
	if tx.Signature, err = hexBytes(j.Signature, "signature"); err != nil {
		return tx, err
	}
	tx.Raw.Expiration, tx.Raw.Timestamp, tx.Raw.FeeLimit = j.Expiration, j.Timestamp, j.FeeLimit
	tx.Raw.Contract.Owner, tx.Raw.Contract.Contract = j.Owner, j.Contract
	if got := tx.Txid(); got != j.Txid {
		return tx, fmt.Errorf("txid %s does not match the transaction's raw data (%s)", j.Txid, got)
	}
	return tx, nil
}

func hexInto(dst []byte, s, field string) error {
	b, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if len(b) != len(dst) {
		return fmt.Errorf("%s: %d bytes, want %d", field, len(b), len(dst))
	}
	copy(dst, b)
	return nil
}

// hexBytes decodes s; "" is nil, as the transaction's optional fields are.
func hexBytes(s, field string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return b, nil
}

type broadcastRequest struct {
	Transaction txJSON `json:"transaction"`
}

type broadcastAnswer struct {
	Code    tron.Code `json:"code"`
	Message string    `json:"message,omitempty"`
}

type lookupRequest struct {
	Txid tron.Txid `json:"txid"`
}

type logJSON struct {
	Address string   `json:"address"`
	Topics  []string `json:"topics"`
	Data    string   `json:"data"`
}

type txInfoJSON struct {
	Txid        tron.Txid `json:"txid"`
	Status      string    `json:"status"` // unknown, pending, included
	BlockNumber int64     `json:"block_number,omitempty"`
	BlockTime   time.Time `json:"block_time,omitzero"`
	Solid       bool      `json:"solid,omitempty"`
	Receipt     string    `json:"receipt,omitempty"`
	Logs        []logJSON `json:"logs,omitempty"`
	NodeSolid   int64     `json:"node_solid,omitempty"`
}

func encodeInfo(in tron.TxInfo) txInfoJSON {
	out := txInfoJSON{Txid: in.Txid, Status: in.Status.String(), BlockNumber: in.BlockNumber,
		BlockTime: in.BlockTime, Solid: in.Solid, Receipt: in.Receipt, NodeSolid: in.NodeSolid}
	for _, l := range in.Logs {
		lj := logJSON{Address: hex.EncodeToString(l.Address[:]), Data: hex.EncodeToString(l.Data)}
		for _, t := range l.Topics {
			lj.Topics = append(lj.Topics, hex.EncodeToString(t[:]))
		}
		out.Logs = append(out.Logs, lj)
	}
	return out
}

func (j txInfoJSON) decode() (tron.TxInfo, error) {
	out := tron.TxInfo{Txid: j.Txid, BlockNumber: j.BlockNumber, Solid: j.Solid, Receipt: j.Receipt, NodeSolid: j.NodeSolid}
	switch j.Status {
	case "unknown":
		out.Status = tron.Unknown
	case "pending":
		out.Status = tron.Pending
	case "included":
		out.Status = tron.Included
	default:
		return out, fmt.Errorf("status %q: want unknown, pending or included", j.Status)
	}
	if out.Status == tron.Included && (j.BlockNumber <= 0 || j.BlockTime.IsZero() || j.Receipt == "") {
		return out, fmt.Errorf("included without block_number, block_time or receipt")
	}
	if !j.BlockTime.IsZero() {
		out.BlockTime = j.BlockTime.UTC()
	}
	for i, lj := range j.Logs {
		var l tron.Log
		if err := hexInto(l.Address[:], lj.Address, fmt.Sprintf("logs[%d].address", i)); err != nil {
			return out, err
		}
		for k, ts := range lj.Topics {
			var t [32]byte
			if err := hexInto(t[:], ts, fmt.Sprintf("logs[%d].topics[%d]", i, k)); err != nil {
				return out, err
			}
			l.Topics = append(l.Topics, t)
		}
		var err error
		if l.Data, err = hexBytes(lj.Data, fmt.Sprintf("logs[%d].data", i)); err != nil {
			return out, err
		}
		out.Logs = append(out.Logs, l)
	}
	return out, nil
}

type blockJSON struct {
	Number *int64    `json:"number"`
	ID     string    `json:"block_id"`
	Time   time.Time `json:"timestamp"`
}

func encodeBlock(b tron.Block) blockJSON {
	return blockJSON{Number: &b.Number, ID: hex.EncodeToString(b.ID[:]), Time: b.Time}
}

func (j blockJSON) decode() (tron.Block, error) {
	if j.Number == nil || *j.Number < 0 || j.Time.IsZero() {
		return tron.Block{}, fmt.Errorf("block without a number or a timestamp")
	}
	b := tron.Block{Number: *j.Number, Time: j.Time.UTC()}
	if err := hexInto(b.ID[:], j.ID, "block_id"); err != nil {
		return b, err
	}
	return b, nil
}

// Truth is the mock node's ground truth, for the live checker: what really
// happened on the wire and on chain (see mocknode's accessors of the same
// names). It never feeds a worker.
type Truth struct {
	Wire       []mocknode.WireAttempt `json:"wire"`
	Accepted   []mocknode.Acceptance  `json:"accepted"`
	Inclusions []mocknode.Inclusion   `json:"inclusions"`
	Blocks     []tron.Block           `json:"-"`
	Solid      tron.Block             `json:"-"`
	HotWallet  tron.Address           `json:"hot_wallet"`
}

// truthJSON carries the blocks in the same form as the node calls.
type truthJSON struct {
	Truth
	Blocks []blockJSON `json:"blocks"`
	Solid  blockJSON   `json:"solid"`
}

func encodeTruth(t Truth) truthJSON {
	out := truthJSON{Truth: t, Solid: encodeBlock(t.Solid)}
	out.Blocks = make([]blockJSON, len(t.Blocks))
	for i, b := range t.Blocks {
		out.Blocks[i] = encodeBlock(b)
	}
	return out
}

func (j truthJSON) decode() (Truth, error) {
	t := j.Truth
	var err error
	if t.Solid, err = j.Solid.decode(); err != nil {
		return t, fmt.Errorf("solid: %w", err)
	}
	t.Blocks = make([]tron.Block, len(j.Blocks))
	for i, bj := range j.Blocks {
		if t.Blocks[i], err = bj.decode(); err != nil {
			return t, fmt.Errorf("blocks[%d]: %w", i, err)
		}
	}
	// JSON keeps instants, not locations; the mock's times are UTC.
	for i := range t.Wire {
		t.Wire[i].At = t.Wire[i].At.UTC()
	}
	for i := range t.Accepted {
		t.Accepted[i].First = t.Accepted[i].First.UTC()
	}
	for i := range t.Inclusions {
		t.Inclusions[i].BlockTime = t.Inclusions[i].BlockTime.UTC()
	}
	return t, nil
}
