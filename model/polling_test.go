package model

import (
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// pollScript builds the records paced-polling reads from a script of one
// operation's history, each step "PROC ACT" with ACT one of claim, look,
// write, park, release, resolve (an operator's claim); send (a broadcast
// answered SUCCESS), refused (answered BANDWITH_ERROR), lost (its answer
// lost: a timeout), signfail (a signing the world failed), rebuild (a new
// envelope written after the old txid failed on chain with OUT_OF_ENERGY),
// expired (a new envelope after the old one died unsent), reorged (after
// the old one's SUCCESS was reorged away); or "+DUR" to let
// virtual time pass. A release or park is under the process's latest
// claim's token.
func pollScript(t *testing.T, script string) *Snapshot {
	t.Helper()
	const op = sluice.OperationID("op-polled")
	txid := tron.Txid{0xab}
	s := &Snapshot{PollFloor: 3 * time.Second, ParkRetry: 6 * time.Second, ParkBackoffMax: time.Minute}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	held := map[string]sluice.FencingToken{}
	// rebuilt writes a new envelope retiring the current txid: with an
	// inclusion of the old one when it failed on chain.
	rebuilt := func(proc, act string) {
		old := txid
		txid = tron.Txid{0xab, byte(len(s.Events) + 1)}
		switch act {
		case "rebuild":
			s.Inclusions = append(s.Inclusions, mocknode.Inclusion{Txid: old, BlockNumber: 100, BlockTime: at, Receipt: tron.ReceiptOutOfEnergy})
		case "reorged":
			s.Inclusions = append(s.Inclusions, mocknode.Inclusion{Txid: old, BlockNumber: 100, BlockTime: at, Receipt: tron.ReceiptSuccess})
		}
		seq := int64(len(s.Events) + 1)
		s.Events = append(s.Events, sluice.Event{Seq: seq, OperationID: op, From: sluice.Broadcasting, To: sluice.Signing, Txid: txid, RetiredTxid: old})
		s.Writes = append(s.Writes, WriteRecord{Seq: seq, Op: op, Proc: proc, At: at, Built: true, Claims: len(s.Claims), Sends: len(s.Sends)})
	}
	sent := func(proc, answer string) {
		s.Sends = append(s.Sends, SendRecord{Op: op, Txid: txid, Proc: proc, At: at, Answer: answer, Claims: len(s.Claims),
			Lookups: len(s.Lookups), Writes: len(s.Writes), Releases: len(s.Releases), Parks: len(s.Parks)})
	}
	eachStep(t, script, &at, func(step string, f []string) {
		if len(f) != 2 {
			t.Fatalf("script %q: step %q is not PROC ACT", script, step)
		}
		proc, act := f[0], f[1]
		switch act {
		case "claim", "resolve":
			s.Claims = append(s.Claims, ClaimRecord{Op: op, Token: sluice.FencingToken(len(s.Claims) + 1), Proc: proc, At: at, Operator: act == "resolve"})
			held[proc] = sluice.FencingToken(len(s.Claims))
		case "look":
			s.Lookups = append(s.Lookups, LookupRecord{Op: op, Txid: txid, Proc: proc, At: at,
				Claims: len(s.Claims), Writes: len(s.Writes), Releases: len(s.Releases), Parks: len(s.Parks)})
		case "write":
			s.Writes = append(s.Writes, WriteRecord{Op: op, Proc: proc, At: at})
		case "park":
			r := ReleaseRecord{Op: op, Token: held[proc], Proc: proc, At: at}
			s.Releases = append(s.Releases, r)
			s.Parks = append(s.Parks, r)
		case "release":
			s.Releases = append(s.Releases, ReleaseRecord{Op: op, Token: held[proc], Proc: proc, At: at})
		case "send":
			sent(proc, string(tron.CodeSuccess))
		case "refused":
			sent(proc, string(tron.CodeBandwidthError))
		case "lost":
			sent(proc, "context deadline exceeded")
		case "signfail":
			s.SignerFailures = append(s.SignerFailures, SignerFailure{Proc: proc, Txid: txid, Op: op, At: at, Claims: len(s.Claims), Sends: len(s.Sends)})
		case "rebuild", "expired", "reorged":
			rebuilt(proc, act)
		default:
			t.Fatalf("script %q: unknown act %q", script, act)
		}
	})
	return s
}

// wantPaced checks paced-polling on s: clean unless fired, else one
// violation about op-polled whose message holds mention.
func wantPaced(t *testing.T, s *Snapshot, fired bool, mention string) {
	t.Helper()
	got := CheckPacedPolling(s)
	if !fired {
		if len(got) != 0 {
			t.Errorf("want clean, got:\n%s", describe(got))
		}
		return
	}
	if len(got) != 1 || got[0].Invariant != PacedPolling || got[0].Operation != "op-polled" || !strings.Contains(got[0].Message, mention) {
		t.Errorf("want one paced-polling violation about op-polled, got:\n%s", describe(got))
	}
}

// eachStep calls do with each step of a script (steps split by ";"), its
// fields split by spaces, except "+DUR", which moves *at on instead.
func eachStep(t *testing.T, script string, at *time.Time, do func(step string, fields []string)) {
	t.Helper()
	for _, step := range strings.Split(script, ";") {
		f := strings.Fields(step)
		if len(f) == 1 && strings.HasPrefix(f[0], "+") {
			d, err := time.ParseDuration(f[0][1:])
			if err != nil {
				t.Fatalf("script %q: %v", script, err)
			}
			*at = at.Add(d)
			continue
		}
		do(step, f)
	}
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
		t.Run(c.name, func(t *testing.T) { wantPaced(t, pollScript(t, c.script), c.fired, "looked txid ab000000 up at") })
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

// Goal: paced-polling holds a process's first look after its own send that
// the node did not take to the shortest wait, by the world's records of the
// sends and lookups: a worker that ignores the wait such a send asks for
// (independent bug 204) looks again at once.
func TestCheckPacedPollingAfterASendNotTaken(t *testing.T) {
	for _, c := range []struct {
		name, script string
		fired        bool
	}{
		{"a send lost, a wait, a look", "w1 claim; w1 write; w1 lost; w1 release; +3s; w1 claim; w1 look", false},
		{"a send lost, a look at once", "w1 claim; w1 write; w1 lost; w1 look", true},
		{"a send refused, a look a second later", "w1 claim; w1 write; w1 refused; +1s; w1 look", true},
		{"a send taken, a look at once", "w1 claim; w1 send; w1 look", false},
		{"a look, then the send lost", "w1 claim; w1 look; w1 lost; w1 release", false},
		{"the look before the send at one instant", "w1 claim; w1 look; w1 lost; +3s; w1 claim; w1 look", false},
		{"a rival's claim between", "w1 claim; w1 lost; w2 claim; w2 release; w1 claim; w1 look", false},
		{"its own lease lapsed, claimed again", "w1 claim; w1 lost; +1s; w1 claim; w1 look", false},
		{"another process looks at once", "w1 claim; w1 lost; w2 look", false},
		{"a write of its own between", "w1 claim; w1 lost; w1 write; w1 look", false},
	} {
		t.Run(c.name, func(t *testing.T) { wantPaced(t, pollScript(t, c.script), c.fired, "which the node did not take") })
	}
}

// Goal: paced-polling holds a process's next send after a shortage of ours
// (a refusal for bandwidth, a failed signing, a rebuild after a failed
// receipt) to the park's first wait, by the world's records of the sends,
// the signer, the chain and the writes, and excuses it only for another's
// claim between or the process's own lease lapsing.
func TestCheckPacedPollingAfterAShortage(t *testing.T) {
	for _, c := range []struct {
		name, script string
		fired        string // a piece of the message; "" for clean
	}{
		{"refused, parked, claimed again after the wait", "w1 claim; w1 refused; w1 park; +6s; w1 claim; w1 send", ""},
		{"refused, sent again at once", "w1 claim; w1 refused; w1 send", "was refused BANDWITH_ERROR"},
		{"refused, released, claimed and sent two seconds later", "w1 claim; w1 refused; w1 release; +2s; w1 claim; w1 send", "2s after a shortage"},
		{"refused, parked with too short a wait", "w1 claim; w1 refused; w1 park; +5s; w1 claim; w1 send", "5s after a shortage"},
		{"writes between excuse nothing", "w1 claim; w1 refused; w1 write; w1 write; w1 send", "was refused"},
		{"a refusal lost on the way told nothing", "w1 claim; w1 lost; w1 send", ""},
		{"a success is no shortage", "w1 claim; w1 send; w1 send", ""},
		{"another process sends at once", "w1 claim; w1 refused; w2 claim; w2 send", ""},
		{"a rival's claim between", "w1 claim; w1 refused; w2 claim; w1 claim; w1 send", ""},
		{"released, a rival's claim, its own again", "w1 claim; w1 refused; w1 release; w2 claim; w2 release; w1 claim; w1 send", ""},
		{"an operator's resolution between", "w1 claim; w1 refused; op resolve; w1 claim; w1 send", ""},
		{"its lease lapsed (its park fenced), claimed again", "w1 claim; w1 refused; w1 claim; w1 send", ""},
		{"its lease lapsed; a release under an older claim is not one since", "w1 claim; w1 release; w1 claim; w1 refused; w1 claim; w1 send", ""},
		{"its lease lapsed; a release under the new claim is after it", "w1 claim; w1 refused; w1 claim; w1 send; w1 release", ""},
		{"a rival's claim before the refusal does not excuse", "w2 claim; w1 claim; w1 refused; w1 send", "was refused"},
		{"a failed signing, then a send at once", "w1 claim; w1 signfail; w1 send", "its signing of txid"},
		{"a failed signing, parked", "w1 claim; w1 signfail; w1 park; +7s; w1 claim; w1 send", ""},
		{"rebuilt after a failed receipt, sent at once", "w1 claim; w1 send; +1m; w1 rebuild; w1 write; w1 write; w1 send", "failed on chain (OUT_OF_ENERGY in #100)"},
		{"rebuilt after a failed receipt, parked", "w1 claim; w1 send; +1m; w1 rebuild; w1 park; +6s; w1 claim; w1 send", ""},
		{"rebuilt after an expiration, sent at once", "w1 claim; w1 send; +1m; w1 expired; w1 send", ""},
		{"rebuilt after its success was reorged away, sent at once", "w1 claim; w1 send; +1m; w1 reorged; w1 send", ""},
		{"a send after the floor", "w1 claim; w1 refused; +6s; w1 send", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := pollScript(t, c.script)
			got := CheckPacedPolling(s)
			if c.fired == "" {
				if len(got) != 0 {
					t.Errorf("want clean, got:\n%s", describe(got))
				}
				return
			}
			if len(got) != 1 || got[0].Invariant != PacedPolling || got[0].Operation != "op-polled" ||
				!strings.Contains(got[0].Message, "after a shortage of ours") || !strings.Contains(got[0].Message, c.fired) {
				t.Errorf("want one paced-polling violation about op-polled's send after a shortage (%q), got:\n%s", c.fired, describe(got))
			}
		})
	}
	t.Run("not judged without the park's wait", func(t *testing.T) {
		s := pollScript(t, "w1 claim; w1 refused; w1 send")
		s.ParkRetry = 0
		if got := CheckPacedPolling(s); len(got) != 0 {
			t.Errorf("want nothing judged, got:\n%s", describe(got))
		}
	})
}
