package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/cmd/internal/audit"
	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// config is livecheck's flags.
type config struct {
	databaseURL    string
	sluiceBin      string
	withdrawals    int
	invalid        int
	clients        int
	postSpan       time.Duration
	workerProcs    int
	workersPerProc int
	kills          int
	killEvery      time.Duration
	killPoint      float64 // workers' -kill-point: a self-SIGKILL after a landed write
	lease          time.Duration
	settle         time.Duration
	budget         time.Duration
	retries        int
	seed           uint64
	keepSchema     bool
	minWithdrawals int
	minKills       int
	minDupConflict int
	// restartPG is how many times PostgreSQL is restarted while the
	// clients post, with restartCmd (run by sh -c); crashPG how many
	// times it is crashed (a server process SIGKILLed).
	restartPG  int
	restartCmd string
	crashPG    int
	// dropEvery makes the node refuse every send of each dropEvery-th new
	// transaction (the node process's -mock-drop-every), which then dies
	// unsent: its withdrawal is rebuilt only on a proof of death.
	dropEvery int
	// shortEvery makes the node refuse the first sends of each
	// shortEvery-th new transaction for bandwidth (the node process's
	// -mock-short-every): its withdrawal parks, and the person on call
	// has parked rows in the queue to retry.
	shortEvery int
	// race builds cmd/sluice with the race detector: every process then
	// reports a data race it meets in its log, and any report fails the
	// run (the logs are read either way: a binary built without it never
	// writes one).
	race bool
}

func defaults() config {
	return config{
		withdrawals: 1000, invalid: 60, clients: 16, postSpan: 60 * time.Second,
		workerProcs: 3, workersPerProc: 2, kills: 12, killEvery: 4 * time.Second, killPoint: 0.01,
		lease: 5 * time.Second, settle: 3 * time.Minute, budget: 150 * time.Second, retries: 6,
		minWithdrawals: 1000, minKills: 10, minDupConflict: 100,
		restartCmd: defaultRestartCmd,
	}
}

func main() {
	cfg := defaults()
	fs := flag.NewFlagSet("livecheck", flag.ExitOnError)
	fs.StringVar(&cfg.sluiceBin, "sluice", "", "the sluice binary (default: build cmd/sluice with the go tool)")
	fs.IntVar(&cfg.withdrawals, "withdrawals", cfg.withdrawals, "withdrawals to post")
	fs.IntVar(&cfg.invalid, "invalid", cfg.invalid, "extra invalid posts")
	fs.IntVar(&cfg.clients, "clients", cfg.clients, "concurrent clients")
	fs.DurationVar(&cfg.postSpan, "post-span", cfg.postSpan, "spread the withdrawals' first posts over this long")
	fs.IntVar(&cfg.workerProcs, "worker-procs", cfg.workerProcs, "worker processes")
	fs.IntVar(&cfg.workersPerProc, "workers", cfg.workersPerProc, "workers per worker process")
	fs.IntVar(&cfg.kills, "kills", cfg.kills, "SIGKILLs of worker processes")
	fs.DurationVar(&cfg.killEvery, "kill-every", cfg.killEvery, "pause between kills")
	fs.Float64Var(&cfg.killPoint, "kill-point", cfg.killPoint, "chance that a worker process SIGKILLs itself right after a write it landed (kills in every state, between the write-ahead and the send too); restarted at once")
	fs.DurationVar(&cfg.lease, "lease", cfg.lease, "workers' lease (how long a killed worker's claims stay taken)")
	fs.DurationVar(&cfg.settle, "settle", cfg.settle, "after the clients and the killer are done, wait at most this long for every operation to be terminal")
	fs.DurationVar(&cfg.budget, "liveness-budget", cfg.budget, "every operation must be terminal within this long after the last kill or PostgreSQL restart (or its creation, if later)")
	// Retry k waits k x 300 ms: 6 retries span 6.3 s, longer than a
	// PostgreSQL restart under load keeps the store away (about 1 s
	// measured). A 5xx outside a restart fails the run however many
	// retries follow it, so more retries excuse nothing else.
	fs.IntVar(&cfg.retries, "retries", cfg.retries, "retries of a post whose answer failed (retry k waits k x 300 ms)")
	fs.Uint64Var(&cfg.seed, "seed", 0, "seed of the workload's amounts, addresses and kill choices (0: random)")
	fs.BoolVar(&cfg.keepSchema, "keep-schema", false, "keep the run's schema for inspection")
	fs.IntVar(&cfg.minWithdrawals, "min-withdrawals", cfg.minWithdrawals, "acceptance: at least this many withdrawals decided: stored and terminal, or (Live-Late's, funded while the clients post) refused for want of funds and never stored")
	fs.IntVar(&cfg.minKills, "min-kills", cfg.minKills, "acceptance: at least this many worker kills")
	fs.IntVar(&cfg.minDupConflict, "min-dup-conflict", cfg.minDupConflict, "acceptance: at least this many duplicate or conflicting posts answered")
	fs.IntVar(&cfg.restartPG, "restart-postgres", 0, "restart PostgreSQL this many times while the clients post and the workers work (with -restart-postgres-cmd); the services must live through it")
	fs.StringVar(&cfg.restartCmd, "restart-postgres-cmd", cfg.restartCmd, "the command (sh -c) that restarts PostgreSQL and returns once it accepts connections; the default restarts the cluster of .ci/postgres.sh named by SLUICE_PG_DIR")
	fs.IntVar(&cfg.dropEvery, "drop-every", 0, "the mock node refuses (SERVER_BUSY) every send of each K-th new transaction, which expires unsent; its withdrawal must be proven dead over HTTP and rebuilt (0: none). A death takes the expiration (60 s) and margin (30 s): give -liveness-budget and -settle room")
	fs.IntVar(&cfg.shortEvery, "short-every", 0, "the mock node refuses the first three sends of each K-th new transaction for bandwidth (BANDWITH_ERROR, not taken): its withdrawal parks with backoff (6 s, 12 s, 24 s), and the person on call retries parked rows from the queue; the run fails unless one such retry landed (0: none)")
	fs.IntVar(&cfg.crashPG, "crash-postgres", 0, "crash PostgreSQL this many times while the clients post and the workers work, taking turns with the restarts: a server process is SIGKILLed right after a commit lands, and the server resets (its WAL buffers lost) and recovers; nothing a commit acknowledged may be lost. Only the cluster of .ci/postgres.sh named by SLUICE_PG_DIR, on this machine")
	fs.BoolVar(&cfg.race, "race", false, "build cmd/sluice with the race detector (go build -race): a data race any process meets under the live load fails the run; not with -sluice, whose binary is built already")
	fs.Parse(os.Args[1:])
	cfg.databaseURL = os.Getenv("DATABASE_URL")
	if cfg.databaseURL == "" {
		fmt.Fprintln(os.Stderr, `livecheck: DATABASE_URL is unset (start a cluster with: eval "$(.ci/postgres.sh start)")`)
		os.Exit(2)
	}
	if cfg.race && cfg.sluiceBin != "" {
		// The binary given was built already, with or without the race
		// detector: a -race that cannot take effect must not pass for one
		// that did.
		fmt.Fprintln(os.Stderr, "livecheck: -race builds cmd/sluice with the race detector; with -sluice, build the binary with go build -race yourself and drop -race")
		os.Exit(2)
	}
	if err := cfg.checkRestart(); err != nil {
		fmt.Fprintln(os.Stderr, "livecheck:", err)
		os.Exit(2)
	}
	if cfg.seed == 0 {
		cfg.seed = mrand.Uint64()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "livecheck:", err)
		os.Exit(2)
	}
	if fails := rep.failures(cfg); len(fails) > 0 {
		for _, f := range fails {
			fmt.Println("FAIL:", f)
		}
		os.Exit(1)
	}
	fmt.Println("PASS")
}

