package metrics

import (
	"context"
	"errors"

	"sluicesim/sluice/tron"
)

// The calls of tron.Node, the label of the node metrics.
const (
	callBroadcast = "broadcast"
	callLookup    = "lookup"
	callHead      = "head_block"
	callSolid     = "solid_block"
)

var calls = []string{callBroadcast, callLookup, callHead, callSolid}

// knownCodes are the broadcast codes counted under their own name. Any
// other code (a newer node, a proxy, a hostile answer) is counted as
// "unknown_code": a label value taken from the wire would let whoever
// answers grow the number of series without bound.
var knownCodes = map[tron.Code]bool{
	tron.CodeNoConnection: true, tron.CodeNotEnoughEffectiveConnection: true, tron.CodeServerBusy: true,
	tron.CodeBlockUnsolidified: true, tron.CodeContractValidateError: true, tron.CodeContractExeError: true,
	tron.CodeBandwidthError: true, tron.CodeDupTransactionError: true, tron.CodeTaposError: true,
	tron.CodeTooBigTransactionError: true, tron.CodeTransactionExpirationError: true, tron.CodeSigError: true,
	tron.CodeOtherError: true,
}

// Node wraps n so that every call is counted, and every failure: a call
// error by kind (timeout, canceled, error) and a broadcast answer other
// than SUCCESS or DUP_TRANSACTION_ERROR by its code. Answers pass through
// unchanged.
func (m *Metrics) Node(n tron.Node) tron.Node {
	if n == nil {
		panic("metrics.Node: nil node")
	}
	return countingNode{inner: n, m: m}
}

type countingNode struct {
	inner tron.Node
	m     *Metrics
}

func (c countingNode) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	res, err := c.inner.Broadcast(ctx, tx)
	c.count(callBroadcast, err)
	// DUP_TRANSACTION_ERROR says the node already holds the transaction:
	// an acceptance, and the usual answer to a re-send of the same bytes,
	// which the core makes on purpose. Counting it would make a routine
	// recovery look like node trouble.
	if err == nil && res.Code != tron.CodeSuccess && res.Code != tron.CodeDupTransactionError {
		code := "unknown_code"
		if knownCodes[res.Code] {
			code = string(res.Code)
		}
		c.m.nodeErrors.WithLabelValues(callBroadcast, code).Inc()
	}
	return res, err
}

func (c countingNode) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	info, err := c.inner.Lookup(ctx, id)
	c.count(callLookup, err)
	return info, err
}

func (c countingNode) HeadBlock(ctx context.Context) (tron.Block, error) {
	b, err := c.inner.HeadBlock(ctx)
	c.count(callHead, err)
	return b, err
}

func (c countingNode) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := c.inner.SolidBlock(ctx)
	c.count(callSolid, err)
	return b, err
}

// callErrorKinds are count's labels for a call that failed.
var callErrorKinds = []string{"timeout", "canceled", "error"}

func (c countingNode) count(call string, err error) {
	c.m.nodeCalls.WithLabelValues(call).Inc()
	switch {
	case err == nil:
	case errors.Is(err, tron.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		c.m.nodeErrors.WithLabelValues(call, "timeout").Inc()
	case errors.Is(err, context.Canceled):
		c.m.nodeErrors.WithLabelValues(call, "canceled").Inc()
	default:
		c.m.nodeErrors.WithLabelValues(call, "error").Inc()
	}
}
