package mocknode

import (
	"fmt"

	"sluicesim/sluice/tron"
)

// unknownCode is what UnknownCode makes the caller see: a code no version of
// sluice knows, which must read as ambiguous.
const unknownCode tron.Code = "TRANSACTION_QUEUED"

// sigRefusal is SignatureLie's answer.
var sigRefusal = tron.BroadcastResult{Code: tron.CodeSigError, Message: "signature does not verify against this node's view of the account's permissions (injected)"}

// AnswerTimeout is the Answer recorded for a call whose caller got no answer.
const AnswerTimeout = "timeout"

// broadcast is Broadcast for worker of tx, whose txid is id: pick the fault,
// let the node process the transaction unless the fault stops it, then shape
// what the caller sees.
func (n *Node) broadcast(worker string, tx tron.Transaction, id tron.Txid) (tron.BroadcastResult, error) {
	net := n.net
	net.advance()
	net.seq++
	f := n.pick(Call{Kind: Broadcast, Worker: worker, Txid: id, Node: n.index})
	w := WireAttempt{
		Seq:    net.seq,
		Worker: worker,
		Txid:   id,
		At:     net.clock.Now(),
		Head:   n.head().Number,
		Fault:  f,
		Node:   n.index,
	}

	var res tron.BroadcastResult
	timeout := false
	switch {
	case f == LoseRequest:
		w.Fired = true
		timeout = true
	case f == Busy:
		w.Fired = true
		res = tron.BroadcastResult{Code: tron.CodeServerBusy, Message: "server busy (injected)"}
	case f == NoConnection:
		w.Fired = true
		res = tron.BroadcastResult{Code: tron.CodeNoConnection, Message: "no connection (injected)"}
	case f == BandwidthExhausted:
		w.Fired = true
		res = tron.BroadcastResult{Code: tron.CodeBandwidthError, Message: "account out of bandwidth (injected)"}
	case f == ContractStateRefusal:
		w.Fired = true
		res = tron.BroadcastResult{Code: tron.CodeContractValidateError, Message: "Validate TriggerSmartContract error, no OwnerAccount (injected)"}
	case f == SignatureLie && !n.holds(id) && net.heldByAnother(n, id):
		// java-tron checks the signature before it takes the bytes: a
		// node that does not hold them refuses them without taking them,
		// while the copy another node holds may still land.
		w.Fired = true
		res = sigRefusal
	default:
		w.Reached = true
		heldBefore := n.inPool[id] || n.isOnChain(id)
		res = n.accept(tx, id)
		w.Truth = res.Code
		w.Accepted = res.Code == tron.CodeSuccess || res.Code == tron.CodeDupTransactionError
		alive := n.inPool[id] || n.isOnChain(id)
		switch f {
		case AcceptThenTimeout:
			w.Fired = true
			timeout = true
		case UnknownCode:
			w.Fired = true
			res = tron.BroadcastResult{Code: unknownCode, Message: "unrecognised answer (injected)"}
		case RelayFailAfterAccept:
			if res.Code == tron.CodeSuccess {
				w.Fired = true
				res = tron.BroadcastResult{Code: tron.CodeNotEnoughEffectiveConnection, Message: "relay to peers failed (injected)"}
			}
		case OtherErrorAfterAccept:
			if res.Code == tron.CodeSuccess {
				w.Fired = true
				res = tron.BroadcastResult{Code: tron.CodeOtherError, Message: "other error (injected)"}
			}
		case ExpirationLie:
			// Only a transaction the node has (pending or included) gets
			// the lie: that is the case the answer must not be read as
			// proof of death.
			if alive && res.Code != tron.CodeTransactionExpirationError {
				w.Fired = true
				res = tron.BroadcastResult{Code: tron.CodeTransactionExpirationError, Message: "transaction expired (injected)"}
			}
		case TaposLie:
			if alive && res.Code != tron.CodeTaposError {
				w.Fired = true
				res = tron.BroadcastResult{Code: tron.CodeTaposError, Message: "tapos check failed (injected)"}
			}
		case SignatureLie:
			// Only bytes the node held before this call: a node that
			// refuses a signature never takes the bytes itself.
			if heldBefore && res.Code != tron.CodeSigError {
				w.Fired = true
				res = sigRefusal
			}
		}
	}
	if w.Fired {
		n.fired[f]++
	}
	if timeout {
		w.Answer = AnswerTimeout
	} else {
		w.Answer = string(res.Code)
	}
	net.wire.push(w)
	// A transaction this call put into the pool is gossiped to the other
	// nodes, unless the answer says the relay to peers failed.
	if w.Truth == tron.CodeSuccess && !(f == RelayFailAfterAccept && w.Fired) {
		net.spread(n, n.pool[len(n.pool)-1], w.At, false)
	}
	if timeout {
		return tron.BroadcastResult{}, &timeoutError{call: "broadcast", worker: worker, txid: id, hasTxid: true}
	}
	return res, nil
}

