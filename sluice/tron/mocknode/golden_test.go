package mocknode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

var update = flag.Bool("update", false, "rewrite testdata/single-node.golden from the package as it is")

// Goal: a single node (New, a network of one) answers byte for byte what it
// answered before networks, reorgs and execution hooks existed, since the
// simulator's traces depend on every answer. Method: drive single nodes
// through long pseudo-random call sequences (every call kind, fault, pool
// and chain event, with the old API only) and compare a full transcript of
// answers and ground truth with testdata/single-node.golden, which the
// package wrote before those features were added. Rewrite it with -update
// only for a change of single-node behaviour that is meant.
func TestSingleNodeGolden(t *testing.T) {
	got := singleNodeTranscript(t)
	path := filepath.Join("testdata", "single-node.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	want := string(b)
	if got == want {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("transcript differs from %s at line %d:\ngot  %s\nwant %s", path, i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("transcript has %d lines, %s has %d", len(gl), path, len(wl))
}

// singleNodeTranscript runs the fixed scenario and six pseudo-random
// drives and renders everything a caller or a checker can see.
func singleNodeTranscript(t *testing.T) string {
	var b strings.Builder
	answers, truth := scenario(t)
	b.WriteString("== scenario\n")
	for _, a := range answers {
		fmt.Fprintf(&b, "answer %s\n", a)
	}
	writeTruth(&b, truth[0].([]tron.Block), truth[1].([]WireAttempt), truth[2].([]QueryAttempt), truth[3].([]Acceptance),
		truth[4].([]Inclusion), truth[5].([]tron.Txid), truth[6].([]FaultCount), truth[7].([]EventCount))
	fmt.Fprintf(&b, "balance hot %d alice %d\n", truth[8], truth[9])
	for seed := uint64(1); seed <= 6; seed++ {
		fmt.Fprintf(&b, "== drive %d\n", seed)
		drive(t, &b, seed)
	}
	return b.String()
}

// drive makes 250 pseudo-random calls on one node and writes each answer,
// then the truth.
func drive(t *testing.T, b *strings.Builder, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x601d))
	e := newEnv(t, func(c *Config) {
		c.PoolTTL = time.Duration(3*(1+r.IntN(5))) * time.Second
		c.BlockCapacity = 1 + r.IntN(3)/2
		c.SolidLag = 1 + r.IntN(6)
		c.PoolMax = 2 + r.IntN(10)
		c.HotBalance = uint64(r.IntN(2000))
		if seed%3 == 0 {
			c.HotBalance = uint64(r.IntN(200)) // reverts for want of balance
		}
	})
	tape := rand.New(rand.NewPCG(seed, 0x7a9e))
	if seed%2 == 1 {
		e.node.SetFaults(func(Call) Fault { return Fault(tape.IntN(int(faultsOfTheGolden))) })
	}
	ctx := context.Background()
	workers := []tron.Node{e.w1, e.node.Client("w2"), e.node.Client("relay")}
	var txs []tron.Transaction
	for step := range 250 {
		d := time.Duration(r.IntN(4000)) * time.Millisecond
		if r.IntN(2) == 0 {
			d = time.Duration(r.IntN(4)) * time.Second
		}
		if r.IntN(4) == 0 { // exactly on the next slot boundary
			ms := e.clock.now.Add(d).UnixMilli()
			d += time.Duration(3000-ms%3000) * time.Millisecond
		}
		e.after(d)
		w := workers[r.IntN(len(workers))]
		pickTx := func() tron.Txid {
			if len(txs) == 0 {
				return tron.Txid{}
			}
			return txs[r.IntN(len(txs))].Txid()
		}
		var line string
		switch r.IntN(15) {
		case 0, 1, 2, 3:
			var tx tron.Transaction
			if len(txs) > 0 && r.IntN(3) == 0 {
				tx = txs[r.IntN(len(txs))]
			} else {
				tx = driveTx(e, r, step)
				txs = append(txs, tx)
			}
			res, err := w.Broadcast(ctx, tx)
			line = fmt.Sprintf("broadcast %s: %s %q %v", tx.Txid().Short(), res.Code, res.Message, errors.Is(err, tron.ErrTimeout))
		case 4:
			id := pickTx()
			info, err := w.Lookup(ctx, id)
			line = fmt.Sprintf("lookup %s: %s", id.Short(), describeInfo(info, err))
		case 5:
			blk, err := w.HeadBlock(ctx)
			line = fmt.Sprintf("head: #%d %x %s %v", blk.Number, blk.ID[:4], blk.Time.Format(time.RFC3339), err)
		case 6:
			blk, err := w.SolidBlock(ctx)
			line = fmt.Sprintf("solid: #%d %x %s %v", blk.Number, blk.ID[:4], blk.Time.Format(time.RFC3339), err)
		case 7:
			e.node.Restart()
			line = "restart"
		case 8:
			id := pickTx()
			if p := e.node.Pool(); len(p) > 0 && r.IntN(4) != 0 {
				id = p[r.IntN(len(p))]
			}
			line = fmt.Sprintf("evict %s: %v", id.Short(), e.node.Evict(id))
		case 9:
			id := pickTx()
			rc := []string{"", tron.ReceiptSuccess, tron.ReceiptRevert, tron.ReceiptOutOfEnergy}[r.IntN(4)]
			e.node.SetOutcome(id, rc)
			line = fmt.Sprintf("outcome %s %q", id.Short(), rc)
		case 10:
			k := r.IntN(3)
			e.node.SkipSlots(k)
			line = fmt.Sprintf("skip %d", k)
		case 11:
			k, f := CallKind(1+r.IntN(4)), Fault(r.IntN(int(faultsOfTheGolden)))
			e.node.Next(k, f)
			line = fmt.Sprintf("next %s %s", k, f)
		case 12:
			e.node.Advance()
			line = "advance"
		case 13:
			id := pickTx()
			line = fmt.Sprintf("txinfo %s: %s", id.Short(), describeInfo(e.node.TxInfo(id), nil))
		case 14:
			// A burst with slot-aligned expirations: a backlog whose tail
			// meets the parent-time rule exactly at its boundary.
			lead := time.Duration(3*(1+r.IntN(2))) * time.Second
			for i := range 3 {
				tx := e.sign(e.raw(fmt.Sprintf("burst%d.%d", step, i), uint64(r.IntN(40)), expires(e.node.Head().Time.Add(lead))))
				txs = append(txs, tx)
				res, err := w.Broadcast(ctx, tx)
				line += fmt.Sprintf("burst %s: %s %v; ", tx.Txid().Short(), res.Code, errors.Is(err, tron.ErrTimeout))
			}
		}
		fmt.Fprintf(b, "%s %s\n", e.clock.now.Sub(genesis), line)
	}
	writeTruth(b, e.node.Blocks(), e.node.Wire(), e.node.Queries(), e.node.Accepted(), e.node.Inclusions(),
		e.node.Pool(), e.node.FaultsFired(), e.node.Events())
	for _, a := range []tron.Address{hot, alice, bob} {
		fmt.Fprintf(b, "balance %s %d\n", a, e.node.Balance(a))
	}
}

// driveTx is a transfer with pseudo-random fields, now and then a broken one.
func driveTx(e *env, r *rand.Rand, step int) tron.Transaction {
	ref := e.node.Solid()
	if r.IntN(5) == 0 {
		ref = e.node.Head()
	}
	to := []tron.Address{alice, bob}[r.IntN(2)]
	lead := time.Duration(r.IntN(30)) * time.Second
	if r.IntN(2) == 0 { // tight: dropped if it waits a block or two
		lead = time.Duration(3000+r.IntN(4)*1000+r.IntN(2)*r.IntN(1000)) * time.Millisecond
	}
	raw := e.raw(fmt.Sprintf("d%d", step), uint64(r.IntN(40)), refTo(ref), expires(e.node.Head().Time.Add(lead)),
		func(raw *tron.RawData) { raw.Contract.Data = tron.EncodeTransfer(to, uint64(r.IntN(40))) })
	if r.IntN(20) == 0 {
		raw.RefBlockHash[0] ^= 1
	}
	tx := e.sign(raw)
	if r.IntN(25) == 0 {
		tx.Signature[0] ^= 1
	}
	return tx
}

func describeInfo(info tron.TxInfo, err error) string {
	if err != nil {
		return fmt.Sprintf("error timeout=%v", errors.Is(err, tron.ErrTimeout))
	}
	s := fmt.Sprintf("%s #%d %s solid=%v %s", info.Status, info.BlockNumber, info.BlockTime.Format(time.RFC3339), info.Solid, info.Receipt)
	for _, l := range info.Logs {
		s += fmt.Sprintf(" log{%x %x %x}", l.Address, l.Topics, l.Data)
	}
	return s
}

// writeTruth renders the ground truth field by field (never with %v of a
// whole record, so that a field added later does not change the text).
func writeTruth(b *strings.Builder, blocks []tron.Block, wire []WireAttempt, queries []QueryAttempt, acc []Acceptance,
	incs []Inclusion, pool []tron.Txid, fired []FaultCount, events []EventCount) {
	for _, blk := range blocks {
		fmt.Fprintf(b, "block #%d %x %s\n", blk.Number, blk.ID[:8], blk.Time.Format(time.RFC3339))
	}
	for _, w := range wire {
		fmt.Fprintf(b, "wire %d %s %s at=%s head=%d fault=%s fired=%v reached=%v truth=%s answer=%s accepted=%v\n",
			w.Seq, w.Worker, w.Txid.Short(), w.At.Sub(genesis), w.Head, w.Fault, w.Fired, w.Reached, w.Truth, w.Answer, w.Accepted)
	}
	for _, q := range queries {
		fmt.Fprintf(b, "query %d %s %s %s at=%s head=%d fault=%s fired=%v answer=%s\n",
			q.Seq, q.Kind, q.Worker, q.Txid.Short(), q.At.Sub(genesis), q.Head, q.Fault, q.Fired, q.Answer)
	}
	for _, a := range acc {
		fmt.Fprintf(b, "accepted %s x%d first=%s\n", a.Txid.Short(), a.Times, a.First.Sub(genesis))
	}
	for _, in := range incs {
		fmt.Fprintf(b, "inclusion %s #%d %s %s transfer=%v{%s %s %s %d} owner=%s\n", in.Txid.Short(), in.BlockNumber,
			in.BlockTime.Format(time.RFC3339), in.Receipt, in.TransferOK, in.Transfer.Contract, in.Transfer.From, in.Transfer.To,
			in.Transfer.Amount, in.Owner)
	}
	for _, id := range pool {
		fmt.Fprintf(b, "pool %s\n", id.Short())
	}
	for _, f := range fired {
		if f.Fault < faultsOfTheGolden { // faults added later never fire here
			fmt.Fprintf(b, "fired %s %d\n", f.Fault, f.Count)
		}
	}
	for _, ev := range events {
		if ev.Count > 0 { // event kinds added later are zero in a single-node run
			fmt.Fprintf(b, "event %s %d\n", ev.Event, ev.Count)
		}
	}
}
