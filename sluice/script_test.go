package sluice_test

// Scripts are the failure-matrix stories written as data (testdata/*.txt),
// in the style of etcd-io/raft's interaction tests: each command is followed
// by "----" and the output it produced, and that output, the trace, is the
// assertion. A story that checked "builds = 1, one payment" in Go now shows
// the state line, the event log, the wire and the chain, so a change of
// behaviour is a visible diff rather than a yes/no, and a reviewer reads what
// happened instead of what someone thought to check.
//
// File format (a subset of cockroachdb/datadriven):
//
//	# comment lines and blank lines between commands are kept as written
//	command pos1 pos2 key=value
//	body line (a command run later, for pause)
//	----
//	expected output, up to the next blank line
//
// Every command prints at least one line and never a blank one, so the
// first blank line always ends an output. Errors the system returns (a Tick
// error, a refused CAS, an invalid config) are printed as output; a script
// that is itself wrong (unknown command, missing or bad argument, unknown
// worker or operation) fails the test naming the file and line.
//
// go test ./sluice -run TestScripts -update rewrites the expected outputs
// with the actual ones.
//
// Names: operations are op1, op2, ... in submit order; each txid is named
// after its operation and build (op1.tx1, op1.tx2) the moment a write first
// stores it, and every output (notes, errors) says that name instead of the
// hex, so a golden file does not churn when the encoding of raw_data does.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

var updateScripts = flag.Bool("update", false, "rewrite the expected output of sluice/testdata/*.txt with the actual output")

// TestScripts runs every script under testdata and compares each command's
// output with the one stored in the file.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scripts under testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := parseScript(file, string(src))
			if err != nil {
				t.Fatal(err)
			}
			if !s.hasGoal {
				t.Fatalf("%s: no \"# Goal:\" comment before the first command saying what the story shows", file)
			}
			got, runErr := runScript(t, s)
			if *updateScripts {
				if runErr != nil {
					t.Fatal(runErr)
				}
				if out := s.rewrite(got); out != string(src) {
					if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
					t.Logf("rewrote %s", file)
				}
				return
			}
			// Compare before reporting a script error: when behaviour
			// changes, a later command may no longer make sense (ticking a
			// worker that now crashed earlier), and the first differing
			// output is what explains it.
			for i, out := range got {
				if c := s.cmds[i]; out != c.want {
					t.Fatalf("%s:%d: %s: output differs from the golden file (-want +got):\n%s\nrerun with -update to accept the new output: go test ./sluice -run TestScripts -update",
						file, c.line, c.text, lineDiff(c.want, out))
				}
			}
			if runErr != nil {
				t.Fatal(runErr)
			}
		})
	}
}

// --- the language ---

type cmdSpec struct {
	usage          string
	minPos, maxPos int // positional arguments; maxPos < 0: no limit
	keys           []string
	need           []string // required keys
	body           bool     // takes (and requires) body lines
	run            func(r *runner, c *scriptCmd) error
}

// commands is filled in init: the runners reach it again through exec (a
// pause's body), which a package-level initializer may not.
var commands map[string]cmdSpec

// commandOrder lists the commands as the documentation shows them.
var commandOrder = []string{
	"config", "credit", "submit", "spawn", "crash", "pause", "fault", "heal",
	"tick", "run", "advance", "evict", "restart-node", "outcome", "execution", "claim", "cas",
	"state", "log", "ledger", "wire", "chain", "workers", "txids", "faults",
}

func init() {
	commands = map[string]cmdSpec{
		"config": {usage: "config key=value...: change the config of workers spawned from now on (" + strings.Join(configKeys(), ", ") + ")",
			keys: configKeys(), run: (*runner).cmdConfig},
		"credit": {usage: "credit CUSTOMER amount=DECIMAL [ref=REF]: a deposit to the customer's balance (ref defaults to a fresh one; a repeated ref credits nothing)",
			minPos: 1, maxPos: 1, keys: []string{"amount", "ref"}, need: []string{"amount"}, run: (*runner).cmdCredit},
		"submit": {usage: "submit amount=DECIMAL [customer=NAME] [to=alice|bob|hot-wallet|usdt-contract|not-tron]: insert a withdrawal (to alice unless named), held from the customer's balance (alice's, credited with 1000 USDT at the start, unless named); it is named opN",
			keys: []string{"amount", "customer", "to"}, need: []string{"amount"}, run: (*runner).cmdSubmit},
		"spawn": {usage: "spawn NAME... [skew=DURATION] [signer=wrong-key]: start workers; skew puts their wall clock ahead, wrong-key makes every signature fail to verify",
			minPos: 1, maxPos: -1, keys: []string{"skew", "signer"}, run: (*runner).cmdSpawn},
		"crash": {usage: "crash NAME at=POINT [op=OP] [to=STATE]: the worker dies at its next matching POINT (before-cas, before-sign, before-send, after-send); to= only with before-cas",
			minPos: 1, maxPos: 1, keys: []string{"at", "op", "to"}, need: []string{"at"}, run: (*runner).cmdCrash},
		"pause": {usage: "pause NAME at=POINT [op=OP] [to=STATE] + body: at its next matching POINT the worker stops while the body's commands run, then goes on",
			minPos: 1, maxPos: 1, keys: []string{"at", "op", "to"}, need: []string{"at"}, body: true, run: (*runner).cmdPause},
		"fault": {usage: "fault KIND FAULT [times=N|all] [op=OP [build=N]]: the node's next N calls of KIND (broadcast, lookup, head, solid) get FAULT; times=all: every such call, optionally only for OP's txids",
			minPos: 2, maxPos: 2, keys: []string{"times", "op", "build"}, run: (*runner).cmdFault},
		"heal": {usage: "heal [KIND]: drop the times=all faults (of KIND only, if given): the trouble they stood for has ended",
			maxPos: 1, run: (*runner).cmdHeal},
		"tick": {usage: "tick NAME...: one Tick of each worker, in order",
			minPos: 1, maxPos: -1, run: (*runner).cmdTick},
		"run": {usage: "run NAME... [budget=DURATION] [for=DURATION]: tick the workers round by round, one virtual second passing when nobody claimed anything, until every operation is terminal (within budget, default 30m) or for the given time",
			minPos: 1, maxPos: -1, keys: []string{"budget", "for"}, run: (*runner).cmdRun},
		"advance": {usage: "advance DURATION: move the clock (store, node and workers share it)",
			minPos: 1, maxPos: 1, run: (*runner).cmdAdvance},
		"evict": {usage: "evict OP: the node drops OP's current txid from its pool",
			minPos: 1, maxPos: 1, run: (*runner).cmdEvict},
		"restart-node": {usage: "restart-node: the node restarts and loses its pending pool",
			run: (*runner).cmdRestartNode},
		"outcome": {usage: "outcome OP receipt=RECEIPT [builds=all]: OP's current txid executes with that receipt when it lands; builds=all: every txid OP builds from now on too",
			minPos: 1, maxPos: 1, keys: []string{"receipt", "builds"}, need: []string{"receipt"}, run: (*runner).cmdOutcome},
		"execution": {usage: "execution OP KIND [units=N]: when OP's current txid lands with SUCCESS it really does KIND (exact, no-transfer, fee, amount, recipient, foreign-log, extra-log, lie-no-log, lie-twice, lie-amount); units is the fee, or the amount moved or reported",
			minPos: 2, maxPos: 2, keys: []string{"units"}, run: (*runner).cmdExecution},
		"claim": {usage: "claim NAME [limit=N]: a bare store claim under NAME's id, with no worker acting on it",
			minPos: 1, maxPos: 1, keys: []string{"limit"}, run: (*runner).cmdClaim},
		"cas": {usage: "cas OP to=STATE [from=STATE] [token=N] [hold=settle|release]: a bare store write, from the row's current state and token unless given, closing the hold as told",
			minPos: 1, maxPos: 1, keys: []string{"to", "from", "token", "hold"}, need: []string{"to"}, run: (*runner).cmdCAS},
		"state": {usage: "state [OP...]: the rows (all if none named), each with its hold and, once parked, its parks",
			maxPos: -1, run: (*runner).cmdState},
		"log": {usage: "log OP: the operation's event log with hold actions and the stuck policy's decisions; evidence is audited against the chain",
			minPos: 1, maxPos: 1, run: (*runner).cmdLog},
		"ledger": {usage: "ledger: every customer's account and every operation's hold",
			run: (*runner).cmdLedger},
		"wire": {usage: "wire [NAME]: every broadcast as it happened on the wire (only NAME's if given)",
			maxPos: 1, run: (*runner).cmdWire},
		"chain": {usage: "chain: acceptances into the pool, inclusions, and alice's balance",
			run: (*runner).cmdChain},
		"workers": {usage: "workers: each worker, alive or dead, with its sign and send counts",
			run: (*runner).cmdWorkers},
		"txids": {usage: "txids: every named txid with its hex prefix",
			run: (*runner).cmdTxids},
		"faults": {usage: "faults: the node's faults that fired and its chain or pool events, with counts",
			run: (*runner).cmdFaults},
	}
}

