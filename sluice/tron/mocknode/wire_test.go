package mocknode

import (
	"context"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Each Client's calls are recorded under its worker's name, and Seq numbers
// broadcasts and queries together in call order.
func TestWireRecordsWorkers(t *testing.T) {
	e := newEnv(t, nil)
	w2 := e.node.Client("w2")
	a, b := e.tx("a", 1), e.tx("b", 1)
	e.send(a)
	w2.HeadBlock(t.Context())
	sendAs(t, w2, b)
	e.at(5 * time.Second)
	e.w1.Lookup(t.Context(), b.Txid())
	sendAs(t, w2, a)

	type rec struct {
		Seq    int
		Worker string
		Txid   tron.Txid
		Answer string
		Head   int64
	}
	var gotWire []rec
	for _, w := range e.node.Wire() {
		gotWire = append(gotWire, rec{w.Seq, w.Worker, w.Txid, w.Answer, w.Head})
	}
	wantWire := []rec{
		{1, "w1", a.Txid(), "SUCCESS", 0},
		{3, "w2", b.Txid(), "SUCCESS", 0},
		{5, "w2", a.Txid(), "DUP_TRANSACTION_ERROR", 1},
	}
	if !reflect.DeepEqual(gotWire, wantWire) {
		t.Errorf("Wire() =\n%+v\nwant\n%+v", gotWire, wantWire)
	}
	if at := e.node.Wire()[2].At; !at.Equal(genesis.Add(5 * time.Second)) {
		t.Errorf("third broadcast At %s, want +5s", at)
	}

	var gotQ []rec
	for _, q := range e.node.Queries() {
		gotQ = append(gotQ, rec{q.Seq, q.Worker, q.Txid, q.Answer, q.Head})
	}
	wantQ := []rec{
		{2, "w2", tron.Txid{}, "#0", 0},
		{4, "w1", b.Txid(), "included", 1},
	}
	if !reflect.DeepEqual(gotQ, wantQ) {
		t.Errorf("Queries() =\n%+v\nwant\n%+v", gotQ, wantQ)
	}
}

// scenario drives a node through every kind of call, fault and event, with
// faults from a hook that stands in for the simulator's choice tape, and
// returns everything a checker could look at.
func scenario(t *testing.T) (answers []string, truth []any) {
	answers, truth, _ = scenarioOn(t, nil)
	return answers, truth
}

// scenarioOn is scenario on a network built on st (a released network's
// storage, or nil), which it returns.
func scenarioOn(t *testing.T, st *Storage) (answers []string, truth []any, net *Network) {
	return scenarioWith(t, func(c *Config) { c.Storage = st })
}

// scenarioWith is scenario on a network whose configuration more changes.
func scenarioWith(t *testing.T, more func(*Config)) (answers []string, truth []any, net *Network) {
	e := newEnv(t, func(c *Config) { c.PoolTTL = 9 * time.Second; c.BlockCapacity = 2; c.SolidLag = 4; more(c) })
	tape := []Fault{None, AcceptThenTimeout, ExpirationLie, None, UnknownCode, RelayFailAfterAccept, QueryTimeout, LoseRequest, None, TaposLie}
	step := 0
	e.node.SetFaults(func(c Call) Fault {
		f := tape[step%len(tape)]
		step++
		return f
	})
	workers := []tron.Node{e.w1, e.node.Client("w2"), e.node.Client("w3")}
	var txs []tron.Transaction
	for i := range 40 {
		e.after(time.Duration(700+i*37) * time.Millisecond)
		w := workers[i%len(workers)]
		switch i % 7 {
		case 0, 1, 2:
			tx := e.tx(fmt.Sprintf("op%d", i), uint64(i)*1_000_000)
			txs = append(txs, tx)
			answers = append(answers, sendAs(t, w, tx))
		case 3:
			tx := txs[(i*5)%len(txs)]
			answers = append(answers, sendAs(t, w, tx))
			e.node.SetOutcome(txs[len(txs)-1].Txid(), tron.ReceiptOutOfEnergy)
		case 4:
			info, err := w.Lookup(context.Background(), txs[i%len(txs)].Txid())
			answers = append(answers, fmt.Sprintf("%+v %v", info, err))
		case 5:
			b, err := w.HeadBlock(context.Background())
			answers = append(answers, fmt.Sprintf("%+v %v", b, err))
			if i%2 == 1 {
				e.node.Restart()
			} else {
				e.node.SkipSlots(2)
			}
		case 6:
			b, err := w.SolidBlock(context.Background())
			answers = append(answers, fmt.Sprintf("%+v %v", b, err))
			e.node.Evict(txs[len(txs)-1].Txid())
		}
	}
	e.after(2 * time.Minute)
	truth = []any{e.node.Blocks(), e.node.Wire(), e.node.Queries(), e.node.Accepted(),
		e.node.Inclusions(), e.node.Pool(), e.node.FaultsFired(), e.node.Events(),
		e.node.Balance(hot), e.node.Balance(alice)}
	return answers, truth, e.node.net
}

// Two nodes fed the same calls at the same clock readings agree on every
// answer, every block id and every record.
func TestDeterminism(t *testing.T) {
	a1, t1 := scenario(t)
	a2, t2 := scenario(t)
	if !reflect.DeepEqual(a1, a2) {
		for i := range min(len(a1), len(a2)) {
			if a1[i] != a2[i] {
				t.Errorf("answer %d differs:\n%s\n%s", i, a1[i], a2[i])
				break
			}
		}
	}
	for i := range t1 {
		if !reflect.DeepEqual(t1[i], t2[i]) {
			t.Errorf("ground truth %d (%T) differs between two identical runs", i, t1[i])
		}
	}
	// The scenario is only worth something if it exercised the machinery.
	if n := len(t1[4].([]Inclusion)); n < 5 {
		t.Errorf("scenario included only %d transactions", n)
	}
	fired := 0
	for _, fc := range t1[6].([]FaultCount) {
		if fc.Count > 0 {
			fired++
		}
	}
	if fired < 5 {
		t.Errorf("scenario fired only %d fault kinds", fired)
	}
}

// The package must not read the real clock, sleep, start goroutines, use
// channels or select, draw random numbers, or range over a map: any of them
// would make a run depend on something other than its calls. The check
// type-checks the package's own sources so that a range over a map is found
// whatever the map is called.
func TestNoNondeterminismSources(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks from source; skipped with -short")
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := map[string]bool{"time.Now": true, "time.Sleep": true, "time.After": true,
		"time.Tick": true, "time.NewTimer": true, "time.NewTicker": true, "time.AfterFunc": true,
		"time.Since": true, "time.Until": true}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "math/rand") || p == "crypto/rand" || p == "sync" || p == "unsafe" {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("sluicesim/sluice/tron/mocknode", fset, files, info); err != nil {
		t.Fatalf("type-checking the package: %v", err)
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: go statement", fset.Position(x.Pos()))
			case *ast.SelectStmt:
				t.Errorf("%s: select statement", fset.Position(x.Pos()))
			case *ast.ChanType:
				t.Errorf("%s: channel type", fset.Position(x.Pos()))
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && forbidden[id.Name+"."+x.Sel.Name] {
					t.Errorf("%s: %s.%s", fset.Position(x.Pos()), id.Name, x.Sel.Name)
				}
			case *ast.RangeStmt:
				if _, isMap := info.TypeOf(x.X).Underlying().(*types.Map); isMap {
					t.Errorf("%s: range over a map leaks its order", fset.Position(x.Pos()))
				}
			}
			return true
		})
	}
}
