package mocknode

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

var (
	feeAddr = tron.AddressFromBytes20([20]byte{0xfe, 0xe0})
	eve     = tron.AddressFromBytes20([20]byte{0xee, 0xee})
	fake    = tron.AddressFromBytes20([20]byte{0xfa, 0x4e}) // a contract that is not USDT
)

// Goal: every execution variant moves on the ledger exactly what
// Inclusion.Moved says, and the node reports logs that say the same, except
// under an explicit lie. Method: one transfer of 1000 to alice from a hot
// wallet of 5000, the hook returning each row's execution; compare the
// receipt, the logs a Lookup returns, Moved, Transfer, the balances, and
// whether sluice's confirmation check (a USDT Transfer log from the hot
// wallet to alice for 1000) would pass.
func TestExecutionVariants(t *testing.T) {
	usdt := func(from, to tron.Address, amount uint64) tron.Transfer {
		return tron.Transfer{Contract: tron.USDTContract, From: from, To: to, Amount: amount}
	}
	asked := tron.TransferLog(tron.USDTContract, hot, alice, 1000)
	tests := []struct {
		name        string
		noHook      bool
		ex          Execution
		wantReceipt string
		wantLogs    []tron.Transfer // decoded Transfer logs, in order
		wantMoved   []tron.Transfer
		wantBal     map[tron.Address]uint64 // every address not named holds 0 (hot: 5000 - what left)
		wantConfirm bool
	}{
		{
			name: "no hook: exact", noHook: true, wantReceipt: "SUCCESS",
			wantLogs: []tron.Transfer{usdt(hot, alice, 1000)}, wantMoved: []tron.Transfer{usdt(hot, alice, 1000)},
			wantBal: map[tron.Address]uint64{alice: 1000}, wantConfirm: true,
		},
		{
			name: "hook returns the zero execution: exact", wantReceipt: "SUCCESS",
			wantLogs: []tron.Transfer{usdt(hot, alice, 1000)}, wantMoved: []tron.Transfer{usdt(hot, alice, 1000)},
			wantBal: map[tron.Address]uint64{alice: 1000}, wantConfirm: true,
		},
		{
			name: "success without a transfer", ex: Execution{NoTransfer: true}, wantReceipt: "SUCCESS",
			wantBal: map[tron.Address]uint64{},
		},
		{
			name: "fee on transfer", ex: Execution{Fee: 30, FeeTo: feeAddr}, wantReceipt: "SUCCESS",
			wantLogs:  []tron.Transfer{usdt(hot, feeAddr, 30), usdt(hot, alice, 970)},
			wantMoved: []tron.Transfer{usdt(hot, feeAddr, 30), usdt(hot, alice, 970)},
			wantBal:   map[tron.Address]uint64{alice: 970, feeAddr: 30},
		},
		{
			name: "zero fee: exact", ex: Execution{FeeTo: feeAddr}, wantReceipt: "SUCCESS",
			wantLogs: []tron.Transfer{usdt(hot, alice, 1000)}, wantMoved: []tron.Transfer{usdt(hot, alice, 1000)},
			wantBal: map[tron.Address]uint64{alice: 1000}, wantConfirm: true,
		},
		{
			name: "fee takes everything", ex: Execution{Fee: 1000, FeeTo: feeAddr}, wantReceipt: "SUCCESS",
			wantLogs:  []tron.Transfer{usdt(hot, feeAddr, 1000), usdt(hot, alice, 0)},
			wantMoved: []tron.Transfer{usdt(hot, feeAddr, 1000), usdt(hot, alice, 0)},
			wantBal:   map[tron.Address]uint64{feeAddr: 1000},
		},
		{
			name: "extra log from another contract", wantReceipt: "SUCCESS",
			ex: Execution{Extra: []tron.Log{tron.TransferLog(fake, hot, alice, 1000)}},
			wantLogs: []tron.Transfer{
				{Contract: fake, From: hot, To: alice, Amount: 1000}, usdt(hot, alice, 1000),
			},
			wantMoved: []tron.Transfer{usdt(hot, alice, 1000)},
			wantBal:   map[tron.Address]uint64{alice: 1000}, wantConfirm: true,
		},
		{
			name: "redirected to another recipient", ex: Execution{Redirect: true, To: eve, Amount: 1000}, wantReceipt: "SUCCESS",
			wantLogs: []tron.Transfer{usdt(hot, eve, 1000)}, wantMoved: []tron.Transfer{usdt(hot, eve, 1000)},
			wantBal: map[tron.Address]uint64{eve: 1000},
		},
		{
			name: "another amount", ex: Execution{Redirect: true, To: alice, Amount: 1001}, wantReceipt: "SUCCESS",
			wantLogs: []tron.Transfer{usdt(hot, alice, 1001)}, wantMoved: []tron.Transfer{usdt(hot, alice, 1001)},
			wantBal: map[tron.Address]uint64{alice: 1001},
		},
		{
			name: "redirect beyond the balance reverts", ex: Execution{Redirect: true, To: eve, Amount: 5001}, wantReceipt: "REVERT",
			wantBal: map[tron.Address]uint64{},
		},
		{
			name: "lie: the asked log, nothing moved", ex: Execution{NoTransfer: true, Lie: true, Logs: []tron.Log{asked}}, wantReceipt: "SUCCESS",
			wantLogs: []tron.Transfer{usdt(hot, alice, 1000)},
			wantBal:  map[tron.Address]uint64{}, wantConfirm: true,
		},
		{
			name: "lie: the asked log over a redirect", ex: Execution{Redirect: true, To: eve, Amount: 1000, Lie: true, Logs: []tron.Log{asked}}, wantReceipt: "SUCCESS",
			wantLogs: []tron.Transfer{usdt(hot, alice, 1000)}, wantMoved: []tron.Transfer{usdt(hot, eve, 1000)},
			wantBal: map[tron.Address]uint64{eve: 1000}, wantConfirm: true,
		},
		{
			name: "lie: paid, no log", ex: Execution{Lie: true}, wantReceipt: "SUCCESS",
			wantMoved: []tron.Transfer{usdt(hot, alice, 1000)},
			wantBal:   map[tron.Address]uint64{alice: 1000},
		},
		{
			name: "fee on a redirect, with an extra log", wantReceipt: "SUCCESS",
			ex: Execution{Redirect: true, To: eve, Amount: 500, Fee: 5, FeeTo: feeAddr, Extra: []tron.Log{tron.TransferLog(fake, hot, alice, 1000)}},
			wantLogs: []tron.Transfer{
				{Contract: fake, From: hot, To: alice, Amount: 1000}, usdt(hot, feeAddr, 5), usdt(hot, eve, 495),
			},
			wantMoved: []tron.Transfer{usdt(hot, feeAddr, 5), usdt(hot, eve, 495)},
			wantBal:   map[tron.Address]uint64{eve: 495, feeAddr: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.HotBalance = 5000 })
			if !tt.noHook {
				e.node.Network().SetExecution(func(ExecRequest) Execution { return tt.ex })
			}
			tx := e.tx("pay", 1000)
			e.mustSend(tx, tron.CodeSuccess)
			e.at(3 * time.Second)

			info, err := e.w1.Lookup(t.Context(), tx.Txid())
			if err != nil || info.Status != tron.Included {
				t.Fatalf("Lookup = %+v, %v; want included", info, err)
			}
			if info.Receipt != tt.wantReceipt {
				t.Errorf("receipt %s, want %s", info.Receipt, tt.wantReceipt)
			}
			logs, others := transfers(info.Logs)
			if !reflect.DeepEqual(logs, tt.wantLogs) || others != 0 {
				t.Errorf("logs say %+v (+%d other logs), want %+v", logs, others, tt.wantLogs)
			}
			inc := e.node.Inclusions()[0]
			if !reflect.DeepEqual(inc.Moved, tt.wantMoved) {
				t.Errorf("Moved = %+v, want %+v", inc.Moved, tt.wantMoved)
			}
			// Transfer is the movement to the recipient: the last one.
			wantOK := len(tt.wantMoved) > 0
			if inc.TransferOK != wantOK || (wantOK && inc.Transfer != tt.wantMoved[len(tt.wantMoved)-1]) {
				t.Errorf("Transfer = %+v (ok %v), want the last movement (ok %v)", inc.Transfer, inc.TransferOK, wantOK)
			}
			// The ledger is exactly Moved: the hot wallet paid what Debited
			// says, everyone else got what Moved says.
			var left uint64
			for _, a := range []tron.Address{alice, eve, feeAddr} {
				left += tt.wantBal[a]
				if got := e.node.Balance(a); got != tt.wantBal[a] {
					t.Errorf("balance of %s = %d, want %d", a, got, tt.wantBal[a])
				}
			}
			if got := e.node.Balance(hot); got != 5000-left {
				t.Errorf("hot balance %d, want %d", got, 5000-left)
			}
			if got := inc.Debited(hot); got != left {
				t.Errorf("Debited(hot) = %d, want %d", got, left)
			}
			if got := confirms(info.Logs, alice, 1000); got != tt.wantConfirm {
				t.Errorf("sluice's log check passes = %v, want %v", got, tt.wantConfirm)
			}
			if !tt.noHook && !reflect.DeepEqual(inc.Execution, tt.ex) {
				t.Errorf("Inclusion.Execution = %+v, want %+v", inc.Execution, tt.ex)
			}
			wantOdd := 0
			if !tt.ex.IsExact() && tt.wantReceipt == tron.ReceiptSuccess {
				wantOdd = 1
			}
			if got := eventCount(e.node, OddExecution); got != wantOdd {
				t.Errorf("OddExecution events = %d, want %d", got, wantOdd)
			}
		})
	}
}

