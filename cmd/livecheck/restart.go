package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL restarts and crashes under load: the database goes away (every
// session terminated, open transactions rolled back, a commit in flight
// perhaps answered to nobody; in a crash, with no checkpoint and the WAL
// buffers lost, so that a commit answered before its WAL was written is
// gone) and comes back, while clients post and workers work.
// The sluice processes must live through it on their pools' reconnects;
// clients may get a 5xx while it lasts, which their retries must then turn
// into an answer.

// defaultRestartCmd restarts the cluster .ci/postgres.sh started (it needs
// SLUICE_PG_DIR, which that script's start exports).
const defaultRestartCmd = ".ci/postgres.sh restart"

// outagePlan orders restarts and crashes: true for a crash. They take turns
// while both are left, a restart first, so that each kind falls at several
// points of the posting.
func outagePlan(restarts, crashes int) []bool {
	plan := make([]bool, 0, restarts+crashes)
	for restarts > 0 || crashes > 0 {
		if restarts > 0 {
			plan = append(plan, false)
			restarts--
		}
		if crashes > 0 {
			plan = append(plan, true)
			crashes--
		}
	}
	return plan
}

// outageGrace widens each outage past the first query answered after the
// restart. pgxpool pings a pooled connection before handing it out only if
// it was idle more than a second; a connection released just before the
// restart and taken again less than a second after the database is back is
// handed out unpinged, dead, and the request on it fails. Past one second
// after the database answered, every connection from before the restart
// has been idle more than a second and is pinged and replaced.
const outageGrace = 2 * time.Second

// outages are the windows, on this machine's clock, in which PostgreSQL was
// restarting: from the restart command's start to the first query answered
// after it, plus outageGrace. An open window has a zero end.
type outages struct {
	mu      sync.Mutex
	windows []outage
}

type outage struct{ began, up time.Time }

func (o *outages) begin() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.windows = append(o.windows, outage{began: time.Now()})
}

// end closes the open window: the database answered at up.
func (o *outages) end(up time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.windows); n > 0 && o.windows[n-1].up.IsZero() {
		o.windows[n-1].up = up
	}
}

// overlaps reports whether a request made at call and answered at ret
// overlapped an outage (open or closed, with its grace). Asked when the
// answer arrives, it is complete: a window opened later cannot overlap.
func (o *outages) overlaps(call, ret time.Time) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, w := range o.windows {
		if w.began.After(ret) {
			continue
		}
		if w.up.IsZero() || !call.After(w.up.Add(outageGrace)) {
			return true
		}
	}
	return false
}

// durations lists each closed outage's length, restart to first answer.
func (o *outages) durations() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Duration
	for _, w := range o.windows {
		if !w.up.IsZero() {
			out = append(out, w.up.Sub(w.began))
		}
	}
	return out
}

// lastUp is when the database answered after the last restart (zero if
// none happened).
func (o *outages) lastUp() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var t time.Time
	for _, w := range o.windows {
		if w.up.After(t) {
			t = w.up
		}
	}
	return t
}

// restartPostgres runs the restart command and waits until the database
// at dbURL answers a query again. It returns when that happened.
func restartPostgres(ctx context.Context, command, dbURL string) (time.Time, error) {
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, "sh", "-c", command).CombinedOutput()
	if err != nil {
		return time.Time{}, fmt.Errorf("restarting PostgreSQL with %q: %w\n%s", command, err, out)
	}
	// pg_ctl -w returns once the server accepts connections; the outage
	// ends when a query is answered, which is what the services need.
	return waitAnswering(ctx, dbURL, fmt.Sprintf("%q", command))
}

