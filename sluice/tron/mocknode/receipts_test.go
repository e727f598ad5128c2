package mocknode

import (
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Execution: SUCCESS moves the amount and emits exactly the Transfer log a
// confirmation check looks for; every failure receipt is on chain, uses up the
// txid, moves nothing and emits no log.
func TestReceipts(t *testing.T) {
	tests := []struct {
		name        string
		balance     uint64
		override    string
		amount      uint64
		wantReceipt string
		wantLog     bool
	}{
		{"success", 100, "", 60, tron.ReceiptSuccess, true},
		{"success spends the whole balance", 100, "", 100, tron.ReceiptSuccess, true},
		{"insufficient balance reverts", 100, "", 101, tron.ReceiptRevert, false},
		{"forced revert", 100, tron.ReceiptRevert, 60, tron.ReceiptRevert, false},
		{"forced out of energy", 100, tron.ReceiptOutOfEnergy, 60, tron.ReceiptOutOfEnergy, false},
		{"other failure receipt", 100, "OUT_OF_TIME", 60, "OUT_OF_TIME", false},
		{"success override leaves the ledger in charge", 100, tron.ReceiptSuccess, 101, tron.ReceiptRevert, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.HotBalance = tt.balance })
			tx := e.tx("pay", tt.amount)
			e.node.SetOutcome(tx.Txid(), tt.override)
			e.mustSend(tx, tron.CodeSuccess)
			e.at(3 * time.Second)

			info, err := e.w1.Lookup(t.Context(), tx.Txid())
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if info.Status != tron.Included || info.BlockNumber != 1 || !info.BlockTime.Equal(genesis.Add(3*time.Second)) {
				t.Fatalf("Lookup = %s in block %d at %s, want included in block 1 at +3s", info.Status, info.BlockNumber, info.BlockTime)
			}
			if info.Receipt != tt.wantReceipt {
				t.Errorf("receipt %s, want %s", info.Receipt, tt.wantReceipt)
			}
			wantLogs := 0
			if tt.wantLog {
				wantLogs = 1
			}
			if got := len(info.Logs); got != wantLogs {
				t.Fatalf("%d logs, want %d", got, wantLogs)
			}
			wantHot, wantAlice := tt.balance, uint64(0)
			if tt.wantLog {
				wantHot, wantAlice = tt.balance-tt.amount, tt.amount
				tr, ok := tron.ParseTransferLog(info.Logs[0])
				want := tron.Transfer{Contract: tron.USDTContract, From: hot, To: alice, Amount: tt.amount}
				if !ok || tr != want {
					t.Errorf("Transfer log = %+v (ok %v), want %+v", tr, ok, want)
				}
			}
			if got := e.node.Balance(hot); got != wantHot {
				t.Errorf("hot balance %d, want %d", got, wantHot)
			}
			if got := e.node.Balance(alice); got != wantAlice {
				t.Errorf("alice balance %d, want %d", got, wantAlice)
			}

			incs := e.node.Inclusions()
			if len(incs) != 1 {
				t.Fatalf("%d inclusions, want 1", len(incs))
			}
			inc := incs[0]
			if inc.Txid != tx.Txid() || inc.Receipt != tt.wantReceipt || inc.TransferOK != tt.wantLog || inc.Owner != hot || inc.BlockNumber != 1 {
				t.Errorf("inclusion = %+v, want txid %s receipt %s transfer %v owner hot block 1", inc, tx.Txid().Short(), tt.wantReceipt, tt.wantLog)
			}
			if tt.wantLog && (inc.Transfer.To != alice || inc.Transfer.Amount != tt.amount) {
				t.Errorf("inclusion transfer = %+v, want %d to alice", inc.Transfer, tt.amount)
			}
			wantOverride := 0
			if tt.override != "" && tt.override != tron.ReceiptSuccess {
				wantOverride = 1
			}
			if got := eventCount(e.node, OverrideReceipt); got != wantOverride {
				t.Errorf("OverrideReceipt events = %d, want %d", got, wantOverride)
			}
			// A failed transaction still used up its txid.
			e.mustSend(tx, tron.CodeDupTransactionError)
		})
	}
}

