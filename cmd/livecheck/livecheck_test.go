package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sluicesim/cmd/internal/audit"
	"sluicesim/model"
	"sluicesim/sluice"
	intakepkg "sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
)

// Goal: the workload is what the report claims: twins, upper-case ids and
// replays carry the original's instruction (the same hash), conflicts
// another, invalid posts none; and there are enough of each at the default
// size to meet the acceptance bound with room to spare.
func TestPlans(t *testing.T) {
	plans := newPlans(1000, rand.New(rand.NewPCG(1, 2)))
	var dup, conflict, otherCustomer int
	perCustomer := map[string]int{}
	seen := map[string]bool{}
	for _, p := range plans {
		if seen[p.id] {
			t.Fatalf("id %s drawn twice", p.id)
		}
		seen[p.id] = true
		if p.orig.hash == "" {
			t.Fatalf("plan %d: the original post is invalid: %s", p.n, p.orig.body)
		}
		perCustomer[p.orig.sent.Customer]++
		if p.twin != nil {
			dup++
			if p.twin.hash != p.orig.hash || string(p.twin.body) == string(p.orig.body) {
				t.Errorf("plan %d: twin %s must mean the original %s in other bytes", p.n, p.twin.body, p.orig.body)
			}
		}
		if p.upper != nil {
			dup++
			if p.upper.hash != p.orig.hash || p.upper.id == p.id {
				t.Errorf("plan %d: upper-case post %s must mean the original", p.n, p.upper.body)
			}
		}
		if p.replay {
			dup++
		}
		if p.conflict != nil {
			conflict++
			if p.conflict.hash == "" || p.conflict.hash == p.orig.hash {
				t.Errorf("plan %d: conflict %s must be another valid instruction", p.n, p.conflict.body)
			}
			if p.conflict.sent.Customer != p.orig.sent.Customer {
				otherCustomer++
			}
		}
		if p.invalid != nil && p.invalid.hash != "" {
			t.Errorf("plan %d: invalid post %s normalizes", p.n, p.invalid.body)
		}
	}
	if dup+conflict < 300 {
		t.Errorf("%d duplicate and %d conflicting posts planned: too few for the acceptance bound of 100", dup, conflict)
	}
	if otherCustomer == 0 || otherCustomer == conflict {
		t.Errorf("%d of %d conflicts are for another customer; want some, not all", otherCustomer, conflict)
	}
	if len(perCustomer) != len(customers)+1 || perCustomer[string(late)] != len(plans)/lateEvery {
		t.Errorf("withdrawals per customer %v: want every one of %v drawn, and every %dth for %s", perCustomer, customers, lateEvery, late)
	}
	unfunded := 0
	for _, b := range invalidPosts(30, rand.New(rand.NewPCG(1, 2))) {
		switch {
		case b.unfunded:
			unfunded++
			if b.hash == "" || b.sent.Customer != string(broke) {
				t.Errorf("unfunded post %s must be a valid request for %s", b.body, broke)
			}
		case b.hash != "":
			t.Errorf("invalid post %s normalizes", b.body)
		}
	}
	if unfunded == 0 {
		t.Error("no post for an unfunded customer among the invalid posts")
	}
}

// Goal: the serve flags fund every customer, spelt as serve reads them
// (-fund CUSTOMER=AMOUNT, repeated; AMOUNT a USDT decimal), with the ref
// serve gives the credit, for at least what the run could take from one
// customer, and never more than one credit may be.
func TestFundFlags(t *testing.T) {
	for _, n := range []int{1, 80, 1000, 1_000_000} {
		args, credits := fundFlags(n)
		if len(args) != 2*len(customers) || len(credits) != len(customers) {
			t.Fatalf("n=%d: %d args and %d credits for %d customers", n, len(args), len(credits), len(customers))
		}
		for i, c := range customers {
			cr := credits[i]
			want := string(c) + "=" + cr.Amount.String()
			if args[2*i] != "-fund" || args[2*i+1] != want || cr.Customer != c || cr.Ref != "fund:"+string(c)+":"+cr.Amount.String() {
				t.Errorf("n=%d: args %q, credit %+v; want -fund %s with ref fund:%s:%s", n, args[2*i:2*i+2], cr, want, c, cr.Amount)
			}
			if err := sluice.CheckCredit(cr); err != nil {
				t.Errorf("n=%d: credit %+v refused: %v", n, cr, err)
			}
			if worst := money.Amount(n+1) * amountMax; cr.Amount < worst && cr.Amount != money.MaxAmount {
				t.Errorf("n=%d: %s funded with %s, less than the %s the run could take", n, c, cr.Amount, worst)
			}
		}
	}
}