// waitAnswering waits until the database at dbURL answers a query, after
// what (for the error), and returns when it did.
func waitAnswering(ctx context.Context, dbURL, what string) (time.Time, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ping(ctx, dbURL, 2*time.Second)
		if err == nil {
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("PostgreSQL does not answer 30 s after %s: %w", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startedLine matches the line cmd/sluice logs once its store is migrated
// and its workers run; it must match cmd/sluice's "running %d workers".
var startedLine = regexp.MustCompile(`(?m) running \d+ workers$`)

// starting reports whether p's current incarnation is alive but has not yet
// logged that it runs (it may still be connecting or migrating).
func (p *proc) starting() bool {
	p.mu.Lock()
	at := p.logAt
	p.mu.Unlock()
	if !p.alive() {
		return false
	}
	b, err := os.ReadFile(p.logPath)
	if err != nil || int64(len(b)) < at {
		return true
	}
	return !startedLine.Match(b[at:])
}

// waitStarted waits until no process in ps is in its startup. A sluice
// process that cannot reach its database at startup exits at once (for its
// supervisor to retry), so the restarts are kept out of the startups: what
// they check is that running processes live through the outage.
func waitStarted(ctx context.Context, ps []*proc, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var slow []string
		for _, p := range ps {
			if p.starting() {
				slow = append(slow, p.name)
			}
		}
		if len(slow) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still starting after %s", strings.Join(slow, ", "), within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// workerErrorLine matches a worker's log line for a tick that failed
// (cmd/sluice's runWorker: "worker <id>: <error>"); the worker pauses and
// ticks again.
var workerErrorLine = regexp.MustCompile(`(?m) worker \S+-w\d+: `)

// tickErrors counts the failed ticks the worker processes logged.
func tickErrors(ps []*proc) int {
	n := 0
	for _, p := range ps {
		if b, err := os.ReadFile(p.logPath); err == nil {
			n += len(workerErrorLine.FindAllIndex(b, -1))
		}
	}
	return n
}

// tickStorms names the worker processes that logged failed ticks faster
// than cmd/sluice's runWorker may: it pauses a second after each failed
// tick, so an incarnation that lived t logs at most t/1s + 1 of them, and
// a process whose incarnations lived lived in all at most that plus one a
// start. A worker that does not back off spins on a database that is
// coming back (the live check's outages), hammering it with connections
// while its log floods: nothing the invariants see, since the work still
// gets done once the database is back.
func tickStorms(ps []*proc, lived time.Duration) []string {
	var out []string
	for _, p := range ps {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			continue
		}
		p.mu.Lock()
		starts := max(p.starts, 1)
		p.mu.Unlock()
		n, most := len(workerErrorLine.FindAllIndex(b, -1)), int(lived/time.Second)+starts
		if n > most {
			out = append(out, fmt.Sprintf("%s (log %s) logged %d failed ticks in %s over %d starts, more than one a second (at most %d): it does not back off after a failed tick",
				p.name, p.logPath, n, lived.Round(time.Second), starts, most))
		}
	}
	return out
}

// The durability probe. A commit another session can see is one PostgreSQL
// has acknowledged, and with synchronous commits one whose WAL is written:
// no crash of the server may take it back. A store that asks for an
// asynchronous commit breaks that promise, and the event log then forgets
// writes the workers already acted on (a write-ahead whose bytes went out,
// written again after the send). So a watcher reads the newest events again
// and again until the database goes away; once it is back, every event the
// watcher saw must still be there.
//
// A crash is timed by the watcher: right after it sees a new event land,
// it SIGKILLs its own server process, as the kernel's OOM killer would. The
// postmaster then ends every session and resets shared memory, the WAL
// buffers with it, and recovers from the WAL written. Timing matters: the
// next synchronous commit of anyone flushes an asynchronous one written
// before it, so a loss shows only for a crash in the moments after a
// commit, before the next.

// outageCommits is what one outage's durability probe found.
type outageCommits struct {
	crash bool
	seen  int     // events the watch read before the outage
	lost  []int64 // the seqs of those the database no longer held after it
}

func (o outageCommits) kind() string {
	if o.crash {
		return "crash"
	}
	return "restart"
}

// commitWatch reads the event log of one run's schema on a connection of
// its own.
type commitWatch struct {
	conn *pgx.Conn
	pid  int   // its server process
	from int64 // the last seq read
	seen []int64
}

func newCommitWatch(ctx context.Context, dbURL string) (*commitWatch, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	w := &commitWatch{conn: conn}
	// From the last events already committed on: a crash may still take
	// those an asynchronous commit left unflushed.
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid(), coalesce(max(seq), 0) - 200 FROM events`).Scan(&w.pid, &w.from); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return w, nil
}

// poll reads the events committed since the last read and returns how
// many of them are transitions (not creations); an error means the
// database went away.
func (w *commitWatch) poll(ctx context.Context) (int, error) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := w.conn.Query(qctx, `SELECT seq, from_state IS NOT NULL FROM events WHERE seq > $1 ORDER BY seq`, w.from)
	if err != nil {
		return 0, err
	}
	transitions := 0
	var seq int64
	var transition bool
	_, err = pgx.ForEachRow(rows, []any{&seq, &transition}, func() error {
		w.seen = append(w.seen, seq)
		w.from = seq
		if transition {
			transitions++
		}
		return nil
	})
	return transitions, err
}

func (w *commitWatch) close() { w.conn.Close(context.Background()) }

// restartWatched runs the restart command while a watcher reads the event
// log until the database goes away, waits until it answers again, and
// checks what the watcher saw.
func restartWatched(ctx context.Context, command, dbURL string, o *outages) (time.Time, outageCommits, error) {
	probe := outageCommits{}
	w, err := newCommitWatch(ctx, dbURL)
	if err != nil {
		return time.Time{}, probe, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.close()
		for {
			if _, err := w.poll(ctx); err != nil {
				return // the outage began (or the run ends)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	o.begin()
	up, err := restartPostgres(ctx, command, dbURL)
	o.end(up)
	close(stop)
	<-done
	if err != nil {
		return up, probe, err
	}
	probe.seen = len(w.seen)
	probe.lost, err = lostCommits(ctx, dbURL, w.seen)
	return up, probe, err
}

// crashWait bounds how long a crash waits for a commit to land right
// before it: past it, the crash comes anyway.
const crashWait = 5 * time.Second

// crashPostgres crashes the server right after a transition's commit lands
// (SIGKILL of the watcher's own server process; a creation is not waited
// for, its commit being the intake's), waits until it answers again, and
// checks what the watcher saw. It polls without pause while it waits: each
// moment between the commit and the crash is one in which another commit
// may flush it.
func crashPostgres(ctx context.Context, dbURL string, o *outages) (time.Time, outageCommits, error) {
	probe := outageCommits{crash: true}
	w, err := newCommitWatch(ctx, dbURL)
	if err != nil {
		return time.Time{}, probe, err
	}
	defer w.close()
	if _, err := w.poll(ctx); err != nil {
		return time.Time{}, probe, err
	}
	for deadline := time.Now().Add(crashWait); time.Now().Before(deadline); {
		n, err := w.poll(ctx)
		if err != nil {
			return time.Time{}, probe, fmt.Errorf("the database went away before the crash: %w", err)
		}
		if n > 0 {
			break
		}
	}
	o.begin()
	if err := signalProcess(w.pid, os.Kill); err != nil {
		return time.Time{}, probe, fmt.Errorf("SIGKILL of server process %d: %w", w.pid, err)
	}
	// The postmaster learns of the death a moment later: until it has
	// ended every session, a new connection may still be answered, by a
	// process about to be ended too. The outage is over only once the
	// database was seen away and answers again.
	if err := waitAway(ctx, dbURL); err != nil {
		return time.Time{}, probe, err
	}
	up, err := waitAnswering(ctx, dbURL, "a server process SIGKILLed")
	o.end(up)
	if err != nil {
		return up, probe, err
	}
	probe.seen = len(w.seen)
	probe.lost, err = lostCommits(ctx, dbURL, w.seen)
	return up, probe, err
}

// ping connects to the database at dbURL and has a query answered, within
// timeout.
func ping(ctx context.Context, dbURL string, timeout time.Duration) error {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.Connect(qctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(qctx, `SELECT 1`)
	return err
}

// waitAway waits until a connection to the database at dbURL fails.
func waitAway(ctx context.Context, dbURL string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := ping(ctx, dbURL, time.Second); err != nil {
			return ctx.Err() // nil: away, as it should be
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("PostgreSQL still answers 10 s after a server process was SIGKILLed: it did not reset")
}

// crashable checks, before the run, that a crash can be made and hits the
// cluster it should: the server runs on this machine with its data in dir
// (the cluster of .ci/postgres.sh), restarts itself after a crash, and its
// processes take this process's signals.
func crashable(ctx context.Context, dbURL, dir string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var pid int
	var dataDir, restart string
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid(), current_setting('data_directory'), current_setting('restart_after_crash')`).Scan(&pid, &dataDir, &restart); err != nil {
		return err
	}
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("SLUICE_PG_DIR %s: %w", dir, err)
	}
	got, err := filepath.EvalSymlinks(dataDir)
	if err != nil || !strings.HasPrefix(got, want+string(filepath.Separator)) {
		return fmt.Errorf("the server's data directory %s is not in SLUICE_PG_DIR %s: it is not the cluster of .ci/postgres.sh, which alone may be crashed", dataDir, dir)
	}
	if restart != "on" {
		return fmt.Errorf("the server has restart_after_crash = %s: a crash would leave it down", restart)
	}
	if err := signalProcess(pid, syscall.Signal(0)); err != nil {
		return fmt.Errorf("server process %d does not take this process's signals (%w): run as root or as the server's user, on its machine", pid, err)
	}
	return nil
}

// signalProcess sends sig to process pid.
func signalProcess(pid int, sig os.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}

// lostCommits returns the seqs w saw that the database at dbURL no longer
// holds (after the outage).
func lostCommits(ctx context.Context, dbURL string, seen []int64) ([]int64, error) {
	if len(seen) == 0 {
		return nil, nil
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT seq FROM events WHERE seq = ANY($1)`, seen)
	if err != nil {
		return nil, err
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	have := make(map[int64]bool, len(kept))
	for _, s := range kept {
		have[s] = true
	}
	var lost []int64
	for _, s := range seen {
		if !have[s] {
			lost = append(lost, s)
		}
	}
	return lost, nil
}
