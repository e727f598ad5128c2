package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL restarts under load: the database goes away (every session
// terminated, open transactions rolled back, a commit in flight perhaps
// answered to nobody) and comes back, while clients post and workers work.
// The sluice processes must live through it on their pools' reconnects;
// clients may get a 5xx while it lasts, which their retries must then turn
// into an answer.

// defaultRestartCmd restarts the cluster .ci/postgres.sh started (it needs
// SLUICE_PG_DIR, which that script's start exports).
const defaultRestartCmd = ".ci/postgres.sh restart"

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
	deadline := time.Now().Add(30 * time.Second)
	for {
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(qctx, dbURL)
		if err == nil {
			_, err = conn.Exec(qctx, `SELECT 1`)
			conn.Close(context.Background())
		}
		qcancel()
		if err == nil {
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("PostgreSQL does not answer 30 s after %q: %w", command, err)
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