// checkRestart refuses a restart that cannot work before anything starts:
// the default command restarts only a cluster .ci/postgres.sh started, and
// never a database it does not own.
func (c config) checkRestart() error {
	switch {
	case c.restartPG < 0:
		return fmt.Errorf("-restart-postgres %d: want 0 or more", c.restartPG)
	case c.crashPG < 0:
		return fmt.Errorf("-crash-postgres %d: want 0 or more", c.crashPG)
	case c.crashPG > 0 && os.Getenv("SLUICE_PG_DIR") == "":
		// The crash kills a server process: only of a cluster that is
		// ours to crash (crashTarget checks the server is that one).
		return fmt.Errorf("-crash-postgres %d crashes the cluster of .ci/postgres.sh, and SLUICE_PG_DIR (which its start exports) is unset; start one with: eval \"$(.ci/postgres.sh start)\"", c.crashPG)
	case c.restartPG == 0:
		return nil
	case c.restartCmd == defaultRestartCmd && os.Getenv("SLUICE_PG_DIR") == "":
		return fmt.Errorf("-restart-postgres %d restarts the cluster of .ci/postgres.sh, and SLUICE_PG_DIR (which its start exports) is unset; start one with: eval \"$(.ci/postgres.sh start)\", or name another command with -restart-postgres-cmd", c.restartPG)
	case c.restartCmd == defaultRestartCmd:
		if _, err := os.Stat(".ci/postgres.sh"); err != nil {
			return fmt.Errorf("-restart-postgres: %s: run livecheck from the repository's root (%w)", defaultRestartCmd, err)
		}
	}
	return nil
}

// report is what a run did and found.
type report struct {
	// onCall is the person on call (oncall.go); onCallWrong its answers
	// judged against the final rows and log.
	onCall      *onCall
	onCallWrong []string
	withdrawals int // rows stored
	terminal    int
	byState     map[sluice.State]int
	tally       *tally
	kills       int
	restarts    int
	violations  []model.Violation
	perInv      map[string]int
	blocks      int
	broadcasts  int
	inclusions  int
	historyOps  int
	handedOver  int // operations whose log names workers of more than one process incarnation
	incarnation int // worker process incarnations that wrote to the log
	selfKills   int // kill points that fired (and were restarted)
	takeovers   map[sluice.State]int
	pgRestarts  int             // PostgreSQL restarts done
	pgCrashes   int             // PostgreSQL crashes done
	dropped     int             // transactions the node refused at every send (-drop-every)
	shortened   int             // transactions the node refused for bandwidth (-short-every)
	proven      int             // events filed with a proof of death (rebuilds, cancels)
	durability  []outageCommits // each outage's durability probe
	outages     []time.Duration // each restart or crash, from its command to the first query answered
	tickErrors  int             // worker ticks that failed (logged by the workers), and were retried
	races       []string        // the race detector's reports in the processes' logs (-race), one line each
	leaks       []string        // a secret of the run found in a process's log, one line each
	storms      []string        // a worker process that logged failed ticks without backing off, one line each
	unclean     []string        // a process the end of the run stopped with SIGTERM that did not exit 0 in time, one line each
	// audit is what sluice audit's checks found in the same database and
	// chain: the live invariants and the reconciliation of every solid
	// block. Nil in a report no audit was run for.
	audit *audit.Report
	// strays are the transactions the live check sent from the hot wallet
	// outside sluice, which the audit must report (none: nothing planted).
	strays strays
	// metrics is the scrape of the API process's /metrics kept during the
	// run (see metricsWatch.watch); metricsErr, why there is none.
	metrics    *scrape
	metricsErr string
	elapsed    time.Duration
	// deposits is the depositor's record (nil in a report without one);
	// lateNeverStored counts late's withdrawals refused for want of funds
	// and never stored, which the acceptance counts as decided.
	deposits        *depositor
	lateNeverStored int
}