// accept runs java-tron's broadcast checks in their real order and, if all
// pass, puts the transaction into the pool. The order is observable and
// matters: an included transaction re-sent after its expiration gets
// TRANSACTION_EXPIRATION_ERROR, not DUP_TRANSACTION_ERROR, because the
// expiration check comes first.
func (n *Node) accept(tx tron.Transaction, id tron.Txid) tron.BroadcastResult {
	raw := tx.Raw
	reject := func(c tron.Code, format string, args ...any) tron.BroadcastResult {
		return tron.BroadcastResult{Code: c, Message: fmt.Sprintf(format, args...)}
	}

	if res, passed := n.precheck(tx, id); !passed {
		return res
	}
	// The bandwidth check would come here; the node models no bandwidth
	// (see CanRefuseForBandwidth for a world that does).
	if _, _, err := tron.DecodeTransfer(raw.Contract.Data); err != nil {
		return reject(tron.CodeContractValidateError, "call data: %v", err)
	}
	if raw.Contract.Contract != tron.USDTContract {
		return reject(tron.CodeContractValidateError, "contract %s is not USDT", raw.Contract.Contract)
	}

	net := n.net
	n.pool = append(n.pool, pending{tx: cloneTx(tx), id: id, arrived: net.clock.Now()})
	n.inPool[id] = true
	if i, ok := net.acceptIdx[id]; ok {
		net.accepted[i].Times++
	} else {
		net.acceptIdx[id] = len(net.accepted)
		net.accepted = append(net.accepted, Acceptance{Txid: id, Times: 1, First: net.clock.Now()})
	}
	return tron.BroadcastResult{Code: tron.CodeSuccess}
}

// precheck runs, in java-tron's order, the broadcast checks that come before
// the bandwidth check: pool room, contract present, expiration window,
// signature, TAPoS, size, duplicate. passed is false with the refusal of the
// first that fails.
func (n *Node) precheck(tx tron.Transaction, id tron.Txid) (res tron.BroadcastResult, passed bool) {
	raw := tx.Raw
	head := n.head()
	headMs := head.Time.UnixMilli()
	reject := func(c tron.Code, format string, args ...any) (tron.BroadcastResult, bool) {
		return tron.BroadcastResult{Code: c, Message: fmt.Sprintf(format, args...)}, false
	}

	if len(n.pool) >= n.net.cfg.PoolMax {
		return reject(tron.CodeServerBusy, "pending pool holds %d transactions", len(n.pool))
	}
	if raw.Contract.Contract.IsZero() || len(raw.Contract.Data) == 0 {
		return reject(tron.CodeContractValidateError, "no contract")
	}
	if lo, hi := headMs+ExpirationLeadMin.Milliseconds(), headMs+ExpirationLeadMax.Milliseconds(); raw.Expiration < lo || raw.Expiration > hi {
		return reject(tron.CodeTransactionExpirationError, "expiration %d outside [%d, %d] (head %d at %d)", raw.Expiration, lo, hi, head.Number, headMs)
	}
	if !n.verify(raw, tx.Signature) {
		return reject(tron.CodeSigError, "signature does not verify")
	}
	if !n.taposOK(raw) {
		return reject(tron.CodeTaposError, "ref block %x/%x is not among the last %d blocks", raw.RefBlockBytes, raw.RefBlockHash, TaposWindow)
	}
	if size := raw.Size() + len(tx.Signature); size > n.net.cfg.MaxTxBytes {
		return reject(tron.CodeTooBigTransactionError, "transaction is %d bytes, limit %d", size, n.net.cfg.MaxTxBytes)
	}
	if n.inPool[id] || n.isOnChain(id) {
		return reject(tron.CodeDupTransactionError, "dup transaction %s", id)
	}
	return tron.BroadcastResult{}, true
}

func (n *Node) verify(raw tron.RawData, sig []byte) bool {
	if n.net.cfg.Verifier == nil {
		return len(sig) > 0
	}
	return n.net.cfg.Verifier.Verify(raw, sig)
}

// taposOK checks the TAPoS reference against the node's view of the chain:
// the block whose number has the low 16 bits RefBlockBytes among the last
// TaposWindow blocks (there is exactly one candidate, block numbers being
// consecutive) must have id bytes 8..16 equal to RefBlockHash. A lagging node
// does not know a block above its height: a reference to one fails here.
func (n *Node) taposOK(raw tron.RawData) bool {
	if n.fork == nil {
		return n.net.refOK(raw, n.height())
	}
	return taposOK(raw, n.height(), n.block) // a stale fork's own blocks
}

// heldByAnother: a node other than n holds the txid (its pool or its
// chain), so that a copy of the bytes may land whatever n answers.
func (net *Network) heldByAnother(n *Node, id tron.Txid) bool {
	for _, o := range net.nodes {
		if o != n && o.holds(id) {
			return true
		}
	}
	return false
}