// scriptCmd is one command of a script, or one line of a pause's body.
type scriptCmd struct {
	file string
	line int
	text string // as written, trimmed
	name string
	pos  []string
	keys []string // in the order written
	kv   map[string]string
	body []*scriptCmd
	// want is the stored output; outStart and outEnd delimit it in the
	// file's lines (0-based, end exclusive) so -update can replace it.
	want             string
	outStart, outEnd int
}

func (c *scriptCmd) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s: %s", c.file, c.line, c.text, fmt.Sprintf(format, args...))
}

type script struct {
	file    string
	lines   []string
	cmds    []*scriptCmd
	hasGoal bool
}

// parseScript reads a script and checks every command (body lines included)
// against its spec, so a malformed line fails before anything runs.
func parseScript(file, src string) (*script, error) {
	s := &script{file: file, lines: strings.Split(strings.TrimSuffix(src, "\n"), "\n")}
	if src == "" {
		s.lines = nil
	}
	for i := 0; i < len(s.lines); {
		text := strings.TrimSpace(s.lines[i])
		if text == "" || strings.HasPrefix(text, "#") {
			if strings.HasPrefix(text, "# Goal:") && len(s.cmds) == 0 {
				s.hasGoal = true
			}
			i++
			continue
		}
		if text == "----" {
			return nil, fmt.Errorf("%s:%d: ---- without a command before it", file, i+1)
		}
		c, err := parseCommand(file, i+1, text)
		if err != nil {
			return nil, err
		}
		i++
		for ; ; i++ {
			if i == len(s.lines) || strings.TrimSpace(s.lines[i]) == "" {
				return nil, c.errorf("no ---- line after the command (a blank line or the end of the file came first)")
			}
			if s.lines[i] == "----" {
				break
			}
			text := strings.TrimSpace(s.lines[i])
			if strings.HasPrefix(text, "#") {
				continue
			}
			b, err := parseCommand(file, i+1, text)
			if err != nil {
				return nil, err
			}
			if commands[b.name].body {
				return nil, b.errorf("%s cannot be nested in a body", b.name)
			}
			c.body = append(c.body, b)
		}
		spec := commands[c.name]
		switch {
		case spec.body && len(c.body) == 0:
			return nil, c.errorf("needs body lines (the commands to run) before ----")
		case !spec.body && len(c.body) > 0:
			return nil, c.errorf("takes no body lines")
		}
		i++ // the ---- line
		c.outStart = i
		var want []string
		for ; i < len(s.lines) && strings.TrimSpace(s.lines[i]) != ""; i++ {
			want = append(want, s.lines[i])
		}
		c.outEnd = i
		c.want = strings.Join(want, "\n")
		s.cmds = append(s.cmds, c)
	}
	return s, nil
}

