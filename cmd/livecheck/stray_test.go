package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/cmd/internal/audit"
	"sluicesim/cmd/internal/mockwallet"
	"sluicesim/model"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// refusingNode refuses the first n sends (SERVER_BUSY) and keeps what it
// was sent.
type refusingNode struct {
	n    int
	sent []tron.Transaction
}

func (f *refusingNode) HeadBlock(context.Context) (tron.Block, error) {
	return tron.Block{Number: 300, ID: [32]byte{8: 1, 9: 2}, Time: time.Unix(1_700_000_000, 0)}, nil
}

func (f *refusingNode) Broadcast(_ context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	f.sent = append(f.sent, tx)
	if len(f.sent) <= f.n {
		return tron.BroadcastResult{Code: tron.CodeServerBusy}, nil
	}
	return tron.BroadcastResult{Code: tron.CodeSuccess}, nil
}

func (f *refusingNode) Lookup(context.Context, tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{}, nil
}

// Goal: each stray is a real transfer from the hot wallet, signed with the
// key the mock verifies, of its amount to strayTo, and a refused send is
// followed by a new transaction (a refused txid may be refused for good),
// every one of which is remembered: the node saw them all. The payment
// comes first, then the one that asks more than the wallet holds.
func TestPlantStrays(t *testing.T) {
	node := &refusingNode{n: 2}
	ss, err := plantStrays(context.Background(), node, func() time.Time { return time.Unix(1_700_000_001, 0) })
	if err != nil {
		t.Fatal(err)
	}
	verify := tron.NewHMACSigner(mockwallet.Key())
	var ids []tron.Txid
	var amounts []uint64
	for _, tx := range node.sent {
		ids = append(ids, tx.Txid())
		to, amount, err := tron.DecodeTransfer(tx.Raw.Contract.Data)
		if err != nil || to != strayTo || tx.Raw.Contract.Owner != mockwallet.HotWallet || tx.Raw.Contract.Contract != tron.USDTContract {
			t.Errorf("sent %+v: a transfer to %s (%v), want USDT from the hot wallet to %s", tx.Raw, to, err, strayTo)
		}
		amounts = append(amounts, amount)
		if !verify.Verify(tx.Raw, tx.Signature) {
			t.Errorf("sent %s: its signature is not the hot wallet key's", tx.Txid())
		}
	}
	if len(ss) != 2 || len(ids) != 4 || ids[0] == ids[1] || ids[1] == ids[2] || !slices.Equal(ss[0].sent, ids[:3]) || ss[0].landed != ids[2] ||
		!slices.Equal(ss[1].sent, ids[3:]) || ss[1].landed != ids[3] {
		t.Fatalf("sends %v, planted %+v %+v; want three distinct for the payment (the third landed), one for the other", ids, ss[0], ss[1])
	}
	if want := []uint64{strayAmount, strayAmount, strayAmount, revertAmount}; !slices.Equal(amounts, want) || revertAmount <= 1_000_000_000*1_000_000 {
		t.Errorf("amounts %v, want %v, the last above the mock hot wallet's billion USDT", amounts, want)
	}
	if _, err := plantStrays(context.Background(), &refusingNode{n: 100}, time.Now); err == nil {
		t.Error("a node that refuses every send: planted, want an error")
	}
}