// answerClasses lists the answer counts in class order.
func answerClasses(m map[string]int) string {
	classes := make([]string, 0, len(m))
	for c := range m {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	var b strings.Builder
	for _, c := range classes {
		fmt.Fprintf(&b, " %s %d", c, m[c])
	}
	return b.String()
}

// dupConflictAnswered counts the answered posts that found the id taken:
// replays of the same instruction and refused conflicts.
func (r *report) dupConflictAnswered() int {
	return r.tally.outcomes[model.Replayed] + r.tally.outcomes[model.Conflict]
}

// failures lists every reason the run fails the acceptance: violations, and
// counts below their bounds.
func (r *report) failures(cfg config) []string {
	var out []string
	for _, v := range r.violations {
		out = append(out, "violation: "+v.String())
	}
	for _, race := range r.races {
		out = append(out, "data race: "+race)
	}
	for _, leak := range r.leaks {
		out = append(out, "secret in a log: "+leak)
	}
	for _, s := range r.storms {
		out = append(out, "no backoff: "+s)
	}
	for _, s := range r.unclean {
		out = append(out, "stop: "+s)
	}
	if r.audit != nil {
		rest, missed := r.strays.sortFindings(r.audit)
		for _, v := range rest {
			out = append(out, "audit: violation: "+v.String())
		}
		out = append(out, missed...)
	}
	if r.withdrawals+r.lateNeverStored < cfg.minWithdrawals {
		out = append(out, fmt.Sprintf("%d withdrawals stored and %d of %s's refused for want of funds, never stored: want at least %d decided", r.withdrawals, r.lateNeverStored, late, cfg.minWithdrawals))
	}
	if r.terminal != r.withdrawals {
		out = append(out, fmt.Sprintf("%d of %d withdrawals terminal, want all", r.terminal, r.withdrawals))
	}
	if r.kills < cfg.minKills {
		out = append(out, fmt.Sprintf("%d worker kills, want at least %d", r.kills, cfg.minKills))
	}
	if n := r.dupConflictAnswered(); n < cfg.minDupConflict {
		out = append(out, fmt.Sprintf("%d duplicate or conflicting posts answered, want at least %d", n, cfg.minDupConflict))
	}
	if r.pgRestarts < cfg.restartPG {
		out = append(out, fmt.Sprintf("%d PostgreSQL restarts, want %d", r.pgRestarts, cfg.restartPG))
	}
	if cfg.shortEvery > 0 && (r.shortened == 0 || r.onCall == nil || r.onCall.parkedRetried() == 0) {
		retried := 0
		if r.onCall != nil {
			retried = r.onCall.parkedRetried()
		}
		out = append(out, fmt.Sprintf("-short-every %d: the node refused %d transactions for bandwidth, and the person on call landed %d retries of parked rows: the world meant to park rows for the operator's queue did not happen", cfg.shortEvery, r.shortened, retried))
	}
	if cfg.dropEvery > 0 && (r.dropped == 0 || r.proven == 0) {
		out = append(out, fmt.Sprintf("-drop-every %d: the node refused %d transactions at every send, and %d events filed a proof of death: the world meant to make transactions die did not happen", cfg.dropEvery, r.dropped, r.proven))
	}
	if r.pgCrashes < cfg.crashPG {
		out = append(out, fmt.Sprintf("%d PostgreSQL crashes, want %d", r.pgCrashes, cfg.crashPG))
	}
	for i, d := range r.durability {
		if len(d.lost) > 0 {
			out = append(out, fmt.Sprintf("PostgreSQL %s (outage %d): %d of the %d events seen committed just before it are gone after it (seqs %v): the store lost commits it had acknowledged",
				d.kind(), i+1, len(d.lost), d.seen, d.lost[:min(len(d.lost), 10)]))
		}
	}
	if cfg.killPoint > 0 && r.takeovers[sluice.Broadcasting] == 0 {
		out = append(out, "no operation was taken over in broadcasting: no kill landed between a write-ahead and its send")
	}
	// The invariants count violations, not answers: a run in which intake
	// failed valid requests would pass them. Intake must answer every one.
	if n := len(r.tally.validFailed); n > 0 {
		out = append(out, fmt.Sprintf("%d valid requests got a 5xx or no answer (first: %s)", n, r.tally.validFailed[0]))
	}
	if n := r.tally.validUnanswered; n > 0 {
		out = append(out, fmt.Sprintf("%d valid posts were never answered, retries included (%s)", n, strings.Join(r.tally.unanswered[:min(len(r.tally.unanswered), 3)], "; ")))
	}
	if n := len(r.tally.wrongFunds); n > 0 {
		out = append(out, fmt.Sprintf("%d answers wrong about funds (first: %s)", n, r.tally.wrongFunds[0]))
	}
	if r.deposits != nil {
		out = append(out, r.deposits.problems(r.tally)...)
	}
	out = append(out, r.onCallWrong...)
	if r.onCall != nil && r.onCall.landed() == 0 {
		// Counted like the kills and the proofs of death: a run in
		// which the person on call never acted judged nothing of the
		// operator API on the database's clock.
		out = append(out, "the person on call landed no action (no cancel, no retry): "+r.onCall.summary())
	}
	switch {
	case r.metricsErr != "":
		out = append(out, "metrics: "+r.metricsErr)
	case r.metrics == nil:
		out = append(out, "metrics: the API process's /metrics was never scraped")
	default:
		for _, p := range r.metrics.problems() {
			out = append(out, "metrics: "+p)
		}
		if r.deposits != nil {
			// The depositor's credits by a malformed operator name were
			// answered 422: invalid input, which a dashboard must not
			// read as the store refusing, or as an outage.
			if r.metrics.actions == nil {
				out = append(out, "metrics: no scrape at the end got through to read "+metricActions)
			} else if got, want := r.metrics.actions["credit/invalid"], float64(r.deposits.invalid); got != want {
				out = append(out, fmt.Sprintf("metrics: %s{action=\"credit\",outcome=\"invalid\"} is %v, but %v credits by a malformed operator name were answered 422", metricActions, got, want))
			}
		}
		if r.onCall != nil && r.metrics.actions != nil {
			out = append(out, r.onCall.metricProblems(r.metrics.actions)...)
		}
	}
	return out
}

func (r *report) print(w io.Writer) {
	t := r.tally
	fmt.Fprintf(w, "livecheck: %d withdrawals stored, %d terminal (confirmed %d, failed %d, rejected %d); %d of %s's refused for want of funds, never stored\n",
		r.withdrawals, r.terminal, r.byState[sluice.Confirmed], r.byState[sluice.Failed], r.byState[sluice.Rejected], r.lateNeverStored, late)
	fmt.Fprintf(w, "livecheck: posts answered: created %d, replayed %d, conflict %d, invalid %d, unfunded %d, failed %d; retries %d, transport errors %d, reads %d\n",
		t.outcomes[model.Created], t.outcomes[model.Replayed], t.outcomes[model.Conflict], t.outcomes[model.Invalid], t.outcomes[model.Unfunded], t.outcomes[model.Failed],
		t.retries, t.transportErrs, t.reads)
	fmt.Fprintf(w, "livecheck: answers by class:%s; valid requests failed %d, valid posts never answered %d\n",
		answerClasses(t.answers), len(t.validFailed), t.validUnanswered)
	fmt.Fprintf(w, "livecheck: duplicate posts sent %d, conflicting posts sent %d, invalid posts sent %d, posts for an unfunded customer sent %d; duplicate or conflicting posts answered %d; answers wrong about funds %d\n",
		t.dupSent, t.conflictSent, t.invalidSent, t.unfundedSent, r.dupConflictAnswered(), len(t.wrongFunds))
	if r.deposits != nil {
		fmt.Fprintf(w, "livecheck: %s\n", r.deposits.summary(t))
	}
	if r.onCall != nil {
		fmt.Fprintf(w, "livecheck: %s\n", r.onCall.summary())
	}
	for i, p := range r.onCallWrong {
		if i == 5 {
			fmt.Fprintf(w, "livecheck: OPERATOR ... and %d more\n", len(r.onCallWrong)-i)
			break
		}
		fmt.Fprintf(w, "livecheck: OPERATOR %s\n", p)
	}
	fmt.Fprintf(w, "livecheck: worker processes killed with SIGKILL %d, restarted %d; %d process incarnations wrote events; %d operations passed between incarnations\n",
		r.kills, r.restarts, r.incarnation, r.handedOver)
	fmt.Fprintf(w, "livecheck: kill points fired %d; takeovers by the state the new incarnation found:%s\n", r.selfKills, stateCounts(r.takeovers))
	if r.pgRestarts > 0 || r.pgCrashes > 0 || len(t.duringOutage) > 0 {
		outs := make([]string, len(r.outages))
		for i, d := range r.outages {
			outs[i] = d.Round(time.Millisecond).String()
		}
		fmt.Fprintf(w, "livecheck: PostgreSQL restarted %d times and crashed %d times under load (down, from the command to the first query answered: %s); answers to requests overlapping an outage (+%s grace) by class:%s\n",
			r.pgRestarts, r.pgCrashes, strings.Join(outs, ", "), outageGrace, answerClasses(t.duringOutage))
		fmt.Fprintf(w, "livecheck: 5xx answers excused by a restart %d; valid posts answered after a 5xx during a restart %d; worker ticks that failed and were retried %d\n",
			t.excused, t.recovered, r.tickErrors)
		probes := make([]string, len(r.durability))
		for i, d := range r.durability {
			probes[i] = fmt.Sprintf("%s %d seen, %d lost", d.kind(), d.seen, len(d.lost))
		}
		fmt.Fprintf(w, "livecheck: durability: events seen committed in the moments before each outage, and lost after it: %s\n", strings.Join(probes, "; "))
	}
	fmt.Fprintf(w, "livecheck: chain: %d blocks, %d broadcasts, %d inclusions; porcupine history of %d operations\n",
		r.blocks, r.broadcasts, r.inclusions, r.historyOps)
	if r.dropped > 0 || r.proven > 0 {
		fmt.Fprintf(w, "livecheck: transactions the node refused at every send %d; events filed with a proof of death %d\n", r.dropped, r.proven)
	}
	if r.shortened > 0 {
		fmt.Fprintf(w, "livecheck: transactions the node refused for bandwidth at their first sends %d\n", r.shortened)
	}
	for _, inv := range model.InvariantNames() {
		fmt.Fprintf(w, "livecheck: invariant %-20s %d violations\n", inv, r.perInv[inv])
	}
	for _, v := range r.violations {
		fmt.Fprintf(w, "livecheck: VIOLATION %s\n", v)
	}
	switch {
	case r.metrics != nil:
		fmt.Fprintf(w, "livecheck: metrics: %s; /metrics without a token %d, with a wrong one %d\n", r.metrics.summary(), r.metrics.noToken, r.metrics.wrongToken)
	case r.metricsErr != "":
		fmt.Fprintf(w, "livecheck: metrics: no scrape: %s\n", r.metricsErr)
	}
	if r.audit != nil {
		r.audit.Write(w, "livecheck: audit: ")
		if len(r.strays) > 0 {
			rest, missed := r.strays.sortFindings(r.audit)
			fmt.Fprintf(w, "livecheck: audit: of its %d findings, %d are of the %d strays the live check planted (expected), %d are not; %d expected findings missing\n",
				len(r.audit.Violations), len(r.audit.Violations)-len(rest), len(r.strays), len(rest), len(missed))
		}
	}
	fmt.Fprintf(w, "livecheck: elapsed %s\n", r.elapsed.Round(time.Second))
}

// run is one live check. An error means it could not be carried out; the
// report says what it found.
func run(ctx context.Context, cfg config, out io.Writer) (rep *report, err error) {
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "livecheck: %s "+format+"\n", append([]any{time.Since(began).Round(time.Millisecond)}, args...)...)
	}
	rng := mrand.New(mrand.NewPCG(cfg.seed, 0x11fe))
	logf("seed %d: %d withdrawals, %d clients over %s, %d worker processes x %d workers, %d kills every %s, %d PostgreSQL restarts, %d crashes",
		cfg.seed, cfg.withdrawals, cfg.clients, cfg.postSpan, cfg.workerProcs, cfg.workersPerProc, cfg.kills, cfg.killEvery, cfg.restartPG, cfg.crashPG)

	dir, err := os.MkdirTemp("", "livecheck-")
	if err != nil {
		return nil, err
	}
	bin := cfg.sluiceBin
	if bin == "" {
		if bin, err = buildSluice(ctx, dir, cfg.race); err != nil {
			return nil, err
		}
	}

	// A fresh schema of the run's own.
	var sb [6]byte
	if _, err := rand.Read(sb[:]); err != nil {
		return nil, err
	}
	schema := "livecheck_" + hex.EncodeToString(sb[:])
	// One connection for each of the two statements: a connection held
	// across the run would not outlive a PostgreSQL restart.
	if err := adminExec(ctx, cfg.databaseURL, `CREATE SCHEMA `+schema); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer func() {
		if cfg.keepSchema {
			logf("schema %s kept; logs in %s", schema, dir)
			return
		}
		if err := adminExec(context.Background(), cfg.databaseURL, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			logf("dropping schema %s: %v", schema, err)
		}
	}()
	u, err := url.Parse(cfg.databaseURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dbURL := u.String()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if cfg.crashPG > 0 {
		if err := crashable(ctx, dbURL, os.Getenv("SLUICE_PG_DIR")); err != nil {
			return nil, fmt.Errorf("-crash-postgres: %w", err)
		}
	}

	// The processes. Every one dies on the way out, whatever happens.
	ps := &procs{bin: bin, dir: dir}
	defer ps.killAll()
	defer func() {
		// Whatever fails the run keeps its evidence: a violation, and a
		// count or an answer below the acceptance too.
		if err != nil || (rep != nil && len(rep.failures(cfg)) > 0) {
			fmt.Fprintf(out, "livecheck: process logs in %s\n", dir)
			cfg.keepSchema = true
		} else {
			os.RemoveAll(dir)
		}
	}()
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	nodeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	opAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var tb [32]byte
	if _, err := rand.Read(tb[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tb[:])
	env := []string{"DATABASE_URL=" + dbURL}
	// The API process funds the customers at its start; a credit is
	// idempotent by its ref, so a restart of it would change nothing.
	//
	// It also serves the operator API and /metrics, its token in its
	// environment (never an argument, which the process list shows), and
	// runs one worker of its own. A process's latency histogram counts only
	// the confirmations its own workers land, and the worker processes'
	// metrics die with each SIGKILL; the API process is never killed, so
	// its one worker fills the histogram the scrape reads. The gauges are
	// the store's, the same from any process.
	fund, credits := fundFlags(cfg.withdrawals)
	front := ps.add("node", append(slices.Clone(env), operatorTokenEnv+"="+token), append([]string{"serve", "-store", "postgres",
		"-workers", "1", "-lease", cfg.lease.String(), "-idle-sleep", "100ms",
		"-addr", apiAddr, "-node-addr", nodeAddr, "-operator-addr", opAddr, "-solid-lag", "1",
		"-mock-drop-every", strconv.Itoa(cfg.dropEvery), "-mock-short-every", strconv.Itoa(cfg.shortEvery)}, fund...)...)
	if err := ps.start(front); err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, front, "http://"+apiAddr+"/healthz", 30*time.Second); err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, front, "http://"+nodeAddr+nodehttp.PathHealth, 10*time.Second); err != nil {
		return nil, err
	}
	var workers []*proc
	for i := range cfg.workerProcs {
		p := ps.add(fmt.Sprintf("worker%d", i+1), env, "serve", "-store", "postgres", "-api=false",
			"-workers", fmt.Sprint(cfg.workersPerProc), "-node-url", "http://"+nodeAddr,
			"-lease", cfg.lease.String(), "-idle-sleep", "100ms", "-kill-point", fmt.Sprint(cfg.killPoint))
		if err := ps.start(p); err != nil {
			return nil, err
		}
		workers = append(workers, p)
	}
	logf("started: api http://%s (with one worker), node http://%s, operator API and /metrics http://%s, %d worker processes; logs in %s",
		apiAddr, nodeAddr, opAddr, len(workers), dir)

	// A second system pays from the hot wallet once, outside sluice: the
	// audit at the end must find it (stray.go).
	nc, err := nodehttp.NewClient("http://"+nodeAddr, nodehttp.Options{Caller: "livecheck-stray", Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	planted, err := plantStrays(ctx, nc, time.Now)
	if err != nil {
		return nil, err
	}
	logf("planted two transactions from the hot wallet outside sluice, for the audit to find: %d units to %s, txid %s; %d units (more than the wallet holds: it reverts), txid %s",
		strayAmount, strayTo, planted[0].landed, uint64(revertAmount), planted[1].landed)

	// The watchdog: a process that exits by itself (a panic, a refused
	// start) ends the run at once, naming it and its log's tail. Without
	// it the clients, the depositor and the person on call would go on
	// against a dead service, and a crash loop read as a hang. It stops
	// before the workers are stopped on purpose.
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	failed := func(err error) error {
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			return cause
		}
		return err
	}
	stopWatch := make(chan struct{})
	var stopWatchOnce sync.Once
	stopWatching := func() { stopWatchOnce.Do(func() { close(stopWatch) }) }
	defer stopWatching()
	go watch(ctx, stopWatch, 200*time.Millisecond, append([]*proc{front}, workers...), cancelRun)

	// The clients.
	h := newHistory("http://"+apiAddr, 15*time.Second)

	// The scrape of /metrics, during the run: kept once the API process's
	// worker has confirmed a few withdrawals (a share of them: it is one
	// worker of 1 + K x N), else at the end of the settling.
	mw := &metricsWatch{url: "http://" + opAddr + "/metrics", token: token, hc: &http.Client{Timeout: 10 * time.Second},
		count: func(ctx context.Context) (int, int, error) { return rowCounts(ctx, pool) }, outages: h.outages, began: began,
		minObs: uint64(max(1, min(10, cfg.withdrawals/(10*(1+cfg.workerProcs*cfg.workersPerProc)))))}
	metricsFinal := make(chan struct{})
	var finalOnce sync.Once
	endScrape := func() { finalOnce.Do(func() { close(metricsFinal) }) }
	defer endScrape()
	type scraped struct {
		s   *scrape
		err error
	}
	metricsDone := make(chan scraped, 1)
	go func() {
		s, err := mw.watch(ctx, metricsFinal)
		metricsDone <- scraped{s, err}
	}()
	plans := newPlans(cfg.withdrawals, rng)
	bad := invalidPosts(cfg.invalid, rng)
	// The depositor: late's money arrives while the clients post.
	dep := &depositor{url: "http://" + opAddr, token: token, hc: &http.Client{Timeout: 10 * time.Second}, h: h, newest: newestEvent(pool)}
	var each money.Amount
	dep.latePlans, each = lateAmounts(plans)
	depositsDone := make(chan struct{})
	go func() {
		defer close(depositsDone)
		dep.run(ctx, cfg.postSpan, each)
	}()
	// The person on call acts through the operator API while the clients
	// post (oncall.go).
	oc := &onCall{url: "http://" + opAddr, token: token, hc: &http.Client{Timeout: 10 * time.Second},
		rng: mrand.New(mrand.NewPCG(cfg.seed, 0x0ca11)), rows: rowsIn(pool), backoff: 300 * time.Millisecond, outages: h.outages}
	onCallDone := make(chan struct{})
	go func() {
		defer close(onCallDone)
		oc.run(ctx, cfg.postSpan, onCallRound(cfg.postSpan))
	}()
	ids := make([]string, len(plans))
	for i, p := range plans {
		ids[i] = p.id
	}
	work := make(chan func(), cfg.clients)
	var clientsWG sync.WaitGroup
	for range cfg.clients {
		clientsWG.Go(func() {
			for f := range work {
				f()
			}
		})
	}
	postsDone := make(chan struct{})
	go func() {
		defer close(postsDone)
		defer clientsWG.Wait()
		defer close(work)
		gap := cfg.postSpan / time.Duration(max(1, len(plans)))
		tick := time.NewTicker(max(gap, time.Millisecond))
		defer tick.Stop()
		for i, p := range plans {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			work <- func() { h.run(ctx, p, cfg.retries) }
			if len(bad) > 0 && i%max(1, len(plans)/len(bad)) == 0 && i/max(1, len(plans)/len(bad)) < len(bad) {
				b := bad[i/max(1, len(plans)/len(bad))]
				work <- func() {
					h.count(func(t *tally) {
						if b.unfunded {
							t.unfundedSent++
						} else {
							t.invalidSent++
						}
					})
					// Retried as any post: the valid ones among them (for
					// a customer nobody funded) must get their 402 even
					// when their first attempt meets an outage.
					h.post(ctx, fmt.Sprintf("bad%d", i), b, cfg.retries)
				}
			}
		}
	}()
	// A reader that looks at ids at random while they are being posted,
	// some before they exist.
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r := mrand.New(mrand.NewPCG(cfg.seed, 0x4ead))
		for k := 0; ; k++ {
			select {
			case <-postsDone:
				return
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			h.get(ctx, fmt.Sprintf("reader.%d", k), ids[r.IntN(len(ids))])
		}
	}()

	// The restarter: a worker process whose kill point fired comes back at
	// once. It and the killer start processes under one lock.
	var supervise sync.Mutex
	var selfKills atomic.Int64
	stopRestarter := make(chan struct{})
	var stopOnce sync.Once
	stopRestarting := func() { stopOnce.Do(func() { close(stopRestarter) }) }
	defer stopRestarting()
	restarterDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stopRestarter:
				restarterDone <- nil
				return
			case <-time.After(50 * time.Millisecond):
			}
			supervise.Lock()
			for _, w := range workers {
				if w.diedAtKillPoint() {
					if err := ps.start(w); err != nil {
						supervise.Unlock()
						restarterDone <- err
						return
					}
					selfKills.Add(1)
				}
			}
			supervise.Unlock()
		}
	}()

	// The PostgreSQL restarter: the database goes away and comes back while
	// the clients post, spread evenly over the posting, restarts and
	// crashes taking turns. It holds the processes' lock, so that no
	// process starts (or is killed) during the outage, and begins only when
	// none is in its startup.
	var pgRestarts, pgCrashes int
	var durability []outageCommits
	restartsDone := make(chan error, 1)
	plan := outagePlan(cfg.restartPG, cfg.crashPG)
	go func() {
		postStart := time.Now()
		for i, crash := range plan {
			at := postStart.Add(cfg.postSpan * time.Duration(i+1) / time.Duration(len(plan)+1))
			select {
			case <-ctx.Done():
				restartsDone <- ctx.Err()
				return
			case <-time.After(time.Until(at)):
			}
			supervise.Lock()
			err := waitStarted(ctx, append([]*proc{front}, workers...), 30*time.Second)
			var up time.Time
			if err == nil {
				var probe outageCommits
				if crash {
					up, probe, err = crashPostgres(ctx, dbURL, h.outages)
				} else {
					up, probe, err = restartWatched(ctx, cfg.restartCmd, dbURL, h.outages)
				}
				durability = append(durability, probe)
			}
			supervise.Unlock()
			if err != nil {
				restartsDone <- err
				return
			}
			what := "restart"
			if crash {
				pgCrashes++
				what = "crash"
			} else {
				pgRestarts++
			}
			d := h.outages.durations()
			logf("PostgreSQL %s (%d of %d outages): the database answered again after %s, at %s", what, i+1, len(plan), d[len(d)-1].Round(time.Millisecond), up.Format("15:04:05.000"))
		}
		restartsDone <- nil
	}()

	// The killer.
	var kills, restarts int
	var healed time.Time
	killerDone := make(chan error, 1)
	go func() {
		r := mrand.New(mrand.NewPCG(cfg.seed, 0x6111))
		for kills < cfg.kills {
			select {
			case <-ctx.Done():
				killerDone <- ctx.Err()
				return
			case <-time.After(cfg.killEvery):
			}
			for _, w := range workers {
				if err := w.unexpected(); err != nil {
					killerDone <- err
					return
				}
			}
			w := workers[r.IntN(len(workers))]
			supervise.Lock()
			w.kill()
			kills++
			time.Sleep(time.Duration(100+r.IntN(700)) * time.Millisecond)
			err := ps.start(w)
			supervise.Unlock()
			if err != nil {
				killerDone <- err
				return
			}
			restarts++
			healed = time.Now()
			logf("kill %d: SIGKILL %s, restarted", kills, w.name)
		}
		killerDone <- nil
	}()

	<-postsDone
	<-readerDone
	<-depositsDone
	<-onCallDone
	if err := <-killerDone; err != nil {
		return nil, failed(err)
	}
	if err := <-restartsDone; err != nil {
		return nil, failed(err)
	}
	// A restart is a fault like a kill: liveness is judged from the last.
	if d := h.outages.lastUp(); d.After(healed) {
		healed = d
	}
	if ctx.Err() != nil {
		return nil, failed(ctx.Err())
	}
	logf("clients done (%d posts recorded), %d kills done; waiting for every operation to be terminal", len(h.intake), kills)

	// Settle: every operation terminal, bounded.
	deadline := time.Now().Add(cfg.settle)
	for {
		open, total, err := openOps(ctx, pool)
		if err != nil {
			return nil, failed(err)
		}
		for _, w := range append([]*proc{front}, workers...) {
			if err := w.unexpected(); err != nil {
				return nil, err
			}
		}
		if open == 0 {
			logf("all %d operations terminal", total)
			break
		}
		if time.Now().After(deadline) {
			logf("%d of %d operations still open after %s: the liveness invariant will name them", open, total, cfg.settle)
			break
		}
		select {
		case <-ctx.Done():
			return nil, failed(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	stopWatching()
	end := time.Now()
	endScrape()
	got := <-metricsDone
	if got.s != nil {
		logf("metrics scraped at %s: %d confirmations in the API process's histogram", got.s.at.Round(time.Second), got.s.count)
		// The depositor is done: its actions are all counted by now.
		got.s.actions = mw.actionsAtEnd(ctx)
	}

	// Stop the workers, so that the database and the chain hold still, then
	// read both. The API process's one worker keeps running (the node lives
	// in that process): with every operation terminal it has nothing to
	// claim; with some still open the run fails anyway (terminal !=
	// withdrawals), and the audit reads a database in use safely.
	stopRestarting()
	if err := <-restarterDone; err != nil {
		return nil, err
	}
	var unclean []string // stops by SIGTERM that were not graceful
	for _, w := range workers {
		if why := w.stop(15 * time.Second); why != "" {
			unclean = append(unclean, why)
		}
	}
	if err := planted.awaitSolid(ctx, nc, 30*time.Second); err != nil {
		return nil, err
	}
	truth, err := nc.Truth(ctx)
	if err != nil {
		return nil, err
	}
	truth = planted.without(truth)
	ops, events, err := audit.ReadStore(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	ledger, err := audit.ReadLedger(ctx, pool)
	if err != nil {
		return nil, err
	}
	// sluice audit's own checks, on the same database and chain, while the
	// node still serves: they read both again their own way (rows read as
	// of one moment each, the chain after them) and reconcile every solid
	// block through the node's lookups.
	auditRep, err := audit.Run(ctx, pool, nc, audit.Config{Rescan: 0})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if why := front.stop(15 * time.Second); why != "" {
		unclean = append(unclean, why)
	}

	snap := snapshot(ops, events, ledger, truth, h, credits, dep.made, healed, end, cfg.budget)
	rep = &report{tally: &h.t, deposits: dep, onCall: oc, onCallWrong: oc.judge(ops, events), kills: kills, restarts: restarts, byState: map[sluice.State]int{}, perInv: map[string]int{},
		blocks: len(truth.Blocks), broadcasts: len(truth.Wire), inclusions: len(truth.Inclusions),
		pgRestarts: pgRestarts, pgCrashes: pgCrashes, dropped: refusedTxids(truth.Wire, mocknode.Busy), shortened: refusedTxids(truth.Wire, mocknode.BandwidthExhausted), proven: provenDead(events), durability: durability, outages: h.outages.durations(), tickErrors: tickErrors(workers), audit: auditRep, strays: planted,
		metrics: got.s}
	if got.err != nil {
		rep.metricsErr = got.err.Error()
	}
	rep.races = dataRaces(ps.list())
	// The operator token is the one secret every process of the run is
	// handed that its logs must never show: whoever reads the logs (a
	// ticket, a log shipper) could then credit, cancel and resolve.
	rep.leaks = secretsInLogs(ps.list(), map[string]string{"the operator token": token})
	rep.storms = tickStorms(workers, time.Since(began))
	rep.unclean = unclean
	for _, op := range ops {
		rep.withdrawals++
		rep.byState[op.State]++
		if op.State.Terminal() {
			rep.terminal++
		}
	}
	rep.incarnation, rep.handedOver = incarnations(events)
	rep.lateNeverStored = lateNeverStored(plans, ops, h.intake)
	rep.selfKills, rep.takeovers = int(selfKills.Load()), takeoversByState(events)
	var linRep *model.LinearizabilityReport
	rep.violations, linRep = model.CheckAll(snap, time.Minute)
	rep.historyOps = linRep.Operations
	linBroken := false
	for _, v := range rep.violations {
		rep.perInv[v.Invariant]++
		linBroken = linBroken || v.Invariant == model.LinearizableIntake
	}
	rep.elapsed = time.Since(began)
	rep.print(out)
	if linBroken {
		path := dir + "/porcupine.html"
		if f, ferr := os.Create(path); ferr == nil {
			if linRep.Visualize(f) == nil {
				fmt.Fprintf(out, "livecheck: porcupine visualization in %s\n", path)
			}
			f.Close()
		}
	}
	return rep, nil
}

// takeoversByState counts, per state, the times an operation passed from
// one worker process incarnation to another: the state the new incarnation
// found the operation in (the From of its first event).
func takeoversByState(events []sluice.Event) map[sluice.State]int {
	last := map[sluice.OperationID]string{}
	out := map[sluice.State]int{}
	for _, e := range events {
		if !byWorker(e) {
			continue
		}
		inc := incarnationOf(e.Worker)
		if prev, ok := last[e.OperationID]; ok && prev != inc {
			out[e.From]++
		}
		last[e.OperationID] = inc
	}
	return out
}

// byWorker: e was written by a worker process, not by intake (no worker)
// or an operator (the person on call, whose retry of a row in broadcasting
// is no worker's takeover of it: counted as one, it would meet the demand
// for a kill between a write-ahead and its send without any kill).
func byWorker(e sluice.Event) bool {
	return e.Worker != "" && !strings.HasPrefix(string(e.Worker), sluice.OperatorPrefix)
}

// stateCounts lists counts in the state machine's order.
func stateCounts(m map[sluice.State]int) string {
	var b strings.Builder
	for _, s := range sluice.States {
		if m[s] > 0 {
			fmt.Fprintf(&b, " %s %d", s, m[s])
		}
	}
	if b.Len() == 0 {
		return " none"
	}
	return b.String()
}

// incarnationOf is the process incarnation of a worker id
// ("pid-startnanos-wN").
func incarnationOf(w sluice.WorkerID) string {
	inc := string(w)
	if i := strings.LastIndex(inc, "-w"); i >= 0 {
		inc = inc[:i]
	}
	return inc
}

// incarnations counts the worker process incarnations in the log (a worker
// id is "pid-startnanos-wN") and the operations that more than one of them
// worked on.
func incarnations(events []sluice.Event) (procs, handed int) {
	all := map[string]bool{}
	per := map[sluice.OperationID]map[string]bool{}
	for _, e := range events {
		if !byWorker(e) {
			continue
		}
		inc := incarnationOf(e.Worker)
		all[inc] = true
		if per[e.OperationID] == nil {
			per[e.OperationID] = map[string]bool{}
		}
		per[e.OperationID][inc] = true
	}
	for _, m := range per {
		if len(m) > 1 {
			handed++
		}
	}
	return len(all), handed
}

// adminExec runs one statement on a connection of its own.
func adminExec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