func parseCommand(file string, line int, text string) (*scriptCmd, error) {
	f := strings.Fields(text)
	c := &scriptCmd{file: file, line: line, text: text, name: f[0], kv: map[string]string{}}
	spec, ok := commands[c.name]
	if !ok {
		return nil, c.errorf("unknown command %q (commands: %s)", c.name, strings.Join(commandOrder, ", "))
	}
	for _, a := range f[1:] {
		k, v, isKV := strings.Cut(a, "=")
		if !isKV {
			c.pos = append(c.pos, a)
			continue
		}
		switch {
		case k == "" || v == "":
			return nil, c.errorf("argument %q: want key=value", a)
		case !contains(spec.keys, k):
			if len(spec.keys) == 0 {
				return nil, c.errorf("unknown argument %s= (%s takes none)", k, c.name)
			}
			return nil, c.errorf("unknown argument %s= (want one of %s)", k, strings.Join(spec.keys, ", "))
		}
		if _, dup := c.kv[k]; dup {
			return nil, c.errorf("argument %s= given twice", k)
		}
		c.keys = append(c.keys, k)
		c.kv[k] = v
	}
	for _, k := range spec.need {
		if _, ok := c.kv[k]; !ok {
			return nil, c.errorf("missing argument %s= (usage: %s)", k, spec.usage)
		}
	}
	if n := len(c.pos); n < spec.minPos || (spec.maxPos >= 0 && n > spec.maxPos) {
		return nil, c.errorf("wrong number of arguments (usage: %s)", spec.usage)
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rewrite is the file with every command's stored output replaced by got.
func (s *script) rewrite(got []string) string {
	var b strings.Builder
	next := 0
	for k, c := range s.cmds {
		for _, l := range s.lines[next:c.outStart] {
			b.WriteString(l + "\n")
		}
		b.WriteString(got[k] + "\n")
		next = c.outEnd
	}
	for _, l := range s.lines[next:] {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// --- the runner ---

// runner holds one script's world and the names the script uses for it.
type runner struct {
	w      *world
	actors []*actor
	ops    []sluice.OperationID // opN is ops[N-1]
	txs    []txRecord           // in order of first sight
	rules  []faultRule
	armed  []*armed // every crash and pause, so one that never fired is caught
	out    strings.Builder
	indent string
	// execs: what each txid really does when it lands (execution command).
	execs map[tron.Txid]func(mocknode.ExecRequest) mocknode.Execution
	// wireSeen is how many wire attempts have been printed.
	wireSeen int
	// outcomes: the receipt every new txid of an operation gets
	// (outcome builds=all), applied the moment a write first stores it.
	outcomes map[sluice.OperationID]string
	// credits counts credit commands, to mint their default refs.
	credits int
	// repl turns hex txids and operation ids into names; nil when a name was
	// added since it was built.
	repl *strings.Replacer
}

// actor is a spawned worker with the hooks the script armed on it.
type actor struct {
	*proc
	armed   []*armed
	claimed []sluice.Operation // by the current Tick
	paused  bool
}

// armed is a crash or pause waiting for its point. It fires once: every
// story needs the boundary hit once, and a dead worker has no second time.
type armed struct {
	cmd   *scriptCmd
	crash bool
	point string
	op    sluice.OperationID // "" for any
	to    sluice.State       // None for any
	fired bool
}

type txRecord struct {
	id    tron.Txid
	op    sluice.OperationID
	build int
	name  string
}

type faultRule struct {
	kind  mocknode.CallKind
	fault mocknode.Fault
	op    sluice.OperationID // "" for any
	build int                // 0 for any
}

// scriptAbort carries a script error out of a hook, through the core's
// stack, to the command being run.
type scriptAbort struct{ err error }

var points = []string{"before-cas", "before-sign", "before-send", "after-send"}

// runScript runs every command and returns the outputs of those it ran; on a
// script error it stops there.
func runScript(t *testing.T, s *script) ([]string, error) {
	r := &runner{w: newWorld(t)}
	r.w.node.SetFaults(r.faultHook)
	var outs []string
	for _, c := range s.cmds {
		r.out.Reset()
		err := r.execTop(c)
		out := strings.TrimSuffix(r.out.String(), "\n")
		if err == nil && (out == "" || strings.Contains(out, "\n\n")) {
			// A blank line would end the output early on reading it back.
			err = c.errorf("internal: the output is empty or holds a blank line:\n%s", out)
		}
		if err != nil {
			return outs, err
		}
		outs = append(outs, out)
	}
	for _, a := range r.armed {
		if !a.fired {
			return outs, a.cmd.errorf("never fired: the story did not reach its point")
		}
	}
	return outs, nil
}

func (r *runner) execTop(c *scriptCmd) (err error) {
	defer func() {
		if x := recover(); x != nil {
			a, ok := x.(scriptAbort)
			if !ok {
				panic(x)
			}
			err = a.err
		}
	}()
	err = r.exec(c)
	r.flushWire()
	return err
}

func (r *runner) exec(c *scriptCmd) error { return commands[c.name].run(r, c) }

// emitf prints one output line at the current indentation, with hex txids
// and operation ids replaced by their names.
func (r *runner) emitf(format string, args ...any) {
	r.out.WriteString(r.indent + r.names().Replace(fmt.Sprintf(format, args...)) + "\n")
}

func (r *runner) names() *strings.Replacer {
	if r.repl == nil {
		var pairs []string
		// Full hex first: at one position the first matching old string in
		// argument order wins, and a short txid is a prefix of its full one.
		for _, tx := range r.txs {
			pairs = append(pairs, tx.id.String(), tx.name)
		}
		for _, tx := range r.txs {
			pairs = append(pairs, tx.id.Short(), tx.name)
		}
		for i, id := range r.ops {
			pairs = append(pairs, string(id), fmt.Sprintf("op%d", i+1))
		}
		for _, a := range []tron.Address{alice, bob, hotWallet, foreignToken} {
			pairs = append(pairs, a.String(), addressText(a))
		}
		r.repl = strings.NewReplacer(pairs...)
	}
	return r.repl
}

func (r *runner) opName(id sluice.OperationID) string {
	for i, x := range r.ops {
		if x == id {
			return fmt.Sprintf("op%d", i+1)
		}
	}
	return string(id)
}

func (r *runner) txName(id tron.Txid) string {
	if rec, ok := r.tx(id); ok {
		return rec.name
	}
	return id.Short()
}

func (r *runner) tx(id tron.Txid) (txRecord, bool) {
	for _, rec := range r.txs {
		if rec.id == id {
			return rec, true
		}
	}
	return txRecord{}, false
}

// register names a txid the first time a write stores it. A txid stored by
// a second operation keeps its first name, so sharing one would show.
func (r *runner) register(op sluice.OperationID, id tron.Txid) {
	if id.IsZero() {
		return
	}
	if _, ok := r.tx(id); ok {
		return
	}
	build := 1
	for _, rec := range r.txs {
		if rec.op == op {
			build++
		}
	}
	r.txs = append(r.txs, txRecord{id: id, op: op, build: build, name: fmt.Sprintf("%s.tx%d", r.opName(op), build)})
	r.repl = nil
	if receipt, ok := r.outcomes[op]; ok {
		// Before anyone can send it: the txid cannot have landed yet.
		r.w.node.SetOutcome(id, receipt)
	}
}

func (r *runner) actor(c *scriptCmd, name string) (*actor, error) {
	for _, a := range r.actors {
		if a.name == name {
			return a, nil
		}
	}
	var names []string
	for _, a := range r.actors {
		names = append(names, a.name)
	}
	if len(names) == 0 {
		return nil, c.errorf("unknown worker %q (none spawned yet)", name)
	}
	return nil, c.errorf("unknown worker %q (spawned: %s)", name, strings.Join(names, ", "))
}

// live is actor for commands that make the worker act: it must be alive and
// not inside its own pause.
func (r *runner) live(c *scriptCmd, name string) (*actor, error) {
	a, err := r.actor(c, name)
	if err != nil {
		return nil, err
	}
	switch {
	case a.dead:
		return nil, c.errorf("worker %s is dead (crashed at %s); spawn another", name, a.crashedAt)
	case a.paused:
		return nil, c.errorf("worker %s is paused inside its own Tick", name)
	}
	return a, nil
}

func (r *runner) op(c *scriptCmd, name string) (sluice.OperationID, error) {
	if n, err := strconv.Atoi(strings.TrimPrefix(name, "op")); err == nil && strings.HasPrefix(name, "op") && n >= 1 && n <= len(r.ops) {
		return r.ops[n-1], nil
	}
	return "", c.errorf("unknown operation %q (submitted: %d, named op1..opN)", name, len(r.ops))
}

func parseDuration(c *scriptCmd, what, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, c.errorf("%s %q is not a duration like 30s or 10m", what, s)
	}
	return d, nil
}

func parseCount(c *scriptCmd, what, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, c.errorf("%s %q is not a positive integer", what, s)
	}
	return n, nil
}

func parseState(c *scriptCmd, what, s string) (sluice.State, error) {
	st, err := sluice.ParseState(s)
	if err != nil {
		var names []string
		for _, x := range sluice.States {
			names = append(names, x.String())
		}
		return 0, c.errorf("%s %q is not a state (%s)", what, s, strings.Join(names, ", "))
	}
	return st, nil
}

func clockText(t time.Time) string { return t.UTC().Format("15:04:05.999") }

func (r *runner) now() string { return clockText(r.w.clock.Now()) }

func workerText(w sluice.WorkerID) string {
	if w == "" {
		return "-"
	}
	return string(w)
}

// notTron is an address without TRON's 0x41 prefix (an EVM address's
// bytes, say).
var notTron = tron.Address{0x00, 0xbb, 0x02}

func addressText(a tron.Address) string {
	switch a {
	case alice:
		return "alice"
	case hotWallet:
		return "hot-wallet"
	case bob:
		return "bob"
	case foreignToken:
		return "foreign-token"
	case tron.USDTContract:
		return "usdt-contract"
	case notTron:
		return "not-tron"
	}
	return a.String()
}

// executionText names an execution's variants with the script's names.
func executionText(e mocknode.Execution) string {
	s := e.String()
	for _, a := range []tron.Address{alice, bob, hotWallet, foreignToken} {
		s = strings.ReplaceAll(s, a.String(), addressText(a))
	}
	return s
}

// --- hooks: what the workers do shows up as it happens ---

func (r *runner) hook(a *actor) {
	a.store.beforeCAS = func(c sluice.Change) {
		r.fire(a, "before-cas", c.ID, c.To, fmt.Sprintf("%s %s->%s token=%d", r.opName(c.ID), c.From, c.To, c.Token))
	}
	a.store.afterCAS = func(c sluice.Change, op sluice.Operation, err error) {
		if err != nil {
			r.emitf("%s %s %s %s->%s token=%d refused: %v", r.now(), workerText(c.Worker), r.opName(c.ID), c.From, c.To, c.Token, err)
			return
		}
		r.register(op.ID, op.Envelope.Txid)
		evs := r.w.events(op.ID)
		r.emitf("%s", r.traceEvent(evs[len(evs)-1]))
	}
	a.store.afterClaim = func(ops []sluice.Operation, err error) {
		a.claimed = append(a.claimed, ops...)
	}
	a.store.afterPark = func(p sluice.Park, op sluice.Operation, err error) {
		if err != nil {
			r.emitf("%s %s %s park token=%d refused: %v", r.now(), workerText(p.Worker), r.opName(p.ID), p.Token, err)
			return
		}
		r.emitf("%s %s %s parked (%d) until %s: %s", r.now(), workerText(p.Worker), r.opName(p.ID), op.Parks, clockText(op.NotBefore), p.Reason)
	}
	a.signer.before = func(raw tron.RawData) {
		id := raw.Txid()
		rec, _ := r.tx(id)
		r.fire(a, "before-sign", rec.op, sluice.None, r.txName(id))
	}
	a.node.beforeBroadcast = func(tx tron.Transaction) (tron.BroadcastResult, error, bool) {
		id := tx.Txid()
		rec, _ := r.tx(id)
		r.fire(a, "before-send", rec.op, sluice.None, r.txName(id))
		return tron.BroadcastResult{}, nil, false
	}
	a.node.afterBroadcast = func(tx tron.Transaction, _ tron.BroadcastResult, _ error) {
		r.flushWire()
		id := tx.Txid()
		rec, _ := r.tx(id)
		r.fire(a, "after-send", rec.op, sluice.None, r.txName(id))
	}
}

// fire runs the first armed crash or pause of a that matches.
func (r *runner) fire(a *actor, point string, op sluice.OperationID, to sluice.State, what string) {
	for i, h := range a.armed {
		if h.point != point || (h.op != "" && h.op != op) || (h.to != sluice.None && h.to != to) {
			continue
		}
		a.armed = append(a.armed[:i:i], a.armed[i+1:]...)
		h.fired = true
		if h.crash {
			r.emitf("%s %s crashes at %s: %s", r.now(), a.name, point, what)
			panic(crash{point})
		}
		r.emitf("%s %s pauses at %s: %s", r.now(), a.name, point, what)
		a.paused = true
		outer := r.indent
		for _, b := range h.cmd.body {
			r.indent = outer + "  "
			r.emitf("> %s", b.text)
			r.indent = outer + "    "
			if err := r.exec(b); err != nil {
				panic(scriptAbort{err})
			}
			r.flushWire()
		}
		r.indent = outer
		a.paused = false
		r.emitf("%s %s resumes", r.now(), a.name)
		return
	}
}

func (r *runner) faultHook(c mocknode.Call) mocknode.Fault {
	for _, rule := range r.rules {
		if rule.kind != c.Kind {
			continue
		}
		if rule.op != "" {
			rec, ok := r.tx(c.Txid)
			if !ok || rec.op != rule.op || (rule.build != 0 && rec.build != rule.build) {
				continue
			}
		}
		return rule.fault
	}
	return mocknode.None
}

func (r *runner) flushWire() {
	wire := r.w.node.Wire()
	for _, a := range wire[r.wireSeen:] {
		r.emitf("%s %s", clockText(a.At), r.wireText(a))
	}
	r.wireSeen = len(wire)
}

func (r *runner) wireText(a mocknode.WireAttempt) string {
	s := fmt.Sprintf("%s send %s -> %s", a.Worker, r.txName(a.Txid), a.Answer)
	switch {
	case a.Fired && !a.Reached:
		s += fmt.Sprintf(" (injected %s: never reached the node)", a.Fault)
	case a.Fired:
		s += fmt.Sprintf(" (injected %s: the node said %s)", a.Fault, a.Truth)
	case a.Fault != mocknode.None:
		s += fmt.Sprintf(" (%s did not apply)", a.Fault)
	}
	return s
}

func (r *runner) traceEvent(e sluice.Event) string {
	return fmt.Sprintf("%s %s %s %s->%s token=%d: %s", clockText(e.At), workerText(e.Worker), r.opName(e.OperationID), e.From, e.To, e.Token, e.Note)
}

// --- commands ---

// configKeys names the settable Config fields, script-style.
func configKeys() []string {
	return []string{"expiration-window", "min-validity", "safety-margin",
		"rebuild-after", "cancel-after", "rebuilds", "fee-limit", "fee-limit-max",
		"park-limit", "park-for", "park-backoff-max", "claim-batch",
		"steps-per-claim", "retry-not-taken", "retry-ambiguous", "poll-pending", "block-interval"}
}

func (r *runner) cmdConfig(c *scriptCmd) error {
	// After a spawn it is a deploy of new settings: the workers running
	// keep the config they were spawned with, the ones spawned later take
	// the new one, and rows built under the old one meet the new.
	if len(c.keys) == 0 {
		return c.errorf("nothing to set (keys: %s)", strings.Join(configKeys(), ", "))
	}
	cfg := r.w.cfg
	durs := map[string]*time.Duration{
		"expiration-window": &cfg.ExpirationWindow, "min-validity": &cfg.MinValidity,
		"safety-margin": &cfg.SafetyMargin, "retry-not-taken": &cfg.RetryNotTaken,
		"retry-ambiguous": &cfg.RetryAmbiguous, "poll-pending": &cfg.PollPending,
		"block-interval": &cfg.BlockInterval, "rebuild-after": &cfg.Stuck.RebuildAfter,
		"cancel-after": &cfg.Stuck.CancelAfter, "park-for": &cfg.ParkFor,
		"park-backoff-max": &cfg.ParkBackoffMax,
	}
	ints := map[string]*int{"rebuilds": &cfg.Stuck.Rebuilds, "park-limit": &cfg.ParkLimit,
		"claim-batch": &cfg.ClaimBatch, "steps-per-claim": &cfg.StepsPerClaimMax}
	sun := map[string]*int64{"fee-limit": &cfg.FeeLimit, "fee-limit-max": &cfg.FeeLimitMax}
	// c.keys, not c.kv: the order written, though no setting depends on
	// another, keeps the first bad one the one reported.
	for _, k := range c.keys {
		v := c.kv[k]
		if p, ok := durs[k]; ok {
			d, err := parseDuration(c, k, v)
			if err != nil {
				return err
			}
			*p = d
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c.errorf("%s %q is not an integer", k, v)
		}
		if p, ok := sun[k]; ok {
			*p = n
			continue
		}
		if int64(int(n)) != n {
			return c.errorf("%s %q is out of range", k, v)
		}
		*ints[k] = int(n)
	}
	if err := cfg.Validate(); err != nil {
		r.emitf("error: %v", err)
		return nil
	}
	r.w.cfg = cfg
	r.emitf("ok")
	return nil
}

func (r *runner) cmdSubmit(c *scriptCmd) error {
	amount, err := money.Parse(c.kv["amount"])
	if err != nil {
		return c.errorf("amount: %v", err)
	}
	who, to := customer, alice
	if v, ok := c.kv["customer"]; ok {
		who = sluice.CustomerID(v)
	}
	if v, ok := c.kv["to"]; ok {
		// usdt-contract and not-tron are rows no intake would write, which
		// the store admits and validation must reject ("rows written by
		// anyone").
		names := map[string]tron.Address{"alice": alice, "bob": bob, "hot-wallet": hotWallet, "usdt-contract": tron.USDTContract, "not-tron": notTron}
		if to, ok = names[v]; !ok {
			return c.errorf("to=%s: want alice, bob, hot-wallet, usdt-contract or not-tron", v)
		}
	}
	id, err := r.w.insertTo(who, to, amount)
	if err != nil {
		r.emitf("error: %v", err)
		return nil
	}
	r.ops = append(r.ops, id)
	r.repl = nil
	op := r.w.op(id)
	r.emitf("%s %s: %s USDT to %s", r.opName(id), op.State, op.Request.Amount, addressText(op.Request.To))
	return nil
}

func (r *runner) cmdCredit(c *scriptCmd) error {
	amount, err := money.Parse(c.kv["amount"])
	if err != nil {
		return c.errorf("amount: %v", err)
	}
	r.credits++
	ref := fmt.Sprintf("script-credit-%d", r.credits)
	if v, ok := c.kv["ref"]; ok {
		ref = v
	}
	acct, credited, err := r.w.store.Credit(r.w.ctx, sluice.Credit{Ref: ref, Customer: sluice.CustomerID(c.pos[0]), Amount: amount})
	switch {
	case err != nil:
		r.emitf("error: %v", err)
	case credited:
		r.emitf("credited %s: %s", ref, accountText(acct))
	default:
		r.emitf("%s already credited, nothing changed: %s", ref, accountText(acct))
	}
	return nil
}

func accountText(a sluice.Account) string {
	s := fmt.Sprintf("%s balance=%s held=%s paid=%s deposited=%s", a.Customer, a.Balance, a.Held, a.Paid, a.Deposited)
	if !a.Balanced() {
		s += " UNBALANCED: balance + held + paid != deposited"
	}
	return s
}

var workerName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func (r *runner) cmdSpawn(c *scriptCmd) error {
	var skew time.Duration
	if v, ok := c.kv["skew"]; ok {
		d, err := parseDuration(c, "skew", v)
		if err != nil {
			return err
		}
		skew = d
	}
	if v, ok := c.kv["signer"]; ok && v != "wrong-key" {
		return c.errorf("signer %q: the only other signer is wrong-key", v)
	}
	for _, name := range c.pos {
		if !workerName.MatchString(name) {
			return c.errorf("worker name %q: want lower-case letters, digits and dashes", name)
		}
		if _, err := r.actor(c, name); err == nil {
			return c.errorf("worker %s already spawned", name)
		}
		a := &actor{proc: r.w.spawn(name)}
		if skew != 0 {
			a.worker.Pipeline.Clock = skewed{r.w.clock, skew}
		}
		if c.kv["signer"] == "wrong-key" {
			a.signer.inner = tron.NewHMACSigner([]byte("the wrong key"))
		}
		r.hook(a)
		r.actors = append(r.actors, a)
	}
	r.emitf("ok")
	return nil
}

// skewed is a worker wall clock off by a fixed amount.
type skewed struct {
	c    sluice.Clock
	skew time.Duration
}

func (s skewed) Now() time.Time { return s.c.Now().Add(s.skew) }

func (r *runner) cmdCrash(c *scriptCmd) error { return r.arm(c, true) }
func (r *runner) cmdPause(c *scriptCmd) error { return r.arm(c, false) }

func (r *runner) arm(c *scriptCmd, crash bool) error {
	a, err := r.actor(c, c.pos[0])
	if err != nil {
		return err
	}
	h := &armed{cmd: c, crash: crash, point: c.kv["at"]}
	if !contains(points, h.point) {
		return c.errorf("at=%s is not a point (%s)", h.point, strings.Join(points, ", "))
	}
	if v, ok := c.kv["op"]; ok {
		if h.op, err = r.op(c, v); err != nil {
			return err
		}
	}
	if v, ok := c.kv["to"]; ok {
		if h.point != "before-cas" {
			return c.errorf("to= applies only at=before-cas")
		}
		if h.to, err = parseState(c, "to", v); err != nil {
			return err
		}
	}
	a.armed = append(a.armed, h)
	r.armed = append(r.armed, h)
	r.emitf("ok")
	return nil
}

func callKinds() []mocknode.CallKind {
	var out []mocknode.CallKind
	for k := mocknode.CallKind(1); !strings.HasPrefix(k.String(), "callkind("); k++ {
		out = append(out, k)
	}
	return out
}

func faultKinds() []mocknode.Fault {
	var out []mocknode.Fault
	for f := mocknode.Fault(1); !strings.HasPrefix(f.String(), "fault("); f++ {
		out = append(out, f)
	}
	return out
}

func (r *runner) cmdFault(c *scriptCmd) error {
	var rule faultRule
	var names []string
	for _, k := range callKinds() {
		names = append(names, k.String())
		if k.String() == c.pos[0] {
			rule.kind = k
		}
	}
	if rule.kind == 0 {
		return c.errorf("call kind %q (want %s)", c.pos[0], strings.Join(names, ", "))
	}
	names = nil
	for _, f := range faultKinds() {
		names = append(names, f.String())
		if f.String() == c.pos[1] {
			rule.fault = f
		}
	}
	if rule.fault == mocknode.None {
		return c.errorf("fault %q (want %s)", c.pos[1], strings.Join(names, ", "))
	}
	times, all := 1, c.kv["times"] == "all"
	if v, ok := c.kv["times"]; ok && !all {
		n, err := parseCount(c, "times", v)
		if err != nil {
			return err
		}
		times = n
	}
	if v, ok := c.kv["op"]; ok {
		if !all {
			return c.errorf("op= needs times=all: the node's fault script cannot choose by txid")
		}
		if rule.kind != mocknode.Broadcast && rule.kind != mocknode.Lookup {
			return c.errorf("op= applies only to broadcast and lookup, which carry a txid")
		}
		id, err := r.op(c, v)
		if err != nil {
			return err
		}
		rule.op = id
	}
	if v, ok := c.kv["build"]; ok {
		if rule.op == "" {
			return c.errorf("build= needs op=")
		}
		n, err := parseCount(c, "build", v)
		if err != nil {
			return err
		}
		rule.build = n
	}
	if all {
		r.rules = append(r.rules, rule)
	} else {
		for range times {
			r.w.node.Next(rule.kind, rule.fault)
		}
	}
	r.emitf("ok")
	return nil
}

func (r *runner) cmdHeal(c *scriptCmd) error {
	kept, dropped := r.rules[:0], 0
	for _, rule := range r.rules {
		if len(c.pos) == 1 && rule.kind.String() != c.pos[0] {
			kept = append(kept, rule)
			continue
		}
		dropped++
	}
	r.rules = kept
	if dropped == 0 {
		return c.errorf("no times=all fault to drop")
	}
	r.emitf("dropped %d fault rule(s)", dropped)
	return nil
}

func (r *runner) cmdTick(c *scriptCmd) error {
	for _, name := range c.pos {
		a, err := r.live(c, name)
		if err != nil {
			return err
		}
		r.tick(a, false)
	}
	return nil
}

// tick runs one Tick of a and prints its report. quiet (inside a run)
// prints it only when the worker crashed, was fenced or failed: the claims
// of a run's polling rounds would bury its transitions. It returns how many
// operations a claimed and whether a Tick error should stop a run.
func (r *runner) tick(a *actor, quiet bool) (claimed int, stop bool) {
	a.claimed = nil
	rep, crashed, err := a.tryTick()
	r.flushWire()
	var claims []string
	for _, op := range a.claimed {
		claims = append(claims, fmt.Sprintf("%s token=%d", r.opName(op.ID), op.Token))
	}
	s := "claimed nothing"
	if len(claims) > 0 {
		s = "claimed " + strings.Join(claims, ", ")
	}
	switch {
	case crashed:
		r.emitf("%s: %s; crashed at %s, dead from now on", a.name, s, a.crashedAt)
		return 0, false
	case err != nil:
		r.emitf("%s: %s; error: %v", a.name, s, err)
		return rep.Claimed, true
	}
	s += fmt.Sprintf("; steps=%d", rep.Steps)
	if rep.Fenced {
		s += "; fenced, stopped its batch"
	}
	if !quiet || rep.Fenced {
		r.emitf("%s: %s", a.name, s)
	}
	return rep.Claimed, false
}

func (r *runner) cmdRun(c *scriptCmd) error {
	var as []*actor
	for _, name := range c.pos {
		a, err := r.live(c, name)
		if err != nil {
			return err
		}
		as = append(as, a)
	}
	budget, forTime := 30*time.Minute, time.Duration(0)
	if v, ok := c.kv["budget"]; ok {
		d, err := parseDuration(c, "budget", v)
		if err != nil {
			return err
		}
		budget = d
	}
	if v, ok := c.kv["for"]; ok {
		if _, both := c.kv["budget"]; both {
			return c.errorf("budget= and for= exclude each other")
		}
		d, err := parseDuration(c, "for", v)
		if err != nil {
			return err
		}
		forTime = d
	}
	start := r.w.clock.Now()
	for {
		now := r.w.clock.Now()
		switch {
		case forTime > 0 && !now.Before(start.Add(forTime)):
			r.emitf("%s ran for %s; %s", r.now(), forTime, r.openOps())
			return nil
		case forTime == 0 && r.w.settled():
			r.emitf("%s settled", r.now())
			return nil
		case forTime == 0 && now.After(start.Add(budget)):
			r.emitf("%s not settled within %s; %s", r.now(), budget, r.openOps())
			return nil
		}
		claimed, alive := 0, 0
		for _, a := range as {
			if a.dead {
				continue
			}
			alive++
			n, stop := r.tick(a, true)
			if stop {
				r.emitf("run stopped")
				return nil
			}
			claimed += n
		}
		if alive == 0 {
			r.emitf("%s every worker is dead; run stopped; %s", r.now(), r.openOps())
			return nil
		}
		if claimed == 0 {
			r.w.clock.Advance(time.Second)
		}
	}
}

func (r *runner) openOps() string {
	var open []string
	for _, op := range r.w.store.Snapshot().Operations {
		if !op.State.Terminal() {
			open = append(open, r.opName(op.ID)+" "+op.State.String())
		}
	}
	if len(open) == 0 {
		return "nothing open"
	}
	return "open: " + strings.Join(open, ", ")
}

func (r *runner) cmdAdvance(c *scriptCmd) error {
	d, err := parseDuration(c, "duration", c.pos[0])
	if err != nil {
		return err
	}
	r.w.clock.Advance(d)
	r.emitf("%s", r.now())
	return nil
}

func (r *runner) current(c *scriptCmd) (sluice.Operation, error) {
	id, err := r.op(c, c.pos[0])
	if err != nil {
		return sluice.Operation{}, err
	}
	op := r.w.op(id)
	if op.Envelope.Txid.IsZero() {
		return op, c.errorf("%s has no txid yet (it is %s)", c.pos[0], op.State)
	}
	return op, nil
}

func (r *runner) cmdEvict(c *scriptCmd) error {
	op, err := r.current(c)
	if err != nil {
		return err
	}
	if r.w.node.Evict(op.Envelope.Txid) {
		r.emitf("evicted %s from the pool", r.txName(op.Envelope.Txid))
	} else {
		r.emitf("%s is not in the pool", r.txName(op.Envelope.Txid))
	}
	return nil
}

func (r *runner) cmdRestartNode(c *scriptCmd) error {
	var lost []string
	for _, id := range r.w.node.Pool() {
		lost = append(lost, r.txName(id))
	}
	r.w.node.Restart()
	if len(lost) == 0 {
		r.emitf("restarted; the pool was empty")
	} else {
		r.emitf("restarted; the pool lost %s", strings.Join(lost, ", "))
	}
	return nil
}

func (r *runner) cmdOutcome(c *scriptCmd) error {
	op, err := r.current(c)
	if err != nil {
		return err
	}
	receipt := c.kv["receipt"]
	if v, ok := c.kv["builds"]; ok {
		if v != "all" {
			return c.errorf("builds=%s: the only value is all", v)
		}
		if r.outcomes == nil {
			r.outcomes = map[sluice.OperationID]string{}
		}
		r.outcomes[op.ID] = receipt
	}
	r.w.node.SetOutcome(op.Envelope.Txid, receipt)
	r.emitf("ok")
	return nil
}

// foreignToken is a contract that is not USDT; its Transfer logs move no
// USDT, whatever they say.
var foreignToken = tron.AddressFromBytes20([20]byte{0xf0, 0x4e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18})

// bob receives what a redirected transfer sends elsewhere, and fees.
var bob = tron.AddressFromBytes20([20]byte{0xb0, 0xb0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18})

func (r *runner) cmdExecution(c *scriptCmd) error {
	op, err := r.current(c)
	if err != nil {
		return err
	}
	units := uint64(0)
	if v, ok := c.kv["units"]; ok {
		n, err := parseCount(c, "units", v)
		if err != nil {
			return err
		}
		units = uint64(n)
	}
	kind := c.pos[1]
	var build func(mocknode.ExecRequest) mocknode.Execution
	switch kind {
	case "exact":
		build = func(mocknode.ExecRequest) mocknode.Execution { return mocknode.Execution{} }
	case "no-transfer":
		build = func(mocknode.ExecRequest) mocknode.Execution { return mocknode.Execution{NoTransfer: true} }
	case "fee":
		build = func(mocknode.ExecRequest) mocknode.Execution { return mocknode.Execution{Fee: units, FeeTo: bob} }
	case "amount":
		build = func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{Redirect: true, To: q.To, Amount: units}
		}
	case "recipient":
		build = func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{Redirect: true, To: bob, Amount: q.Amount}
		}
	case "foreign-log":
		build = func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{NoTransfer: true, Extra: []tron.Log{tron.TransferLog(foreignToken, q.Owner, q.To, q.Amount)}}
		}
	case "extra-log":
		build = func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{Extra: []tron.Log{tron.TransferLog(foreignToken, q.Owner, q.To, q.Amount)}}
		}
	case "lie-no-log":
		build = func(mocknode.ExecRequest) mocknode.Execution { return mocknode.Execution{Lie: true} }
	case "lie-twice":
		build = func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{Lie: true, Logs: []tron.Log{q.Log(), q.Log()}}
		}
	case "lie-amount":
		build = func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{Lie: true, Logs: []tron.Log{tron.TransferLog(tron.USDTContract, q.Owner, q.To, units)}}
		}
	default:
		return c.errorf("unknown execution %q", kind)
	}
	if r.execs == nil {
		r.execs = map[tron.Txid]func(mocknode.ExecRequest) mocknode.Execution{}
		r.w.node.Network().SetExecution(func(q mocknode.ExecRequest) mocknode.Execution {
			if f, ok := r.execs[q.Txid]; ok {
				return f(q)
			}
			return mocknode.Execution{}
		})
	}
	r.execs[op.Envelope.Txid] = build
	r.emitf("ok")
	return nil
}

