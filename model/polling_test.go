package model

import (
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// pollScript builds the records paced-polling reads from a script of one
// operation's history, each step "PROC ACT" with ACT one of claim, look,
// write, park, release, resolve (an operator's claim), or "+DUR" to let
// virtual time pass.
func pollScript(t *testing.T, script string) *Snapshot {
	t.Helper()
	const op = sluice.OperationID("op-polled")
	txid := tron.Txid{0xab}
	s := &Snapshot{PollFloor: 3 * time.Second}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, step := range strings.Split(script, ";") {
		f := strings.Fields(step)
		if len(f) == 1 && strings.HasPrefix(f[0], "+") {
			d, err := time.ParseDuration(f[0][1:])
			if err != nil {
				t.Fatalf("script %q: %v", script, err)
			}
			at = at.Add(d)
			continue
		}
		if len(f) != 2 {
			t.Fatalf("script %q: step %q is not PROC ACT", script, step)
		}
		proc, act := f[0], f[1]
		switch act {
		case "claim", "resolve":
			s.Claims = append(s.Claims, ClaimRecord{Op: op, Token: sluice.FencingToken(len(s.Claims) + 1), Proc: proc, At: at, Operator: act == "resolve"})
		case "look":
			s.Lookups = append(s.Lookups, LookupRecord{Op: op, Txid: txid, Proc: proc, At: at,
				Claims: len(s.Claims), Writes: len(s.Writes), Releases: len(s.Releases), Parks: len(s.Parks)})
		case "write":
			s.Writes = append(s.Writes, WriteRecord{Op: op, Proc: proc, At: at})
		case "park":
			r := ReleaseRecord{Op: op, Proc: proc, At: at}
			s.Releases = append(s.Releases, r)
			s.Parks = append(s.Parks, r)
		case "release":
			s.Releases = append(s.Releases, ReleaseRecord{Op: op, Proc: proc, At: at})
		default:
			t.Fatalf("script %q: unknown act %q", script, act)
		}
	}
	return s
}

func TestCheckPacedPolling(t *testing.T) {
	for _, c := range []struct {
		name, script string
		fired        bool
	}{
		{"a look, a wait, a look", "w1 claim; w1 look; w1 release; +3s; w1 claim; w1 look", false},
		{"two looks in one claim", "w1 claim; w1 look; w1 look", true},
		{"two looks in one claim, a second apart", "w1 claim; w1 look; +1s; w1 look", true},
		{"a write between", "w1 claim; w1 look; w1 write; w1 look", false},
		{"a park between, then a claim at once", "w1 claim; w1 look; w1 park; w1 claim; w1 look", false},
		{"released with no wait and claimed again", "w1 claim; w1 look; w1 release; w1 claim; w1 look", true},
		{"released, claimed again two seconds later", "w1 claim; w1 look; w1 release; +2s; w1 claim; w1 look", true},
		{"a rival's claim between", "w1 claim; w1 look; w1 release; w2 claim; w2 release; w1 claim; w1 look", false},
		{"the first look a zombie's: a rival claimed before it", "w1 claim; w2 claim; w1 look; w1 release; w1 claim; w1 look", false},
		{"an operator's resolution between", "w1 claim; w1 look; w1 release; op resolve; w1 claim; w1 look", false},
		{"its own claim before is not a rival's", "w1 claim; w1 claim; w1 look; w1 release; w1 claim; w1 look", true},
		{"its own lease lapsed (no release), claimed again", "w1 claim; w1 look; +1s; w1 claim; w1 look", false},
		{"its own lease lapsed after a release of it", "w1 claim; w1 look; w1 release; w1 claim; +1s; w1 claim; w1 look", true},
		{"two processes look at once", "w1 claim; w1 look; w2 look", false},
		{"a rival's look between does not excuse", "w1 claim; w1 look; w2 look; w1 look", true},
		{"another process's write between does not excuse", "w1 claim; w1 look; w2 write; w1 look", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := pollScript(t, c.script)
			got := CheckPacedPolling(s)
			if !c.fired {
				if len(got) != 0 {
					t.Errorf("want clean, got:\n%s", describe(got))
				}
				return
			}
			if len(got) != 1 || got[0].Invariant != PacedPolling || got[0].Operation != "op-polled" ||
				!strings.Contains(got[0].Message, "looked txid ab000000 up at") {
				t.Errorf("want one paced-polling violation about op-polled, got:\n%s", describe(got))
			}
		})
	}
	t.Run("not judged without a floor", func(t *testing.T) {
		s := pollScript(t, "w1 claim; w1 look; w1 look")
		s.PollFloor = 0
		if got := CheckPacedPolling(s); len(got) != 0 {
			t.Errorf("want nothing judged, got:\n%s", describe(got))
		}
	})
	t.Run("a loop is one finding", func(t *testing.T) {
		s := pollScript(t, "w1 claim; w1 look; w1 look; w1 look; w1 look")
		got := CheckPacedPolling(s)
		if len(got) != 1 || !strings.Contains(got[0].Message, "(and 2 more lookups of it as close)") {
			t.Errorf("want one violation counting the two more, got:\n%s", describe(got))
		}
	})
}
