package mocknode

import (
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// With an energy price, a transfer buys TransferEnergy at that price up to
// its fee limit: one whose limit cannot buy it runs out of energy on chain,
// moves nothing and burns its whole limit; one whose limit can pays the
// cost and moves the amount. The price a transfer pays is its block's: a
// change takes effect for blocks produced after it.
func TestEnergyPrice(t *testing.T) {
	const price = 1_000 // sun per energy: a transfer costs 65 TRX
	cost := int64(TransferEnergy * price)
	feeLimit := func(sun int64) func(*tron.RawData) { return func(r *tron.RawData) { r.FeeLimit = sun } }
	tests := []struct {
		name        string
		price       int64
		fee         int64
		override    string
		wantReceipt string
		wantBurnt   int64
	}{
		{"no price: energy not modelled", 0, 1, "", tron.ReceiptSuccess, 0},
		{"a limit that buys the energy pays its cost", price, cost, "", tron.ReceiptSuccess, cost},
		{"a limit above the cost pays only the cost", price, 4 * cost, "", tron.ReceiptSuccess, cost},
		{"a limit one sun short runs out and burns it all", price, cost - 1, "", tron.ReceiptOutOfEnergy, cost - 1},
		{"a forced receipt decides first and burns nothing", price, cost - 1, tron.ReceiptRevert, tron.ReceiptRevert, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.node.Network().SetEnergyPrice(tt.price)
			tx := e.tx("pay", 60, feeLimit(tt.fee))
			e.node.SetOutcome(tx.Txid(), tt.override)
			e.mustSend(tx, tron.CodeSuccess)
			e.at(3 * time.Second)
			incs := e.node.Inclusions()
			if len(incs) != 1 {
				t.Fatalf("%d inclusions, want 1", len(incs))
			}
			in := incs[0]
			if in.Receipt != tt.wantReceipt || in.Burnt != tt.wantBurnt || in.FeeLimit != tt.fee {
				t.Errorf("inclusion receipt %s burnt %d fee limit %d, want %s, %d, %d", in.Receipt, in.Burnt, in.FeeLimit, tt.wantReceipt, tt.wantBurnt, tt.fee)
			}
			moved := tt.wantReceipt == tron.ReceiptSuccess
			if in.TransferOK != moved || (e.node.Balance(alice) == 60) != moved {
				t.Errorf("transfer moved %v (alice holds %d), want moved %v", in.TransferOK, e.node.Balance(alice), moved)
			}
			wantPriced := 0
			if tt.wantReceipt == tron.ReceiptOutOfEnergy && tt.override == "" {
				wantPriced = 1
			}
			if got := eventCount(e.node, PricedOutOfEnergy); got != wantPriced {
				t.Errorf("priced-out-of-energy events %d, want %d", got, wantPriced)
			}
		})
	}

	t.Run("a price change applies to blocks after it", func(t *testing.T) {
		e := newEnv(t, nil)
		net := e.node.Network()
		net.SetEnergyPrice(price)
		early := e.tx("early", 60, feeLimit(cost))
		e.mustSend(early, tron.CodeSuccess)
		e.at(3 * time.Second) // block 1 is due, not yet produced
		net.SetEnergyPrice(2 * price)
		late := e.tx("late", 60, feeLimit(cost))
		e.mustSend(late, tron.CodeSuccess)
		e.at(6 * time.Second)
		incs := e.node.Inclusions()
		if len(incs) != 2 || incs[0].Receipt != tron.ReceiptSuccess || incs[1].Receipt != tron.ReceiptOutOfEnergy {
			t.Fatalf("inclusions %+v, want early SUCCESS at the old price, late OUT_OF_ENERGY at the new", incs)
		}
	})

	t.Run("a negative price is refused", func(t *testing.T) {
		e := newEnv(t, nil)
		mustPanic(t, "not negative", func() { e.node.Network().SetEnergyPrice(-1) })
	})
}
