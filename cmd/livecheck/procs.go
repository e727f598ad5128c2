package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process of sluice.
type proc struct {
	name    string
	args    []string
	env     []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current incarnation has exited
	killed bool          // the current incarnation was killed on purpose
	exit   error         // of the last incarnation that exited
	starts int
	logAt  int64 // the log's size when the current incarnation started: its output follows
}

// procs owns every child, so that all of them die on the way out.
type procs struct {
	bin string
	dir string // logs
	mu  sync.Mutex
	all []*proc
}

func (ps *procs) add(name string, env []string, args ...string) *proc {
	p := &proc{name: name, args: args, env: env, logPath: filepath.Join(ps.dir, name+".log")}
	ps.mu.Lock()
	ps.all = append(ps.all, p)
	ps.mu.Unlock()
	return p
}

// start runs a new incarnation of p; its output is appended to its log.
func (ps *procs) start(p *proc) error {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	cmd := exec.Command(ps.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.killed = cmd, done, false
	p.starts++
	p.logAt = fi.Size()
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exit = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// alive reports whether the current incarnation is running.
func (p *proc) alive() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// killPointLine opens the log line a worker writes when its kill point
// fires (cmd/sluice -kill-point); it must match cmd/sluice's.
const killPointLine = "kill point: SIGKILL self after"

// diedAtKillPoint reports whether the current incarnation has exited by its
// own kill point (the last line of its log says so), not by a crash.
func (p *proc) diedAtKillPoint() bool {
	p.mu.Lock()
	done, killed := p.done, p.killed
	p.mu.Unlock()
	if done == nil || killed {
		return false
	}
	select {
	case <-done:
	default:
		return false
	}
	return strings.Contains(p.tail(1), killPointLine)
}

// unexpected reports an incarnation that exited without being told to and
// not by its kill point.
func (p *proc) unexpected() error {
	if p.diedAtKillPoint() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil || p.killed {
		return nil
	}
	select {
	case <-p.done:
		return fmt.Errorf("%s exited by itself (%v); see %s", p.name, p.exit, p.logPath)
	default:
		return nil
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL, 10*time.Second)
}

// stop asks for a graceful exit (SIGTERM), then kills after grace.
// It says what was wrong with the stop, "" for none: a running
// incarnation must exit 0 within grace, as cmd/sluice does once its
// requests and ticks in flight are done. SIGTERM is what systemd, docker
// stop and Kubernetes send; a process that dies of it, or exits otherwise,
// loses the answers it owed.
func (p *proc) stop(grace time.Duration) string {
	sent, exited := p.signalled(syscall.SIGTERM, grace)
	if !exited {
		p.kill()
		return fmt.Sprintf("%s did not exit within %s of SIGTERM, and was killed; see %s", p.name, grace, p.logPath)
	}
	p.mu.Lock()
	err := p.exit
	p.mu.Unlock()
	if sent && err != nil {
		return fmt.Sprintf("%s ended with %v after SIGTERM, not a graceful exit (status 0); see %s", p.name, err, p.logPath)
	}
	return ""
}

// signal sends sig to a running incarnation and reports whether it exited
// within wait.
func (p *proc) signal(sig syscall.Signal, wait time.Duration) bool {
	_, exited := p.signalled(sig, wait)
	return exited
}

// signalled is signal, and says too whether sig reached a running
// incarnation (not one that had exited before it).
func (p *proc) signalled(sig syscall.Signal, wait time.Duration) (sent, exited bool) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if done == nil {
		p.mu.Unlock()
		return false, true
	}
	p.killed = true
	p.mu.Unlock()
	select {
	case <-done:
		return false, true
	default:
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
		return true, true
	case <-time.After(wait):
		return true, false
	}
}

// killAll kills every child still running: the way out, on every path.
func (ps *procs) killAll() {
	ps.mu.Lock()
	all := append([]*proc(nil), ps.all...)
	ps.mu.Unlock()
	for _, p := range all {
		p.kill()
	}
}

// tail is the end of p's log, for failure reports.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// freeAddr picks a free loopback port. Another process could take it
// before the child binds it; the child then fails to start and the check
// says so.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHealthy polls url until it answers 200, p dies, or the deadline.
func waitHealthy(ctx context.Context, p *proc, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !p.alive() {
			return fmt.Errorf("%s exited before %s answered:\n%s", p.name, url, p.tail(20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s did not answer within %s:\n%s", p.name, url, within, p.tail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// buildSluice compiles cmd/sluice into dir with the go tool on PATH (or
// $GO), with the race detector if race.
func buildSluice(ctx context.Context, dir string, race bool) (string, error) {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	out := filepath.Join(dir, "sluice")
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, goTool, append(args, "sluicesim/cmd/sluice")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/sluice: %w\n%s", err, b)
	}
	return out, nil
}

// list is every child added so far.
func (ps *procs) list() []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]*proc(nil), ps.all...)
}

// raceHeader opens each report the race detector writes (and the process
// carries on: halt_on_error is off by default).
const raceHeader = "WARNING: DATA RACE"

// dataRaces reads every child's log for the race detector's reports: one
// line for each process with any, naming the first report's access (the
// access, then the function that made it) and how many reports it wrote.
func dataRaces(ps []*proc) []string {
	var out []string
	for _, p := range ps {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			continue
		}
		text := string(b)
		n := strings.Count(text, raceHeader)
		if n == 0 {
			continue
		}
		// The report's next lines: "Read at 0x... by goroutine N:", then
		// the function that made the access.
		rest := text[strings.Index(text, raceHeader)+len(raceHeader):]
		lines := strings.SplitN(strings.TrimLeft(rest, "\n"), "\n", 3)
		first := strings.TrimSpace(lines[0])
		if len(lines) > 1 {
			first += " " + strings.TrimSpace(lines[1])
		}
		out = append(out, fmt.Sprintf("%s (log %s): %d reports; the first: %s", p.name, p.logPath, n, first))
	}
	return out
}

// secretsInLogs reads every child's log for each secret (by the name the
// report gives it): its first or last quarter (at least 8 bytes) is enough,
// which a log that shows a value cut or masked at either end still holds.
// One line for each process and secret found, in the processes' order and
// the names' sorted order.
func secretsInLogs(ps []*proc, secrets map[string]string) []string {
	names := slices.Sorted(maps.Keys(secrets))
	var out []string
	for _, p := range ps {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			continue
		}
		for _, name := range names {
			secret := secrets[name]
			if len(secret) < 8 {
				continue // too short to find without false alarms; CheckToken refuses such a token anyway
			}
			q := max(8, len(secret)/4)
			if bytes.Contains(b, []byte(secret[:q])) || bytes.Contains(b, []byte(secret[len(secret)-q:])) {
				out = append(out, fmt.Sprintf("%s (log %s) shows %s, or a quarter of it", p.name, p.logPath, name))
			}
		}
	}
	return out
}

// watch looks at every process each period until stop closes or ctx ends,
// and cancels the run (cancel, with the process's error and its log's
// tail as the cause) the first time one has exited by itself: not killed
// or stopped by the run, not by its own kill point.
func watch(ctx context.Context, stop <-chan struct{}, every time.Duration, ps []*proc, cancel context.CancelCauseFunc) {
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		for _, p := range ps {
			if err := p.unexpected(); err != nil {
				cancel(fmt.Errorf("%w; its log ends:\n%s", err, p.tail(20)))
				return
			}
		}
	}
}
