package tron

import (
	"context"
	"errors"
	"time"
)

// Code is a broadcast answer code as a TRON node returns it. Unknown codes are
// possible (a newer node, a proxy in between) and must be read as ambiguous.
type Code string

// The broadcast answers of java-tron. TRON.md lists the order in which the
// node checks them; Read is the one place their meaning is decided.
const (
	CodeSuccess                      Code = "SUCCESS"
	CodeNoConnection                 Code = "NO_CONNECTION"
	CodeNotEnoughEffectiveConnection Code = "NOT_ENOUGH_EFFECTIVE_CONNECTION"
	CodeServerBusy                   Code = "SERVER_BUSY"
	CodeBlockUnsolidified            Code = "BLOCK_UNSOLIDIFIED"
	CodeContractValidateError        Code = "CONTRACT_VALIDATE_ERROR"
	CodeContractExeError             Code = "CONTRACT_EXE_ERROR"
	CodeBandwidthError               Code = "BANDWITH_ERROR" // sic: TRON spells it so
	CodeDupTransactionError          Code = "DUP_TRANSACTION_ERROR"
	CodeTaposError                   Code = "TAPOS_ERROR"
	CodeTooBigTransactionError       Code = "TOO_BIG_TRANSACTION_ERROR"
	CodeTransactionExpirationError   Code = "TRANSACTION_EXPIRATION_ERROR"
	CodeSigError                     Code = "SIGERROR"
	CodeOtherError                   Code = "OTHER_ERROR"
)

// Reading says what a broadcast answer proves, following TRON.md. It is the
// only place the meaning of a code is decided.
type Reading int

const (
	// Accepted: the node has the transaction (SUCCESS, or DUP: an earlier
	// send was accepted). Verify by txid from here on.
	Accepted Reading = iota + 1
	// NotTaken: the node did not take the bytes and nothing suggests it
	// did (busy, no connection); re-send the same bytes later.
	NotTaken
	// Ambiguous: the bytes may be in a pool (relay failure after a local
	// accept, OTHER_ERROR, timeouts, transport errors, unknown codes).
	// Reconcile by txid and re-send the same bytes; never rebuild on it.
	Ambiguous
	// HardReject: these bytes can never be accepted (bad signature, too big,
	// contract or bandwidth errors). Terminal only on a first send.
	HardReject
	// NotProof: an expiration or TAPoS answer. The expiration check runs
	// before the duplicate check, so an already included transaction re-sent
	// late gets this answer: it proves nothing about death.
	NotProof
)

func (r Reading) String() string {
	switch r {
	case Accepted:
		return "accepted"
	case NotTaken:
		return "not-taken"
	case Ambiguous:
		return "ambiguous"
	case HardReject:
		return "hard-reject"
	case NotProof:
		return "not-proof"
	}
	return "reading(?)"
}

// Read classifies a broadcast code. Any code it does not know is Ambiguous.
func Read(c Code) Reading {
	switch c {
	case CodeSuccess, CodeDupTransactionError:
		return Accepted
	case CodeServerBusy, CodeNoConnection, CodeBlockUnsolidified:
		return NotTaken
	case CodeSigError, CodeTooBigTransactionError, CodeContractValidateError,
		CodeContractExeError, CodeBandwidthError:
		return HardReject
	case CodeTaposError, CodeTransactionExpirationError:
		return NotProof
	}
	return Ambiguous
}

// Intrinsic reports whether a hard reject is a property of the bytes
// themselves (a signature that does not verify, a transaction too big), the
// same answer from every node at any time. The other hard rejects
// (bandwidth, the contract's validation or execution) depend on the state
// the answering node sees, and say nothing of another node: behind a
// balancer that retries a failed call on another node, an earlier attempt of
// the same send may have been accepted there.
func Intrinsic(c Code) bool { return c == CodeSigError || c == CodeTooBigTransactionError }

// BroadcastResult is the node's answer to a broadcast that reached it and came
// back. A timeout or transport failure is an error from Broadcast instead.
type BroadcastResult struct {
	Code    Code
	Message string
}

// Status is what the node knows about a txid.
type Status int

// The numbers are stored (the PostgreSQL store's events.ev_lookup holds a
// proof's lookup as one): never reorder or renumber them
// (TestEvidenceLookupNumbersAreTheSchemas).
const (
	// Unknown: in no block the node has and not in its pending pool.
	Unknown Status = iota + 1
	// Pending: in the node's pending pool, not in a block.
	Pending
	// Included: in a block (solid or not).
	Included
)

func (s Status) String() string {
	switch s {
	case Unknown:
		return "unknown"
	case Pending:
		return "pending"
	case Included:
		return "included"
	}
	return "status(?)"
}

// Receipt results of an included transaction.
const (
	ReceiptSuccess     = "SUCCESS"
	ReceiptRevert      = "REVERT"
	ReceiptOutOfEnergy = "OUT_OF_ENERGY"
)

// TxInfo is the answer to a lookup by txid.
type TxInfo struct {
	Txid   Txid
	Status Status
	// Set only when Status is Included.
	BlockNumber int64
	BlockTime   time.Time
	Solid       bool   // the including block is at or below the solid head
	Receipt     string // ReceiptSuccess, ReceiptRevert, ReceiptOutOfEnergy, ...
	Logs        []Log
	// NodeSolid is the solid block number of the node that answered, as it
	// stood when it answered; 0 if the node did not say. An Unknown speaks
	// only for blocks up to it: behind a load balancer the node asked may
	// lag the one whose solid block a proof of death cites, and "unknown"
	// from a node that has not seen the including block proves nothing.
	NodeSolid int64
}

// Block is a block header: number, id and slot-aligned timestamp.
type Block struct {
	Number int64
	ID     [32]byte // the block id; bytes 8..16 go into ref_block_hash
	Time   time.Time
}

// Ref returns the TAPoS reference fields for a transaction built on b.
func (b Block) Ref() (refBytes [2]byte, refHash [8]byte) {
	refBytes[0] = byte(b.Number >> 8)
	refBytes[1] = byte(b.Number)
	copy(refHash[:], b.ID[8:16])
	return refBytes, refHash
}

// ErrTimeout is a request that got no answer in time: the node may or may not
// have acted on it.
var ErrTimeout = errors.New("tron node: request timed out")

// Node is what sluice needs of a TRON full node. Every method may fail with
// ErrTimeout or another transport error; no error is ever proof of anything.
type Node interface {
	// Broadcast sends a signed transaction.
	Broadcast(ctx context.Context, tx Transaction) (BroadcastResult, error)
	// Lookup asks about a txid: unknown, pending, or included (with receipt).
	Lookup(ctx context.Context, id Txid) (TxInfo, error)
	// HeadBlock is the newest block.
	HeadBlock(ctx context.Context) (Block, error)
	// SolidBlock is the newest irreversible block.
	SolidBlock(ctx context.Context) (Block, error)
}