func (r *runner) cmdClaim(c *scriptCmd) error {
	a, err := r.actor(c, c.pos[0])
	if err != nil {
		return err
	}
	limit := a.worker.Pipeline.Config.ClaimBatch
	if v, ok := c.kv["limit"]; ok {
		if limit, err = parseCount(c, "limit", v); err != nil {
			return err
		}
	}
	ops, err := r.w.store.Claim(r.w.ctx, a.worker.ID, limit)
	switch {
	case err != nil:
		r.emitf("error: %v", err)
	case len(ops) == 0:
		r.emitf("claimed nothing")
	}
	for _, op := range ops {
		r.emitf("claimed %s %s token=%d", r.opName(op.ID), op.State, op.Token)
	}
	return nil
}

func (r *runner) cmdCAS(c *scriptCmd) error {
	id, err := r.op(c, c.pos[0])
	if err != nil {
		return err
	}
	op := r.w.op(id)
	ch := sluice.Change{ID: id, Token: op.Token, From: op.State}
	if ch.To, err = parseState(c, "to", c.kv["to"]); err != nil {
		return err
	}
	if v, ok := c.kv["from"]; ok {
		if ch.From, err = parseState(c, "from", v); err != nil {
			return err
		}
	}
	if v, ok := c.kv["token"]; ok {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c.errorf("token %q is not a number", v)
		}
		ch.Token = sluice.FencingToken(n)
	}
	if v, ok := c.kv["hold"]; ok {
		if ch.Hold, err = sluice.ParseHoldAction(v); err != nil || ch.Hold == sluice.HoldKeep {
			return c.errorf("hold=%s: want settle or release", v)
		}
	}
	if _, err := r.w.store.CAS(r.w.ctx, ch); err != nil {
		r.emitf("error: %v", err)
		return nil
	}
	evs := r.w.events(id)
	r.emitf("%s", r.traceEvent(evs[len(evs)-1]))
	return nil
}

