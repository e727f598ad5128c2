package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// privateCluster starts a PostgreSQL cluster of this test's own with
// .ci/postgres.sh (the one CI and make test use, settings included), so
// that crashing it disturbs no other test, and stops it at the end. It
// returns its URL and directory. Like the rest of the PostgreSQL tier, it
// runs only where a database is configured (DATABASE_URL).
func privateCluster(t *testing.T) (url, dir string) {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("the PostgreSQL tier runs with DATABASE_URL set (make test starts a cluster)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, ".ci", "postgres.sh")
	out, err := exec.Command(script, "start").Output()
	if err != nil {
		t.Fatalf("%s start: %v", script, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "export DATABASE_URL='"); ok {
			url = strings.TrimSuffix(v, "'")
		}
		if v, ok := strings.CutPrefix(line, "export SLUICE_PG_DIR='"); ok {
			dir = strings.TrimSuffix(v, "'")
		}
	}
	if url == "" || dir == "" {
		t.Fatalf("%s start printed no DATABASE_URL or SLUICE_PG_DIR:\n%s", script, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("%s stop %s: %v\n%s", script, dir, err, out)
		}
	})
	return url, dir
}

// Goal: the crash and its durability probe tell a store that loses
// acknowledged commits from one that does not. Method: on a cluster of the
// test's own, a writer inserts events one after another while the server
// is crashed right after one lands: with synchronous commits (what
// PostgreSQL does by default, and the cluster runs with) the probe finds
// every event it saw after the crash; with each commit asynchronous (as
// independent bug 42 makes sluice's CAS) it finds some gone. And a crash
// refuses a server whose data is not the named cluster's.
func TestCrashLosesOnlyAsynchronousCommits(t *testing.T) {
	url, dir := privateCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := adminExec(ctx, url, `CREATE TABLE events (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, from_state text)`); err != nil {
		t.Fatal(err)
	}
	if err := crashable(ctx, url, dir); err != nil {
		t.Fatalf("the test's own cluster: %v", err)
	}
	if err := crashable(ctx, url, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not in SLUICE_PG_DIR") {
		t.Errorf("a directory that is not the server's: %v, want a refusal", err)
	}

	crash := func(async bool) outageCommits {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			defer conn.Close(context.Background())
			for ctx.Err() == nil {
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					if async {
						if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
							return err
						}
					}
					_, err := tx.Exec(ctx, `INSERT INTO events (from_state) VALUES ('signed')`)
					return err
				})
				if err != nil {
					return // the crash
				}
				time.Sleep(3 * time.Millisecond)
			}
		})
		o := &outages{}
		_, probe, err := crashPostgres(ctx, url, o)
		wg.Wait()
		if err != nil {
			t.Fatalf("crash: %v", err)
		}
		if d := o.durations(); len(d) != 1 {
			t.Errorf("outages recorded %v, want one", d)
		}
		if probe.seen == 0 {
			t.Fatalf("the probe saw no event before the crash: it judged nothing")
		}
		return probe
	}
	if p := crash(false); len(p.lost) != 0 {
		t.Errorf("synchronous commits: %d of %d events seen were lost in the crash: %v", len(p.lost), p.seen, p.lost)
	}
	if p := crash(true); len(p.lost) == 0 {
		t.Errorf("asynchronous commits: none of the %d events seen was lost in the crash; the crash came too late to show a loss", p.seen)
	}
}