// confirms is sluice's confirmation check on logs (pipeline.transferMatches):
// a USDT Transfer log from the hot wallet to `to` for exactly amount.
func confirms(logs []tron.Log, to tron.Address, amount uint64) bool {
	for _, l := range logs {
		if tr, ok := tron.ParseTransferLog(l); ok && tr.Contract == tron.USDTContract && tr.From == hot && tr.To == to && tr.Amount == amount {
			return true
		}
	}
	return false
}

// Goal: the hook is asked once per successful inclusion, with the request as
// the call data and the ledger have it, and never for a transfer that fails
// anyway (a SetOutcome override, an owner who cannot pay).
func TestExecutionHookAsked(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.HotBalance = 100 })
	var asked []ExecRequest
	e.node.Network().SetExecution(func(r ExecRequest) Execution { asked = append(asked, r); return Execution{} })
	ok, forced, poor := e.tx("ok", 60), e.tx("forced", 10), e.tx("poor", 60)
	e.node.SetOutcome(forced.Txid(), tron.ReceiptOutOfEnergy)
	for _, tx := range []tron.Transaction{ok, forced, poor} {
		e.mustSend(tx, tron.CodeSuccess)
	}
	e.at(3 * time.Second)
	e.node.Advance()
	if len(asked) != 1 {
		t.Fatalf("hook asked %d times (%+v), want once", len(asked), asked)
	}
	block := e.node.Blocks()[1]
	want := ExecRequest{Txid: ok.Txid(), Block: block, Owner: hot, To: alice, Amount: 60, Balance: 100}
	if asked[0] != want {
		t.Errorf("request %+v, want %+v", asked[0], want)
	}
	if got := asked[0].Log(); !reflect.DeepEqual(got, tron.TransferLog(tron.USDTContract, hot, alice, 60)) {
		t.Errorf("Log() = %+v, want the exact Transfer log", got)
	}
	var receipts []string
	for _, in := range e.node.Inclusions() {
		receipts = append(receipts, in.Receipt)
	}
	if want := []string{"SUCCESS", "OUT_OF_ENERGY", "REVERT"}; !reflect.DeepEqual(receipts, want) {
		t.Errorf("receipts %v, want %v", receipts, want)
	}
	// The hook's slices are the hook's: the node keeps its own copies.
	e.after(time.Second)
	extra := []tron.Log{tron.TransferLog(fake, hot, alice, 1)}
	e.node.Network().SetExecution(func(ExecRequest) Execution { return Execution{Extra: extra} })
	paid := e.tx("paid", 1)
	e.mustSend(paid, tron.CodeSuccess)
	e.at(6 * time.Second)
	e.node.Advance() // executes paid with the hook's slice as it is now
	extra[0].Data[31] = 99
	if info := e.node.TxInfo(paid.Txid()); info.Logs[0].Data[31] != 1 {
		t.Errorf("the node's log changed with the hook's slice")
	}
	incs := e.node.Inclusions()
	if got := incs[len(incs)-1].Execution.Extra[0].Data[31]; got != 1 {
		t.Errorf("the recorded execution changed with the hook's slice")
	}
}