func (r *runner) cmdState(c *scriptCmd) error {
	ids := r.ops
	if len(c.pos) > 0 {
		ids = nil
		for _, name := range c.pos {
			id, err := r.op(c, name)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		r.emitf("no operations")
	}
	for _, id := range ids {
		op := r.w.op(id)
		s := fmt.Sprintf("%s %s hold=%s builds=%d", r.opName(id), op.State, r.holdState(id), op.Builds)
		if !op.Envelope.Txid.IsZero() {
			s += " tx=" + r.txName(op.Envelope.Txid)
			if fee := op.Envelope.Raw.FeeLimit; fee != r.w.cfg.FeeLimit {
				s += fmt.Sprintf(" fee-limit=%d", fee)
			}
		}
		lease := "-"
		if !op.LeaseUntil.IsZero() {
			lease = clockText(op.LeaseUntil)
		}
		s += fmt.Sprintf(" token=%d claimed-by=%s lease=%s", op.Token, workerText(op.ClaimedBy), lease)
		if op.NotBefore.After(r.w.clock.Now()) {
			s += " not-before=" + clockText(op.NotBefore)
		}
		if op.Parks > 0 {
			s += fmt.Sprintf(" parks=%d", op.Parks)
		}
		if op.ParkReason != "" {
			s += fmt.Sprintf(" parked-since=%s park-reason=%q", clockText(op.ParkedSince), op.ParkReason)
		}
		if op.Reason != "" {
			s += fmt.Sprintf(" reason=%q", op.Reason)
		}
		r.emitf("%s", s)
	}
	return nil
}

// holdState is the hold's state, or "none" for an operation without one.
func (r *runner) holdState(id sluice.OperationID) string {
	h, err := r.w.store.Hold(r.w.ctx, id)
	if err != nil {
		return "none"
	}
	return h.State.String()
}

func (r *runner) cmdLog(c *scriptCmd) error {
	id, err := r.op(c, c.pos[0])
	if err != nil {
		return err
	}
	for _, e := range r.w.events(id) {
		s := fmt.Sprintf("[%d] %s %s %s->%s token=%d", e.Seq, clockText(e.At), workerText(e.Worker), e.From, e.To, e.Token)
		if !e.Txid.IsZero() {
			s += " tx=" + r.txName(e.Txid)
		}
		if !e.RetiredTxid.IsZero() {
			s += " retired=" + r.txName(e.RetiredTxid)
		}
		if e.Hold != sluice.HoldKeep {
			s += " hold=" + e.Hold.String()
		}
		r.emitf("%s: %s", s, e.Note)
		if d := e.Decision; d != nil {
			r.emitf("  decision: %s", d)
		}
		switch ev := e.Evidence; {
		case ev != nil && ev.Lookup == tron.Included:
			r.emitf("  evidence: txid=%s included in #%d with receipt %s, solid=#%d",
				r.txName(ev.Txid), ev.BlockNumber, ev.Receipt, ev.SolidNumber)
			audit := "ok, it checks out against the chain"
			if bad := r.w.auditEvidence(e); len(bad) > 0 {
				audit = "FAILED: " + strings.Join(bad, "; ")
			}
			r.emitf("  audit: %s", audit)
		case ev != nil:
			r.emitf("  evidence: txid=%s expiration=%s margin=%s solid=#%d@%s lookup=%s",
				r.txName(ev.Txid), clockText(ev.Expiration), ev.Margin, ev.SolidNumber, clockText(ev.SolidTime), ev.Lookup)
			audit := "ok, it checks out against the chain"
			if bad := r.w.auditEvidence(e); len(bad) > 0 {
				audit = "FAILED: " + strings.Join(bad, "; ")
			}
			r.emitf("  audit: %s", audit)
		case !e.RetiredTxid.IsZero():
			r.emitf("  evidence: none")
		}
	}
	return nil
}

func (r *runner) cmdLedger(c *scriptCmd) error {
	snap := r.w.store.Snapshot()
	for _, a := range snap.Accounts {
		r.emitf("account %s", accountText(a))
	}
	if len(snap.Holds) == 0 {
		r.emitf("no holds")
	}
	for _, h := range snap.Holds {
		s := fmt.Sprintf("hold %s: %s USDT of %s %s", r.opName(h.Operation), h.Amount, h.Customer, h.State)
		if h.ClosedSeq != 0 {
			s += fmt.Sprintf(" by event #%d", h.ClosedSeq)
		}
		r.emitf("%s", s)
	}
	return nil
}

func (r *runner) cmdWire(c *scriptCmd) error {
	name := ""
	if len(c.pos) == 1 {
		a, err := r.actor(c, c.pos[0])
		if err != nil {
			return err
		}
		name = a.name
	}
	n := 0
	for i, a := range r.w.node.Wire() {
		if name == "" || a.Worker == name {
			n++
			r.emitf("%d. %s %s", i+1, clockText(a.At), r.wireText(a))
		}
	}
	if n == 0 {
		r.emitf("no broadcasts")
	}
	return nil
}

func (r *runner) cmdChain(c *scriptCmd) error {
	acc := r.w.node.Accepted()
	if len(acc) == 0 {
		r.emitf("accepted: none")
	}
	for _, a := range acc {
		r.emitf("accepted: %s x%d, first at %s", r.txName(a.Txid), a.Times, clockText(a.First))
	}
	inc := r.w.node.Inclusions()
	if len(inc) == 0 {
		r.emitf("included: none")
	}
	for _, in := range inc {
		s := fmt.Sprintf("included: %s in #%d at %s, receipt %s", r.txName(in.Txid), in.BlockNumber, clockText(in.BlockTime), in.Receipt)
		if len(in.Moved) == 0 {
			s += ", no transfer"
		}
		for _, m := range in.Moved {
			s += fmt.Sprintf(", %s USDT %s -> %s", money.Amount(m.Amount), addressText(m.From), addressText(m.To))
		}
		if !in.Execution.IsExact() {
			s += " (execution: " + executionText(in.Execution) + ")"
		}
		r.emitf("%s", s)
	}
	r.emitf("balance: alice %s USDT", money.Amount(r.w.node.Balance(alice)))
	if b := r.w.node.Balance(bob); b > 0 {
		r.emitf("balance: bob %s USDT", money.Amount(b))
	}
	return nil
}

func (r *runner) cmdWorkers(c *scriptCmd) error {
	if len(r.actors) == 0 {
		r.emitf("no workers")
	}
	for _, a := range r.actors {
		status := "alive"
		if a.dead {
			status = "dead (crashed at " + a.crashedAt + ")"
		}
		sends := 0
		for _, w := range r.w.node.Wire() {
			if w.Worker == a.name {
				sends++
			}
		}
		r.emitf("%s %s signs=%d sends=%d", a.name, status, a.signer.calls, sends)
	}
	return nil
}

func (r *runner) cmdTxids(c *scriptCmd) error {
	if len(r.txs) == 0 {
		r.emitf("no txids")
	}
	for _, tx := range r.txs {
		// Written past emitf: its replacer would turn the hex back into
		// the name, and the hex is the point here.
		r.out.WriteString(fmt.Sprintf("%s%s = %s...\n", r.indent, tx.name, tx.id.Short()))
	}
	return nil
}

func (r *runner) cmdFaults(c *scriptCmd) error {
	n := 0
	for _, f := range r.w.node.FaultsFired() {
		if f.Count > 0 {
			n++
			r.emitf("fired: %s x%d", f.Fault, f.Count)
		}
	}
	for _, e := range r.w.node.Events() {
		if e.Count > 0 {
			n++
			r.emitf("event: %s x%d", e.Event, e.Count)
		}
	}
	if n == 0 {
		r.emitf("nothing fired")
	}
	return nil
}

// --- diff ---

// lineDiff is a line diff of want and got (longest common subsequence),
// with two lines of context around each change.
func lineDiff(want, got string) string {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	a, b := split(want), split(got)
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ls []line
	for i, j := 0, 0; i < len(a) || j < len(b); {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ls = append(ls, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ls = append(ls, line{'-', a[i]})
			i++
		default:
			ls = append(ls, line{'+', b[j]})
			j++
		}
	}
	const context = 2
	keep := make([]bool, len(ls))
	for k, l := range ls {
		if l.op != ' ' {
			for d := max(0, k-context); d <= min(len(ls)-1, k+context); d++ {
				keep[d] = true
			}
		}
	}
	var out strings.Builder
	skipped := false
	for k, l := range ls {
		if !keep[k] {
			skipped = true
			continue
		}
		if skipped {
			out.WriteString("  ...\n")
			skipped = false
		}
		out.WriteString(string(l.op) + " " + l.text + "\n")
	}
	if skipped {
		out.WriteString("  ...\n")
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// TestScriptErrors feeds malformed scripts: each must fail naming the file,
// the line and what is wrong, rather than run on or pass.
func TestScriptErrors(t *testing.T) {
	const head = "# Goal: nothing.\nsubmit amount=1\n----\nok\n\nspawn a\n----\nok\n\n" // lines 1-9
	tests := []struct {
		name, src, want string
	}{
		{"unknown command", head + "frobnicate op1\n----\n",
			`bad.txt:10: frobnicate op1: unknown command "frobnicate"`},
		{"missing argument", head + "submit\n----\n",
			`bad.txt:10: submit: missing argument amount=`},
		{"bad amount", head + "submit amount=twelve\n----\n",
			`bad.txt:10: submit amount=twelve: amount: `},
		{"unknown argument", head + "submit amount=1 memo=hi\n----\n",
			`bad.txt:10: submit amount=1 memo=hi: unknown argument memo= (want one of amount, customer, to)`},
		{"bad duration", head + "advance soon\n----\n",
			`bad.txt:10: advance soon: duration "soon" is not a duration like 30s or 10m`},
		{"too many arguments", head + "advance 1s 2s\n----\n",
			`bad.txt:10: advance 1s 2s: wrong number of arguments (usage: advance DURATION`},
		{"unknown worker", head + "tick w9\n----\n",
			`bad.txt:10: tick w9: unknown worker "w9" (spawned: a)`},
		{"unknown operation", head + "state op7\n----\n",
			`bad.txt:10: state op7: unknown operation "op7"`},
		{"unknown fault", head + "fault broadcast gremlins\n----\n",
			`bad.txt:10: fault broadcast gremlins: fault "gremlins" (want lose-request, `},
		{"no separator", head + "state op1\n\nwire\n----\n",
			`bad.txt:10: state op1: no ---- line after the command`},
		{"pause without body", head + "pause a at=before-cas\n----\n",
			`bad.txt:10: pause a at=before-cas: needs body lines`},
		{"to= at a send", head + "crash a at=before-send to=signed\n----\n",
			`bad.txt:10: crash a at=before-send to=signed: to= applies only at=before-cas`},
		// A body line is checked when its pause fires, and blamed by its own
		// line number.
		{"unknown worker in a body", head + "pause a at=before-cas\nadvance 1s\ntick nobody\n----\n\ntick a\n----\n",
			`bad.txt:12: tick nobody: unknown worker "nobody" (spawned: a)`},
		{"dead worker ticked", head + "crash a at=before-cas\n----\n\ntick a\n----\n\ntick a\n----\n",
			`bad.txt:16: tick a: worker a is dead (crashed at before-cas); spawn another`},
		{"crash never fired", head + "crash a at=before-sign\n----\n",
			`bad.txt:10: crash a at=before-sign: never fired`},
		// builds-max became the stuck policy's keys.
		{"the old builds-max key", head + "config builds-max=3\n----\n",
			`bad.txt:10: config builds-max=3: unknown argument builds-max= (want one of expiration-window, min-validity, safety-margin, rebuild-after, cancel-after, rebuilds, `},
		{"unknown recipient", head + "submit amount=1 to=carol\n----\n",
			`bad.txt:10: submit amount=1 to=carol: to=carol: want alice, bob, hot-wallet, usdt-contract or not-tron`},
		{"heal with nothing to heal", head + "heal\n----\n",
			`bad.txt:10: heal: no times=all fault to drop`},
		{"outcome before a txid", head + "outcome op1 receipt=REVERT builds=all\n----\n",
			`bad.txt:10: outcome op1 receipt=REVERT builds=all: op1 has no txid yet (it is requested)`},
		{"hold action keep", head + "cas op1 to=validated hold=keep\n----\n",
			`bad.txt:10: cas op1 to=validated hold=keep: hold=keep: want settle or release`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseScript("bad.txt", tt.src)
			if err == nil {
				_, err = runScript(t, s)
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error = %v\nwant one starting with %s", err, tt.want)
			}
			t.Log(err) // with -v: the message as a script's author sees it
		})
	}
}
