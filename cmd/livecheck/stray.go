package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sluicesim/cmd/internal/audit"
	"sluicesim/cmd/internal/mockwallet"
	"sluicesim/model"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// The live check plays a second system on the hot wallet (a leaked key,
// another service signing with the same wallet): right after the node comes
// up it sends two transactions from the hot wallet, outside sluice. One
// pays a stranger; the other asks for more than the wallet holds and
// reverts on chain, moving nothing, but the hot wallet signed it. Finding
// such transactions is what `sluice audit` is for, and a run in which the
// audit finds nothing proves nothing of it: without them, an audit that
// looked at no block would pass every run. So the audit must report each
// under every check that can see it (reconciliation both, by their
// signature and by the payment's Transfer log; txid-ownership both;
// conservation the payment, per txid and in the total), and every other
// finding still fails the run. The model's own check is not the audit: it
// judges sluice against the clients, and is given the chain without them.

// strayAmount is what the paying stray pays: an amount no client asks for
// (theirs are whole cents), so that the conservation total it upsets names
// it. revertAmount is more than the mock's hot wallet holds (a billion
// USDT), so that the other reverts.
const (
	strayAmount  = 7_777_777
	revertAmount = 1 << 62
)

// strayTo receives the strays: no client's recipient.
var strayTo = tron.AddressFromBytes20([20]byte{0x5e, 0xc0, 0x4d, 0x5a, 0x5e, 0xc0, 0x4d, 0x5a, 0x5e, 0xc0, 0x4d, 0x5a, 0x5e, 0xc0, 0x4d, 0x5a, 0x5e, 0xc0, 0x4d, 0x5a})

// stray is one transaction planted: every txid sent for it (a send the
// node refused is seen by it too, and the audit may name it), the one the
// node took, and the checks that must name that one.
type stray struct {
	amount uint64
	sent   []tron.Txid
	landed tron.Txid
	want   []string // invariants whose findings must name landed
}

// strays is what was planted: the payment, then the reverted one.
type strays []*stray

// strayNode is what planting needs of the node: nodehttp.Client.
type strayNode interface {
	HeadBlock(ctx context.Context) (tron.Block, error)
	Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error)
	Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error)
}

// plantStrays sends the payment and the reverting transfer.
func plantStrays(ctx context.Context, node strayNode, now func() time.Time) (strays, error) {
	paid, err := plantStray(ctx, node, now, "paid", strayAmount)
	if err != nil {
		return nil, err
	}
	paid.want = []string{audit.Reconciliation, model.TxidOwnership, model.Conservation}
	reverted, err := plantStray(ctx, node, now, "reverted", revertAmount)
	if err != nil {
		return nil, err
	}
	reverted.want = []string{audit.Reconciliation, model.TxidOwnership}
	return strays{paid, reverted}, nil
}

// plantStray sends one stray, a new transaction at each try (the node
// refuses some sends on purpose: -mock-drop-every, -mock-short-every), until
// the node takes one.
func plantStray(ctx context.Context, node strayNode, now func() time.Time, name string, amount uint64) (*stray, error) {
	signer := tron.NewHMACSigner(mockwallet.Key())
	s := &stray{amount: amount}
	for try := 1; try <= 8; try++ {
		head, err := node.HeadBlock(ctx)
		if err != nil {
			return nil, fmt.Errorf("the %s stray: head block: %w", name, err)
		}
		refBytes, refHash := head.Ref()
		raw := tron.RawData{
			RefBlockBytes: refBytes, RefBlockHash: refHash,
			Expiration: head.Time.Add(time.Minute).UnixMilli(),
			Timestamp:  now().UnixMilli(),
			FeeLimit:   40_000_000,
			Memo:       fmt.Appendf(nil, "livecheck stray %s %d", name, try),
			Contract: tron.TriggerSmartContract{Owner: mockwallet.HotWallet, Contract: tron.USDTContract,
				Data: tron.EncodeTransfer(strayTo, amount)},
		}
		sig, err := signer.Sign(ctx, raw)
		if err != nil {
			return nil, err
		}
		id := raw.Txid()
		s.sent = append(s.sent, id)
		res, err := node.Broadcast(ctx, tron.Transaction{Raw: raw, Signature: sig})
		if err != nil {
			return nil, fmt.Errorf("the %s stray: broadcast: %w", name, err)
		}
		if res.Code == tron.CodeSuccess {
			s.landed = id
			return s, nil
		}
	}
	return nil, fmt.Errorf("the %s stray: the node refused %d sends", name, len(s.sent))
}