// Goal: answers are read as a client would read them, and the body's
// instruction is recognized through its canonical form.
func TestClassifyPost(t *testing.T) {
	p := newPlans(4, rand.New(rand.NewPCG(3, 4)))[3]
	const txid = "5c1f3b2a00000000000000000000000000000000000000000000000000000042"
	answer := []byte(strings.Replace(string(p.twin.body), "}", `,"state":"broadcast","txid":"`+txid+`"}`, 1))
	for _, c := range []struct {
		code   int
		replay bool
		want   model.Outcome
	}{
		{http.StatusCreated, false, model.Created},
		{http.StatusOK, true, model.Replayed},
		{http.StatusOK, false, model.Failed}, // a 200 without the replay header is no answer intake gives
		{http.StatusConflict, false, model.Conflict},
		{http.StatusPaymentRequired, false, model.Unfunded},
		{http.StatusUnprocessableEntity, false, model.Invalid},
		{http.StatusServiceUnavailable, false, model.Failed},
		{http.StatusInternalServerError, false, model.Failed},
	} {
		got, a := classifyPost(c.code, c.replay, answer)
		shown, st := a.Payload, a.State
		if got != c.want {
			t.Errorf("%d replay=%v: %s, want %s", c.code, c.replay, got, c.want)
		}
		if got == model.Created || got == model.Replayed {
			want, _ := model.ReadIntent(p.orig.sent)
			if in, bad := model.ReadIntent(shown); bad != "" || !model.SameInstruction(in, want) || st != sluice.Broadcast || a.Txid != txid {
				t.Errorf("%d: answer %+v state %s txid %q, want the original instruction %+v, broadcast, %s", c.code, shown, st, a.Txid, p.orig.sent, txid)
			}
		}
	}
}

// Goal: the verdict fails on any violation and on every count below its
// bound, and passes only when all hold.
func TestFailures(t *testing.T) {
	cfg := defaults()
	good := func() *report {
		r := &report{withdrawals: 1000, terminal: 1000, kills: 10, takeovers: map[sluice.State]int{sluice.Broadcasting: 1},
			tally: &tally{outcomes: map[model.Outcome]int{model.Replayed: 60, model.Conflict: 40}}, metrics: canned(t),
			onCall: &onCall{counts: map[string]int{"cancel/landed": 3, "retry/refused": 1}}}
		if r.metrics.actions == nil {
			r.metrics.actions = map[string]float64{}
		}
		r.metrics.actions["cancel/landed"], r.metrics.actions["retry/refused"] = 3, 1
		return r
	}
	if f := good().failures(cfg); len(f) != 0 {
		t.Fatalf("a run meeting every bound fails: %v", f)
	}
	restarts := defaults()
	restarts.restartPG = 2
	if r := good(); len(r.failures(restarts)) != 1 {
		t.Errorf("2 PostgreSQL restarts asked, none done: failures %v, want exactly one", r.failures(restarts))
	}
	crashes := defaults()
	crashes.crashPG = 2
	if r := good(); len(r.failures(crashes)) != 1 {
		t.Errorf("2 PostgreSQL crashes asked, none done: failures %v, want exactly one", r.failures(crashes))
	}
	// Rows made to park (-short-every) must have parked, and the person
	// must have retried one from the queue: the path the runs without
	// them never took.
	short := defaults()
	short.shortEvery = 25
	for name, c := range map[string]struct {
		shortened, retried int
		fails              bool
	}{
		"nothing refused":         {0, 0, true},
		"refused, none retried":   {4, 0, true},
		"refused, a retry landed": {4, 1, false},
	} {
		r := good()
		r.shortened = c.shortened
		r.onCall.queued = map[string]int{"retry/refused": 2, "retry/landed": c.retried}
		if f := r.failures(short); (len(f) == 1) != c.fails || len(f) > 1 {
			t.Errorf("-short-every, %s: failures %v, want %d", name, f, map[bool]int{true: 1}[c.fails])
		}
	}
	both := good()
	both.pgRestarts, both.pgCrashes = 2, 2
	if r := both; len(r.failures(restarts)) != 0 || len(r.failures(crashes)) != 0 {
		t.Errorf("the restarts and crashes asked, done: failures %v and %v, want none", r.failures(restarts), r.failures(crashes))
	}
	for name, spoil := range map[string]func(*report){
		"commit lost in a crash": func(r *report) {
			r.durability = []outageCommits{{seen: 200}, {crash: true, seen: 204, lost: []int64{9}}}
		},
		"violation": func(r *report) {
			r.violations = []model.Violation{{Invariant: model.AtMostOnce, Message: "paid twice"}}
		},
		"audit violation": func(r *report) {
			r.audit = &audit.Report{Violations: []model.Violation{{Invariant: audit.Reconciliation, Message: "a payment sluice does not know about"}}}
		},
		"withdrawals":                          func(r *report) { r.withdrawals, r.terminal = 999, 999 },
		"not terminal":                         func(r *report) { r.terminal = 998 },
		"kills":                                func(r *report) { r.kills = 9 },
		"dup/conflicts":                        func(r *report) { r.tally.outcomes[model.Conflict] = 39 },
		"wrong about funds":                    func(r *report) { r.tally.wrongFunds = []string{"a 402 to live-0"} },
		"no kill between write-ahead and send": func(r *report) { r.takeovers = map[sluice.State]int{sluice.Signed: 5} },
		"metrics implausible":                  func(r *report) { r.metrics.stuck = 2 },
		"metrics never scraped":                func(r *report) { r.metrics = nil },
		"metrics scrape failed":                func(r *report) { r.metrics, r.metricsErr = nil, "GET /metrics: 503" },
		"on call, a landed cancel uncounted":   func(r *report) { r.metrics.actions["cancel/landed"] = 2 },
		"on call, nothing landed": func(r *report) {
			r.onCall.counts = map[string]int{"cancel/refused": 4}
			r.metrics.actions["cancel/landed"], r.metrics.actions["retry/refused"], r.metrics.actions["cancel/refused"] = 0, 0, 4
		},
		"on call, an answer wrong": func(r *report) { r.onCallWrong = []string{"cancel x answered 200, but the operation ended confirmed"} },
	} {
		r := good()
		spoil(r)
		if f := r.failures(cfg); len(f) != 1 {
			t.Errorf("%s: failures %v, want exactly one", name, f)
		}
	}
}