// Goal: the run fails unless the audit reports each stray under each check
// that must see it (reconciliation and txid-ownership both; conservation
// the payment, per txid and in the total; a rescan counting two strays),
// and every finding the strays do not explain still fails it, a
// conservation total off by anything but the payment's amount among them.
func TestStrayFindings(t *testing.T) {
	refused, paid, reverted := tron.RawData{Memo: []byte("refused")}.Txid(), tron.RawData{Memo: []byte("paid")}.Txid(), tron.RawData{Memo: []byte("reverted")}.Txid()
	ss := strays{
		{amount: strayAmount, sent: []tron.Txid{refused, paid}, landed: paid, want: []string{audit.Reconciliation, model.TxidOwnership, model.Conservation}},
		{amount: revertAmount, sent: []tron.Txid{reverted}, landed: reverted, want: []string{audit.Reconciliation, model.TxidOwnership}},
	}
	full := func() *audit.Report {
		return &audit.Report{Rescan: audit.Rescan{Strays: 2}, Violations: []model.Violation{
			{Invariant: audit.Reconciliation, Message: "txid " + paid.String() + " in solid block #21 ... a payment sluice does not know about"},
			{Invariant: model.TxidOwnership, Message: "txid " + refused.Short() + " (on the wire) belongs to no operation's history"},
			{Invariant: model.TxidOwnership, Message: "txid " + paid.Short() + " (accepted, on the wire, included) belongs to no operation's history"},
			{Invariant: model.Conservation, Message: "txid " + paid.Short() + " moved 7777777 units from the hot wallet ... but belongs to no operation"},
			{Invariant: model.Conservation, Message: "100 units left the hot wallet on chain but confirmed operations (and what moved under review) account for 92222223 (difference +7777777)"},
			{Invariant: audit.Reconciliation, Message: "txid " + reverted.String() + " in solid block #22 (receipt REVERT) was signed by the hot wallet, but no operation owns it"},
			{Invariant: model.TxidOwnership, Message: "txid " + reverted.Short() + " (accepted, on the wire, included) belongs to no operation's history"},
		}}
	}
	if rest, missed := ss.sortFindings(full()); len(rest) != 0 || len(missed) != 0 {
		t.Errorf("every finding the strays': rest %v, missed %v; want none", rest, missed)
	}
	for i, want := range []string{paid.String() + " (7777777 units asked from the hot wallet outside sluice) under reconciliation", "",
		paid.String() + " (7777777 units asked from the hot wallet outside sluice) under txid-ownership",
		paid.String() + " (7777777 units asked from the hot wallet outside sluice) under conservation", "total out by 7777777",
		reverted.String() + " (4611686018427387904 units asked from the hot wallet outside sluice) under reconciliation",
		reverted.String() + " (4611686018427387904 units asked from the hot wallet outside sluice) under txid-ownership"} {
		rep := full()
		rep.Violations = slices.Delete(rep.Violations, i, i+1)
		rest, missed := ss.sortFindings(rep)
		if want == "" { // the refused send's ownership finding: the landed one's still stands
			if len(rest) != 0 || len(missed) != 0 {
				t.Errorf("without finding %d: rest %v, missed %v; want none", i, rest, missed)
			}
			continue
		}
		if len(rest) != 0 || len(missed) != 1 || !strings.Contains(missed[0], want) {
			t.Errorf("without finding %d: rest %v, missed %v; want one missed %q", i, rest, missed, want)
		}
	}
	other := model.Violation{Invariant: model.AtMostOnce, Operation: "op-1", Message: "two inclusions"}
	offTotal := model.Violation{Invariant: model.Conservation, Message: fmt.Sprintf("... (difference +%d)", strayAmount+1)}
	rep := full()
	rep.Violations = append(slices.Delete(rep.Violations, 4, 5), other, offTotal)
	rest, missed := ss.sortFindings(rep)
	if !slices.Equal(rest, []model.Violation{other, offTotal}) || len(missed) != 1 || !strings.Contains(missed[0], "total out by") {
		t.Errorf("a finding of sluice's and a total off by more: rest %v, missed %v; want both in rest, the total missed", rest, missed)
	}
	rep = full()
	rep.Rescan.Strays = 1
	if _, missed := ss.sortFindings(rep); len(missed) != 1 || !strings.Contains(missed[0], "counted 1 strays") {
		t.Errorf("a rescan that counted one stray: missed %v", missed)
	}
	if rest, missed := strays(nil).sortFindings(full()); len(rest) != 7 || len(missed) != 0 {
		t.Errorf("nothing planted: rest %v, missed %v; want all seven, none missed", rest, missed)
	}

	// The model's chain is the node's without the strays, nothing else
	// taken, the node's own lists left as they were.
	other1, other2 := tron.RawData{Memo: []byte("op-1")}.Txid(), tron.RawData{Memo: []byte("op-2")}.Txid()
	truth := nodehttp.Truth{
		Wire:       []mocknode.WireAttempt{{Txid: other1}, {Txid: refused}, {Txid: paid}, {Txid: other2}, {Txid: reverted}},
		Accepted:   []mocknode.Acceptance{{Txid: paid}, {Txid: other1}, {Txid: reverted}},
		Inclusions: []mocknode.Inclusion{{Txid: other1}, {Txid: paid}, {Txid: reverted}},
	}
	got := ss.without(truth)
	var wireIDs []tron.Txid
	for _, w := range got.Wire {
		wireIDs = append(wireIDs, w.Txid)
	}
	if !slices.Equal(wireIDs, []tron.Txid{other1, other2}) || len(got.Accepted) != 1 || got.Accepted[0].Txid != other1 ||
		len(got.Inclusions) != 1 || got.Inclusions[0].Txid != other1 {
		t.Errorf("without the strays: %+v", got)
	}
	if len(truth.Wire) != 5 || truth.Wire[2].Txid != paid || len(truth.Inclusions) != 3 {
		t.Errorf("without changed the node's own lists: %+v", truth)
	}
}