// awaitSolid waits until every stray is in a solid block, so that the
// audit's reconciliation, which rescans solid blocks, must see them.
func (ss strays) awaitSolid(ctx context.Context, node strayNode, within time.Duration) error {
	deadline := time.Now().Add(within)
	for _, s := range ss {
		for {
			info, err := node.Lookup(ctx, s.landed)
			if err == nil && info.Status == tron.Included && info.Solid {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the stray %s is not in a solid block after %s (last lookup: %+v, %v)", s.landed, within, info, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return nil
}

// sent reports whether the live check sent id.
func (ss strays) sent(id tron.Txid) bool {
	return slices.ContainsFunc(ss, func(s *stray) bool { return slices.Contains(s.sent, id) })
}

// namesSent reports whether a finding names any txid the live check sent.
func (ss strays) namesSent(msg string) bool {
	for _, s := range ss {
		for _, id := range s.sent {
			if names(msg, id) {
				return true
			}
		}
	}
	return false
}

// names reports whether a finding names id, in full or short.
func names(msg string, id tron.Txid) bool {
	return strings.Contains(msg, id.String()) || strings.Contains(msg, id.Short())
}

// without is the chain as the model judges it: the strays' sends,
// acceptances and inclusions taken out (they are not sluice's, and the
// model holds sluice to the clients).
func (ss strays) without(t nodehttp.Truth) nodehttp.Truth {
	if len(ss) == 0 {
		return t
	}
	t.Wire = slices.DeleteFunc(slices.Clone(t.Wire), func(a mocknode.WireAttempt) bool { return ss.sent(a.Txid) })
	t.Accepted = slices.DeleteFunc(slices.Clone(t.Accepted), func(a mocknode.Acceptance) bool { return ss.sent(a.Txid) })
	t.Inclusions = slices.DeleteFunc(slices.Clone(t.Inclusions), func(in mocknode.Inclusion) bool { return ss.sent(in.Txid) })
	return t
}

// sortFindings splits the audit's findings into those the strays explain
// and the rest (each fails the run), and lists what the audit should have
// found of the strays that landed and did not. With nothing planted every
// finding is the rest.
func (ss strays) sortFindings(rep *audit.Report) (rest []model.Violation, missed []string) {
	if len(ss) == 0 {
		return rep.Violations, nil
	}
	var paid uint64
	for _, s := range ss {
		if slices.Contains(s.want, model.Conservation) {
			paid += s.amount
		}
	}
	total := fmt.Sprintf("(difference +%d)", paid)
	found := map[tron.Txid]map[string]int{}
	totalFound := false
	for _, v := range rep.Violations {
		var by *stray
		for _, s := range ss {
			if names(v.Message, s.landed) {
				by = s
			}
		}
		switch {
		case by != nil:
			if found[by.landed] == nil {
				found[by.landed] = map[string]int{}
			}
			found[by.landed][v.Invariant]++
		case ss.namesSent(v.Message):
			// A refused send: the node saw it, so txid-ownership may name
			// it; expected, not required.
		case v.Invariant == model.Conservation && v.Operation == "" && strings.HasSuffix(v.Message, total):
			totalFound = true
		default:
			rest = append(rest, v)
		}
	}
	for _, s := range ss {
		for _, inv := range s.want {
			if found[s.landed][inv] == 0 {
				missed = append(missed, fmt.Sprintf("the audit did not report the stray %s (%d units asked from the hot wallet outside sluice) under %s", s.landed, s.amount, inv))
			}
		}
	}
	if !totalFound {
		missed = append(missed, fmt.Sprintf("the audit did not report the hot wallet's total out by %d, what the stray paid outside sluice, under conservation", paid))
	}
	if rep.Rescan.Strays != len(ss) {
		missed = append(missed, fmt.Sprintf("the audit's rescan counted %d strays, want the %d the live check planted", rep.Rescan.Strays, len(ss)))
	}
	return rest, missed
}
