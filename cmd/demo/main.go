package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// clock is the story's only time source.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// killed is what the crashing node panics with: a kill -9 at that boundary.
type killed struct{}

// crashBeforeSend kills its worker the moment it tries to send: the
// write-ahead is committed, the bytes never leave.
type crashBeforeSend struct{ tron.Node }

func (crashBeforeSend) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	panic(killed{})
}

const (
	opID = "11111111-1111-4111-8111-111111111111"
	// customer is whose balance pays; deposit is what the story credits
	// it with before the first POST, as `sluice serve -fund` would.
	customer = "cust-demo"
	deposit  = money.Amount(100 * 1_000_000)
)

func run(out io.Writer) error {
	ctx := context.Background()
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	clk := &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	hot := tron.AddressFromBytes20([20]byte{0x5a, 0x1c, 0xe0})
	recipient := tron.AddressFromBytes20([20]byte{0xc1, 0x1e, 0x47})
	signer := tron.NewHMACSigner([]byte("demo hot wallet key"))
	db := store.NewMemory(clk, 30*time.Second)
	node := mocknode.New(clk, mocknode.Config{
		Genesis: clk.now.Add(-10 * time.Minute), HotWallet: hot, HotBalance: 1_000 * 1_000_000, Verifier: signer,
	})
	api := intake.NewHandler(&intake.Service{Store: db})
	credit := sluice.Credit{Ref: fmt.Sprintf("fund:%s:%s", customer, deposit), Customer: customer, Amount: deposit}
	if _, _, err := db.Credit(ctx, credit); err != nil {
		return err
	}
	cfg := sluice.DefaultConfig()
	newWorker := func(name string, n tron.Node) *sluice.Worker {
		return &sluice.Worker{
			ID:       sluice.WorkerID(name),
			Pipeline: &sluice.Pipeline{Store: db, Node: n, Signer: signer, Clock: clk, HotWallet: hot, Config: cfg},
			Rand:     rand.New(rand.NewPCG(7, uint64(len(name)))),
		}
	}
	seen, wired, t0 := 0, 0, clk.now
	narrate := func() error {
		for _, a := range node.Wire()[wired:] {
			say("      t=%-5s %-6s wire: sent txid %s, answer: %s (ground truth: accepted=%v)",
				clk.now.Sub(t0), a.Worker, a.Txid.Short(), a.Answer, a.Accepted)
		}
		wired = len(node.Wire())
		evs, err := db.Events(ctx, opID)
		if err != nil {
			return err
		}
		for _, e := range evs[seen:] {
			who := string(e.Worker)
			if who == "" {
				who = "intake"
			}
			say("      t=%-5s %-6s %s -> %s (token %d): %s", e.At.Sub(t0), who, e.From, e.To, e.Token, e.Note)
		}
		seen = len(evs)
		return nil
	}

	say("sluice demo: one withdrawal, one crash, one lying timeout, one duplicate POST")
	say("")
	body := fmt.Sprintf(`{"operation_id":%q,"customer":%q,"to_address":%q,"amount":"12.50","asset":"USDT-TRC20"}`, opID, customer, recipient)
	post := func(b string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/withdrawals", strings.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		api.ServeHTTP(rec, req)
		return rec
	}
	say("1. Customer %s, who has deposited %s USDT, POSTs a withdrawal of 12.50 USDT to %s.", customer, deposit, recipient)
	rec := post(body)
	say("   -> %d %s", rec.Code, strings.TrimSpace(rec.Body.String()))
	if err := sayAccount(ctx, db, say); err != nil {
		return err
	}
	if err := narrate(); err != nil {
		return err
	}
	say("2. Its connection drops; it retries the same request, written as \"12.5\" this time.")
	rec = post(strings.Replace(body, `"12.50"`, `"12.5"`, 1))
	say("   -> %d X-Idempotent-Replay=%s: the same row, not a second withdrawal", rec.Code, rec.Header().Get("X-Idempotent-Replay"))

	say("3. Worker w1 claims it, builds the envelope (txid stored before signing), signs,")
	say("   commits the write-ahead 'broadcasting'... and is killed before the bytes leave.")
	w1 := newWorker("w1", crashBeforeSend{node.Client("w1")})
	if crashed := tick(ctx, w1); !crashed {
		return fmt.Errorf("w1 was supposed to die")
	}
	if err := narrate(); err != nil {
		return err
	}
	op, _ := db.Get(ctx, opID)
	say("   w1 is dead. The row says %s, txid %s, lease held until it expires.", op.State, op.Envelope.Txid.Short())

	say("4. 31 s later the lease has expired. Worker w2 claims it (token %d -> %d).", op.Token, op.Token+1)
	say("   It finds 'broadcasting': it asks the chain about the txid (unknown: w1 never sent it),")
	say("   has no proof of death, so it re-sends the SAME bytes. The node accepts them and then")
	say("   lets the answer time out. w2 does not rebuild or re-sign: it asks the chain again later.")
	clk.Advance(31 * time.Second)
	node.Next(mocknode.Broadcast, mocknode.AcceptThenTimeout)
	w2 := newWorker("w2", node.Client("w2"))
	for i := 0; i < 400; i++ {
		if op, _ = db.Get(ctx, opID); op.State.Terminal() {
			break
		}
		rep, err := w2.Tick(ctx)
		if err != nil {
			return err
		}
		if err := narrate(); err != nil {
			return err
		}
		if rep.Claimed == 0 {
			clk.Advance(time.Second)
		}
	}
	say("")
	say("5. Ground truth from the chain:")
	for _, a := range node.Wire() {
		say("   wire: %s sent %s, node answered %s", a.Worker, a.Txid.Short(), a.Answer)
	}
	transfers := 0
	for _, in := range node.Inclusions() {
		if in.Receipt == tron.ReceiptSuccess && in.TransferOK {
			transfers++
			say("   block #%d: %s transfer of %s USDT %s -> %s", in.BlockNumber, in.Txid.Short(),
				money.Amount(in.Transfer.Amount), in.Transfer.From, in.Transfer.To)
		}
	}
	say("")
	say("Result: operation %s is %s; %d on-chain transfer; recipient balance %s USDT.",
		op.ID, op.State, transfers, money.Amount(node.Balance(recipient)))
	if err := sayAccount(ctx, db, say); err != nil {
		return err
	}
	if op.State != sluice.Confirmed || transfers != 1 {
		return fmt.Errorf("expected exactly one confirmed payment, got state %s and %d transfers", op.State, transfers)
	}
	acct, err := db.Account(ctx, customer)
	if err != nil {
		return err
	}
	if acct.Paid != 12_500_000 || acct.Held != 0 || acct.Balance != deposit-12_500_000 {
		return fmt.Errorf("expected the customer to have paid 12.5 USDT once, got %+v", acct)
	}
	say("Exactly one payment, paid once from the customer's balance.")
	return nil
}

// sayAccount tells the customer's ledger as the store keeps it.
func sayAccount(ctx context.Context, db *store.Memory, say func(string, ...any)) error {
	a, err := db.Account(ctx, customer)
	if err != nil {
		return err
	}
	say("   %s's account: balance %s, held %s, paid %s USDT (deposited %s)", a.Customer, a.Balance, a.Held, a.Paid, a.Deposited)
	return nil
}

// tick runs one Tick and reports whether the worker was killed.
func tick(ctx context.Context, w *sluice.Worker) (crashed bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(killed); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	if _, err := w.Tick(ctx); err != nil {
		panic(err)
	}
	return false
}