// An execution that contradicts itself is a wiring bug.
func TestExecutionMisusePanics(t *testing.T) {
	tests := []struct {
		name string
		ex   Execution
		want string
	}{
		{"no transfer with a fee", Execution{NoTransfer: true, Fee: 1, FeeTo: feeAddr}, "no redirect and no fee"},
		{"no transfer with a redirect", Execution{NoTransfer: true, Redirect: true, To: eve}, "no redirect and no fee"},
		{"to without redirect", Execution{To: eve}, "for Redirect"},
		{"amount without redirect", Execution{Amount: 5}, "for Redirect"},
		{"redirect nowhere", Execution{Redirect: true, Amount: 5}, "needs a To"},
		{"fee without a payee", Execution{Fee: 1}, "needs a FeeTo"},
		{"fee beyond the amount", Execution{Fee: 1001, FeeTo: feeAddr}, "fee of 1001 on a transfer of 1000"},
		{"extra log on the USDT contract", Execution{Extra: []tron.Log{tron.TransferLog(tron.USDTContract, hot, alice, 1)}}, "use Lie"},
		{"logs without lie", Execution{Logs: []tron.Log{tron.TransferLog(tron.USDTContract, hot, alice, 1)}}, "only with Lie"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.node.Network().SetExecution(func(ExecRequest) Execution { return tt.ex })
			e.mustSend(e.tx("x", 1000), tron.CodeSuccess)
			e.at(3 * time.Second)
			mustPanic(t, tt.want, func() { e.node.Advance() })
		})
	}
}