// Goal: the live check itself, small: real processes on loopback against
// PostgreSQL, worker processes killed and restarted, zero violations. It
// takes about half a minute, so it runs only with SLUICE_LIVECHECK=1 (make
// livecheck runs the full size).
func TestLiveSmall(t *testing.T) {
	if os.Getenv("SLUICE_LIVECHECK") != "1" {
		t.Skip("SLUICE_LIVECHECK=1 runs the small live check (needs DATABASE_URL)")
	}
	cfg := defaults()
	cfg.databaseURL = os.Getenv("DATABASE_URL")
	if cfg.databaseURL == "" {
		t.Fatal("SLUICE_LIVECHECK=1 needs DATABASE_URL")
	}
	cfg.withdrawals, cfg.invalid, cfg.postSpan, cfg.kills, cfg.killEvery = 80, 6, 8*time.Second, 3, 2*time.Second
	cfg.minWithdrawals, cfg.minKills, cfg.minDupConflict = 80, 3, 20
	// Five times the full run's kill points: of 80 withdrawals the person
	// on call cancels some, and at 0.01 (three or four kills, one in six
	// right after a write-ahead) a run often had no kill between a
	// write-ahead and its send, which the run demands.
	cfg.killPoint = 0.05
	cfg.seed = 42
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := run(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("live check: %v\n%s", err, out.String())
	}
	if f := rep.failures(cfg); len(f) > 0 {
		t.Fatalf("live check failed: %v\n%s", f, out.String())
	}
	t.Log(out.String())
}

