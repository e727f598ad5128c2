package reports

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The browser test drives Debian's chromium from the command line rather
// than through a DevTools client: the console messages chromium logs to
// stderr are all this test needs, and it keeps the module free of a
// dependency. .ci/chromium.sh installs chromium when it is missing.

// chromium finds the browser: $CHROMIUM when set (and then only it, so a
// wrong setting is noticed rather than papered over), else /usr/bin/chromium
// or chromium on PATH. Under CI=true a missing browser fails the test: CI
// must not go green by skipping the only check that pages work in a browser.
func chromium(t *testing.T) string {
	t.Helper()
	found := ""
	if c := os.Getenv("CHROMIUM"); c != "" {
		if _, err := os.Stat(c); err == nil {
			found = c
		}
	} else if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		found = "/usr/bin/chromium"
	} else if p, err := exec.LookPath("chromium"); err == nil {
		found = p
	}
	if found != "" {
		return found
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found and CI=true: run .ci/chromium.sh (Debian's chromium package) before the tests")
	}
	t.Skip("chromium not found: install it with .ci/chromium.sh (or set CHROMIUM) to run the browser test")
	return ""
}

// chromiumArgs keep the browser off the network and off the user's
// profile: only the file:// page is loaded.
func chromiumArgs(profile string, extra ...string) []string {
	return append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
	}, extra...)
}

// consoleRe matches what chromium logs for every console message and
// uncaught exception of a page. The log line does not carry the message's
// level, so any console output at all is counted: our pages have no script,
// and porcupine's page logs nothing when it works.
var consoleRe = regexp.MustCompile(`:CONSOLE[:(\]].*|Uncaught .*`)

// load opens a page headless and returns its serialized DOM and every
// console message or exception it produced.
func load(t *testing.T, bin, page string) (dom string, problems []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, chromiumArgs(t.TempDir(), "--dump-dom", "file://"+abs)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium on %s: %v\n%s", page, err, tail(stderr.String(), 2000))
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if m := consoleRe.FindString(line); m != "" {
			problems = append(problems, m)
		}
	}
	return stdout.String(), problems
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Goal: every page of a generated report opens in Chromium with no console
// error and no uncaught exception, and renders (its DOM has the title).
func TestBrowserOpensEveryPage(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	r := fixtureRuns(t)["chaos-check-then-insert"]
	if _, err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 3 {
		t.Fatalf("only %d pages written", len(entries))
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			dom, problems := load(t, bin, filepath.Join(dir, e.Name()))
			for _, p := range problems {
				t.Errorf("console: %s", p)
			}
			if !strings.Contains(dom, "</html>") || !strings.Contains(dom, "<body") {
				t.Errorf("the page did not render: DOM is %d bytes", len(dom))
			}
		})
	}
}

// Goal: the browser check bites: a page with a console error and an
// uncaught exception is caught, and a clean page is not.
func TestBrowserCatchesConsoleErrors(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	good := filepath.Join(dir, "good.html")
	os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><p>x</p><script>console.error("boom"); notAFunction();</script></body></html>`), 0o644)
	os.WriteFile(good, []byte(`<!DOCTYPE html><html><body><p>x</p></body></html>`), 0o644)
	_, problems := load(t, bin, bad)
	joined := strings.Join(problems, "\n")
	if !strings.Contains(joined, "boom") || !strings.Contains(joined, "Uncaught ReferenceError") {
		t.Errorf("the console error and the exception were not both caught; got:\n%s", joined)
	}
	if _, problems := load(t, bin, good); len(problems) > 0 {
		t.Errorf("a clean page reported: %q", problems)
	}
}

// Screenshots for people: REPORTS_SCREENSHOTS=DIR go test ./reports -run
// TestScreenshots writes DIR/index.png and DIR/seed-N.png at 1280 px wide,
// and the report itself to DIR/report/.
func TestScreenshots(t *testing.T) {
	out := os.Getenv("REPORTS_SCREENSHOTS")
	if out == "" {
		t.Skip("set REPORTS_SCREENSHOTS=DIR to write screenshots of a report at 1280 px wide")
	}
	bin := chromium(t)
	dir := filepath.Join(out, "report")
	r := fixtureRuns(t)["chaos-check-then-insert"]
	if _, err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"index.html", seedFile(r.Failures[0].Seed)} {
		png, _ := filepath.Abs(filepath.Join(out, strings.TrimSuffix(page, ".html")+".png"))
		abs, _ := filepath.Abs(filepath.Join(dir, page))
		cmd := exec.Command(bin, chromiumArgs(t.TempDir(), "--hide-scrollbars=false", "--window-size=1280,2000",
			"--screenshot="+png, "file://"+abs)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("screenshot of %s: %v\n%s", page, err, tail(string(b), 2000))
		}
		fmt.Println("screenshot:", png)
	}
}