// Every execution describes itself in one line.
func TestExecutionString(t *testing.T) {
	tests := []struct {
		ex   Execution
		want string
	}{
		{Execution{}, "exact"},
		{Execution{NoTransfer: true}, "no transfer"},
		{Execution{Fee: 3, FeeTo: feeAddr}, "fee 3 to " + feeAddr.String()},
		{Execution{Redirect: true, To: eve, Amount: 2, Lie: true, Logs: []tron.Log{{}}}, "redirect 2 to " + eve.String() + " + lie (1 log(s))"},
		{Execution{Extra: []tron.Log{{}, {}}}, "2 extra log(s)"},
		{Execution{FeeTo: feeAddr}, "exact"}, // a zero fee charges nothing
	}
	for _, tt := range tests {
		if got := tt.ex.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.ex, got, tt.want)
		}
		if got := tt.ex.IsExact(); got != (tt.want == "exact") || strings.Contains(tt.want, "(") && got {
			t.Errorf("%+v.IsExact() = %v", tt.ex, got)
		}
	}
}

// Goal: a hook may read the network while a block is being built: the read
// sees the chain as it is and does not build the next block inside this one.
// Method: the clock jumps three slots; the execution hook reads the head and
// a balance for each transfer.
func TestHooksMayReadTheNetwork(t *testing.T) {
	e := newEnv(t, nil)
	net := e.node.Network()
	var heads []int64
	net.SetExecution(func(r ExecRequest) Execution {
		heads = append(heads, net.Head().Number)
		if got := net.Balance(r.Owner); got != r.Balance {
			t.Errorf("Balance inside the hook = %d, request says %d", got, r.Balance)
		}
		return Execution{}
	})
	e.mustSend(e.tx("a", 1), tron.CodeSuccess)
	e.node.SkipSlots(0)
	e.at(3 * SlotInterval)
	e.node.Advance()
	if !reflect.DeepEqual(heads, []int64{1}) {
		t.Errorf("heads seen by the hook %v, want [1] (the block being built)", heads)
	}
	if got := e.node.Head().Number; got != 3 {
		t.Errorf("head %d, want 3", got)
	}
	for i, b := range e.node.Blocks() {
		if b.Number != int64(i) {
			t.Fatalf("block %d numbered %d: a block was built inside another", i, b.Number)
		}
	}
}