// Goal: the live check judges answers, not only invariants: an API that
// answers some valid posts with 500 fails the run, although every
// invariant may hold (the failed posts changed nothing); a retryable 503
// that the client retries to success does not. Method: the clients' real
// code posts a workload to the real intake handler over the in-memory
// store behind a front that answers every 5th POST with the injected
// status; the verdict is read from a report whose other counts all pass.
func TestAnswersJudged(t *testing.T) {
	for _, c := range []struct {
		status   int
		outage   bool // the injected answers come during a PostgreSQL restart
		wantFail bool
	}{
		{0, false, false}, // no injection
		{http.StatusServiceUnavailable, false, false},
		{http.StatusInternalServerError, false, true},
		{http.StatusInternalServerError, true, false},
	} {
		name := strconv.Itoa(c.status)
		if c.outage {
			name += "/during-restart"
		}
		t.Run(name, func(t *testing.T) {
			intake := intakeHandler(t, 30)
			var posts atomic.Int64
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.status != 0 && r.Method == http.MethodPost && posts.Add(1)%5 == 0 {
					http.Error(w, "injected", c.status)
					return
				}
				intake.ServeHTTP(w, r)
			}))
			defer front.Close()
			h := newHistory(front.URL, 5*time.Second)
			if c.outage {
				h.outages.begin() // and it never ends
			}
			for _, p := range newPlans(30, rand.New(rand.NewPCG(7, 8))) {
				h.run(t.Context(), p, 3)
			}
			r := &report{withdrawals: 1000, terminal: 1000, kills: 10, tally: &h.t, takeovers: map[sluice.State]int{sluice.Broadcasting: 1}}
			h.t.outcomes[model.Replayed] += 100 // the dup/conflict bound is not under test
			f := r.failures(defaults())
			failed := false
			for _, s := range f {
				failed = failed || strings.Contains(s, "valid requests got a 5xx")
			}
			if failed != c.wantFail {
				t.Errorf("injected %d: failures %v; want a 5xx failure: %v", c.status, f, c.wantFail)
			}
			if c.status != 0 && h.t.answers[answerClass(c.status, true)] == 0 {
				t.Errorf("injected %d: no such answer counted (%v): the injection did not happen", c.status, h.t.answers)
			}
			if c.outage && (h.t.excused == 0 || h.t.recovered == 0 || h.t.validUnanswered != 0) {
				t.Errorf("during a restart: %d 5xx excused, %d posts recovered, %d never answered; want the 5xx excused and every post answered on retry",
					h.t.excused, h.t.recovered, h.t.validUnanswered)
			}
		})
	}
}

// Goal: an answer is blamed on a PostgreSQL restart exactly when the
// request overlapped the restart's window (from the restart to the first
// query answered after it, plus the grace in which pooled connections from
// before it may still be handed out), and while a restart is under way.
func TestOutagesOverlap(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	o := &outages{windows: []outage{{began: at(1000), up: at(2000)}}}
	grace := int(outageGrace / time.Millisecond)
	for _, c := range []struct {
		call, ret int
		want      bool
	}{
		{0, 999, false},                   // answered before the restart
		{0, 1000, true},                   // in flight when it began
		{1500, 1600, true},                // inside
		{2000 + grace, 5000, true},        // called at the grace's last instant
		{2000 + grace + 1, 5000, false},   // called after it
		{2000 + grace + 1, 99_999, false}, // however long it took
	} {
		if got := o.overlaps(at(c.call), at(c.ret)); got != c.want {
			t.Errorf("request %d..%d ms against a restart 1000..2000 ms: overlaps %v, want %v", c.call, c.ret, got, c.want)
		}
	}
	o.begin() // a restart under way: its window is open
	if !o.overlaps(time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)) {
		t.Error("a request answered during an open restart is not blamed on it")
	}
	var none *outages
	if none.overlaps(t0, t0) {
		t.Error("no restarts, yet a request overlaps one")
	}
	if d := o.durations(); len(d) != 1 || d[0] != time.Second {
		t.Errorf("durations %v, want the closed restart's 1s only", d)
	}
}

// Goal: a restart is refused before anything starts when it cannot work:
// the default command needs .ci/postgres.sh's cluster (SLUICE_PG_DIR) and
// the repository's root to find the script.
func TestCheckRestart(t *testing.T) {
	cfg := defaults()
	if err := cfg.checkRestart(); err != nil {
		t.Errorf("no restarts: %v", err)
	}
	cfg.restartPG = -1
	if err := cfg.checkRestart(); err == nil {
		t.Error("-restart-postgres -1 accepted")
	}
	cfg.restartPG = 2
	t.Setenv("SLUICE_PG_DIR", "")
	if err := cfg.checkRestart(); err == nil || !strings.Contains(err.Error(), "SLUICE_PG_DIR") {
		t.Errorf("default command without SLUICE_PG_DIR: %v, want a refusal naming it", err)
	}
	t.Setenv("SLUICE_PG_DIR", t.TempDir())
	if err := cfg.checkRestart(); err == nil || !strings.Contains(err.Error(), "root") { // the test runs in cmd/livecheck
		t.Errorf("default command away from the repository's root: %v, want a refusal", err)
	}
	cfg.restartCmd = "true"
	if err := cfg.checkRestart(); err != nil {
		t.Errorf("a command of the caller's own: %v", err)
	}
	cfg.crashPG = -1
	if err := cfg.checkRestart(); err == nil || !strings.Contains(err.Error(), "-crash-postgres -1") {
		t.Errorf("-crash-postgres -1: %v, want a refusal naming it", err)
	}
	cfg.crashPG = 2
	t.Setenv("SLUICE_PG_DIR", "")
	if err := cfg.checkRestart(); err == nil || !strings.Contains(err.Error(), "-crash-postgres 2 crashes the cluster of .ci/postgres.sh") {
		t.Errorf("crashes without SLUICE_PG_DIR: %v, want a refusal naming it", err)
	}
}