// Balances carry from one transfer to the next: the second of two transfers
// that together exceed the balance reverts.
func TestBalanceAcrossTransfers(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.HotBalance = 100 })
	first, second := e.tx("first", 70), e.tx("second", 70)
	e.mustSend(first, tron.CodeSuccess)
	e.mustSend(second, tron.CodeSuccess)
	e.at(3 * time.Second)
	var got []string
	for _, inc := range e.node.Inclusions() {
		got = append(got, inc.Receipt)
	}
	if len(got) != 2 || got[0] != tron.ReceiptSuccess || got[1] != tron.ReceiptRevert {
		t.Errorf("receipts %v, want [SUCCESS REVERT]", got)
	}
	if h, a := e.node.Balance(hot), e.node.Balance(alice); h != 30 || a != 70 {
		t.Errorf("balances hot %d alice %d, want 30 and 70", h, a)
	}
	if got := eventCount(e.node, InsufficientBalance); got != 1 {
		t.Errorf("InsufficientBalance events = %d, want 1", got)
	}
}

// An included transaction becomes solid once the solid head reaches its block.
func TestLookupSolidity(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SolidLag = 3 })
	tx := e.tx("pay", 1)
	e.mustSend(tx, tron.CodeSuccess)
	if info, _ := e.w1.Lookup(t.Context(), tx.Txid()); info.Status != tron.Pending {
		t.Errorf("before the block: %s, want pending", info.Status)
	}
	for head, wantSolid := range []bool{false, false, false, false, true, true} {
		if head == 0 {
			continue
		}
		e.at(time.Duration(head) * SlotInterval)
		info, err := e.w1.Lookup(t.Context(), tx.Txid())
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if info.Solid != wantSolid {
			t.Errorf("head %d: Solid = %v, want %v", head, info.Solid, wantSolid)
		}
	}
}

// Answers are copies: a caller scribbling on a returned log or on the bytes it
// broadcast changes nothing inside the node.
func TestAnswersAreCopies(t *testing.T) {
	e := newEnv(t, nil)
	tx := e.tx("pay", 9)
	id := tx.Txid()
	e.mustSend(tx, tron.CodeSuccess)
	tx.Raw.Contract.Data[len(tx.Raw.Contract.Data)-1] = 0xff // amount 255 if it leaked
	tx.Raw.Memo[0] = 'X'
	e.at(3 * time.Second)
	info, _ := e.w1.Lookup(t.Context(), id)
	if len(info.Logs) != 1 {
		t.Fatalf("%d logs, want 1", len(info.Logs))
	}
	info.Logs[0].Data[31] = 0xff
	info.Logs[0].Topics[0] = [32]byte{}
	again, _ := e.w1.Lookup(t.Context(), id)
	tr, ok := tron.ParseTransferLog(again.Logs[0])
	if !ok || tr.Amount != 9 {
		t.Errorf("second lookup's transfer = %+v (ok %v), want amount 9", tr, ok)
	}
	if got := e.node.BlockTxids(1); len(got) != 1 || got[0] != id {
		t.Errorf("block 1 txids %v, want the original txid", got)
	}
	// The ground truth's movements too: a caller that edits or appends to
	// what Inclusions gave changes nothing the next call reports.
	incs := e.node.Inclusions()
	if len(incs) != 1 || len(incs[0].Moved) != 1 || incs[0].Moved[0].Amount != 9 {
		t.Fatalf("inclusions %+v, want one moving 9", incs)
	}
	incs[0].Moved[0].Amount = 255
	_ = append(incs[0].Moved[:0], tron.Transfer{Amount: 254})
	if again := e.node.Inclusions(); again[0].Moved[0].Amount != 9 {
		t.Errorf("after the caller edited its copy, Inclusions moves %d, want 9", again[0].Moved[0].Amount)
	}
}