// Goal: restarts and crashes take turns, every one asked is planned.
func TestOutagePlan(t *testing.T) {
	for _, c := range []struct {
		restarts, crashes int
		want              string
	}{
		{0, 0, ""}, {2, 0, "RR"}, {0, 2, "CC"}, {2, 2, "RCRC"}, {1, 3, "RCCC"}, {3, 1, "RCRR"},
	} {
		var got strings.Builder
		for _, crash := range outagePlan(c.restarts, c.crashes) {
			got.WriteString(map[bool]string{false: "R", true: "C"}[crash])
		}
		if got.String() != c.want {
			t.Errorf("outagePlan(%d, %d) = %q, want %q", c.restarts, c.crashes, got.String(), c.want)
		}
	}
}

// intakeHandler is the real intake over an in-memory store, its customers
// credited as the API process's -fund flags credit them for n withdrawals.
func intakeHandler(t *testing.T, n int) http.Handler {
	t.Helper()
	mem := store.NewMemory(&storetest.Clock{}, time.Minute)
	_, credits := fundFlags(n)
	for _, c := range credits {
		if _, _, err := mem.Credit(context.Background(), c); err != nil {
			t.Fatalf("credit %+v: %v", c, err)
		}
	}
	return intakepkg.NewHandler(&intakepkg.Service{Store: mem})
}

// Goal: answers about funds are judged: over the real intake with the
// customers funded, the workload's posts for broke are refused 402 and no
// other post is; an intake that refuses a funded customer, or creates a
// withdrawal for broke, fails the run. Method: the clients' real code, and
// a front that turns every created answer into a 402 (or the reverse).
func TestFundsJudged(t *testing.T) {
	for _, c := range []struct {
		name     string
		lie      func(w http.ResponseWriter, r *http.Request, real http.Handler) bool
		wantFail bool
	}{
		{"honest", nil, false},
		{"402 to a funded customer", func(w http.ResponseWriter, r *http.Request, real http.Handler) bool {
			rec := httptest.NewRecorder()
			real.ServeHTTP(rec, r)
			if rec.Code == http.StatusCreated {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusPaymentRequired)
				w.Write([]byte(`{"error":"insufficient funds","code":"insufficient_funds"}`))
				return true
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return true
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			plans := newPlans(12, rand.New(rand.NewPCG(7, 8)))
			real := intakeHandler(t, len(plans))
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.lie != nil && r.Method == http.MethodPost && c.lie(w, r, real) {
					return
				}
				real.ServeHTTP(w, r)
			}))
			defer front.Close()
			h := newHistory(front.URL, 5*time.Second)
			for _, p := range plans {
				h.run(t.Context(), p, 1)
			}
			for _, b := range invalidPosts(10, rand.New(rand.NewPCG(9, 10))) {
				h.post(t.Context(), "bad", b, 0)
			}
			if h.t.outcomes[model.Unfunded] == 0 {
				t.Errorf("no post was answered unfunded: %v", h.t.outcomes)
			}
			if failed := len(h.t.wrongFunds) > 0; failed != c.wantFail {
				t.Errorf("answers wrong about funds: %q; want some: %v", h.t.wrongFunds, c.wantFail)
			}
		})
	}
}

// Goal: a process counts as started once its current incarnation, not an
// earlier one in the same log, says its workers run; a dead one is not
// starting.
func TestStarting(t *testing.T) {
	path := t.TempDir() + "/w.log"
	earlier := "sluice: 2026/12/01 20:33:05.080596 running 2 workers\nsluice: 2026/12/01 20:33:06.000000 kill point: SIGKILL self after signed->broadcasting\n"
	if err := os.WriteFile(path, []byte(earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: "w", logPath: path, done: make(chan struct{}), logAt: int64(len(earlier))}
	if !p.starting() {
		t.Error("an incarnation that has logged nothing yet counts as started (the earlier one's line was read)")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("sluice: 2026/12/01 20:33:07.000000 store: postgresql (migrated)\nsluice: 2026/12/01 20:33:07.000100 running 2 workers\n")
	f.Close()
	if p.starting() {
		t.Error("an incarnation that logged that its workers run still counts as starting")
	}
	p.logAt = 1 << 20
	close(p.done)
	if p.starting() {
		t.Error("a dead process counts as starting")
	}
}

// Goal: the watchdog ends the run the first time a process exits by
// itself, naming it and quoting its log, and never for a process the run
// killed or one that died by its own kill point (the restarter's). Method:
// real child processes (sh) that exit each way, watched until the crashed
// one's turn comes.
func TestWatchEndsTheRunOnACrash(t *testing.T) {
	start := shChildren(t)
	alive := start("alive", "sleep 30")
	killed := start("killed", "sleep 30")
	killed.kill()
	byKillPoint := start("killpoint", "echo 'sluice: 2026/12/06 04:00:00.000000 "+killPointLine+" signed->broadcasting'; exit 137")
	waitExit := func(p *proc) {
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		<-done
	}
	waitExit(byKillPoint)

	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stop := make(chan struct{})
	watched := []*proc{alive, killed, byKillPoint}
	go watch(ctx, stop, 10*time.Millisecond, watched, cancel)
	time.Sleep(100 * time.Millisecond) // about ten looks at three processes that must not end the run
	if ctx.Err() != nil {
		t.Fatalf("the run ended without a crash: %v", context.Cause(ctx))
	}
	close(stop)

	crashed := start("worker2", "echo 'panic: sluice: in signing without a consistent envelope'; exit 2")
	ctx2, cancel2 := context.WithCancelCause(t.Context())
	defer cancel2(nil)
	go watch(ctx2, make(chan struct{}), 10*time.Millisecond, append(watched, crashed), cancel2)
	select {
	case <-ctx2.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a process that exited by itself did not end the run")
	}
	cause := context.Cause(ctx2).Error()
	for _, want := range []string{"worker2 exited by itself", "exit status 2", "without a consistent envelope"} {
		if !strings.Contains(cause, want) {
			t.Errorf("the run's cause %q does not say %q", cause, want)
		}
	}
}

// Goal: stopping a process the way a deploy does (SIGTERM) judges how it
// went: one that exits 0 stopped cleanly; one that dies of the signal, or
// outlives the grace and is killed, is named; one that had already exited
// is not judged. Method: real child processes (sh) that take SIGTERM each
// way.
func TestStopJudgesAGracefulExit(t *testing.T) {
	start := shChildren(t)
	graceful := start("graceful", "trap 'echo stopped; exit 0' TERM; while :; do sleep 0.05; done")
	dies := start("dies", "exec sleep 30")
	stubborn := start("stubborn", "trap '' TERM; while :; do sleep 0.05; done")
	gone := start("gone", "exit 0")
	time.Sleep(300 * time.Millisecond) // the traps are set; gone has exited
	if why := graceful.stop(5 * time.Second); why != "" {
		t.Errorf("a graceful exit judged %q", why)
	}
	if why := dies.stop(5 * time.Second); !strings.Contains(why, "dies ended with signal: terminated after SIGTERM") {
		t.Errorf("a death by SIGTERM judged %q", why)
	}
	if why := stubborn.stop(500 * time.Millisecond); !strings.Contains(why, "stubborn did not exit within 500ms of SIGTERM") {
		t.Errorf("a process that ignored SIGTERM judged %q", why)
	}
	if why := gone.stop(time.Second); why != "" {
		t.Errorf("a process that had exited before judged %q", why)
	}
}

// shChildren returns what starts an sh child running script for a test
// (skipped without sh); every child is killed when the test ends.
func shChildren(t *testing.T) func(name, script string) *proc {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ps := &procs{bin: "sh", dir: t.TempDir()}
	t.Cleanup(ps.killAll)
	return func(name, script string) *proc {
		p := ps.add(name, nil, "-c", script)
		if err := ps.start(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
