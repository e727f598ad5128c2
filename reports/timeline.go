package reports

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
)

// ---- the failure page ----

type seedPage struct {
	Style      template.CSS
	Title      string
	Run        *Run
	F          *Failure
	LinLink    bool
	Summary    string
	Timeline   template.HTML
	LaneNote   string
	Ops        []opLog
	NoOpNote   string
	EventCount int
}

type opLog struct {
	ID     string
	Name   string
	Events []opEvent
	Trace  []traceLine
	Capped int // trace lines mentioning the operation that were left out
}

type opEvent struct {
	Seq                       int64
	At, Edge, Token, Worker   string
	Txid, Retired, Note, Flag string
}

type traceLine struct {
	At, Proc, Text, Class string
}

// traceLinesMax bounds the per-operation excerpt of the trace: the event
// log above it is complete, the excerpt is there for context.
const traceLinesMax = 300

func failureView(r *Run, f *Failure) *seedPage {
	p := &seedPage{Style: style, Run: r, F: f}
	p.Title = fmt.Sprintf("seed %d of %s", f.Seed, r.World)
	if r.Mutant != "" {
		p.Title += " (mutant " + r.Mutant + ")"
	}
	res := f.Traced
	lin := slices.ContainsFunc(f.Violations, func(v model.Violation) bool { return v.Invariant == model.LinearizableIntake })
	p.LinLink = lin && res != nil && res.Linearizability != nil
	if res == nil {
		p.Summary = "no traced re-run was attached to this failure: re-run it with the command above to see its trace"
		return p
	}
	p.Summary = fmt.Sprintf("%d steps, %s of virtual time", res.Steps, fmtDur(res.Virtual))

	// The operations the violations are about, in order of first mention.
	var ids []sluice.OperationID
	for _, v := range f.Violations {
		if v.Operation != "" && !slices.Contains(ids, v.Operation) {
			ids = append(ids, v.Operation)
		}
	}
	if len(ids) == 0 {
		p.NoOpNote = "No violation names a single operation (the evidence is run-wide), so no operation's log is singled out."
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = opName(id)
	}

	var events []sim.Event
	if res.Trace != nil {
		events = res.Trace.Events
	}
	p.EventCount = len(events)
	p.Timeline, p.LaneNote = swimlanes(events, res.Virtual, names)

	if res.Snapshot != nil {
		// The store's clock and the trace's virtual time are one timeline;
		// the run started Virtual before it ended.
		start := res.Snapshot.End.Add(-res.Virtual)
		for i, id := range ids {
			lg := opLog{ID: string(id), Name: names[i]}
			var lastToken sluice.FencingToken
			for _, e := range res.Snapshot.Events {
				if e.OperationID != id {
					continue
				}
				ev := opEvent{
					Seq: e.Seq, At: fmtDur(e.At.Sub(start)), Edge: e.From.String() + " → " + e.To.String(),
					Token: fmt.Sprint(e.Token), Worker: string(e.Worker), Note: e.Note,
				}
				if !e.Txid.IsZero() {
					ev.Txid = e.Txid.Short()
				}
				if !e.RetiredTxid.IsZero() {
					ev.Retired = e.RetiredTxid.Short()
				}
				if e.Token < lastToken {
					ev.Flag = "token went back"
				}
				if !sluice.CanTransition(e.From, e.To) && e.From != sluice.None {
					ev.Flag = strings.TrimPrefix(ev.Flag+"; illegal edge", "; ")
				}
				lastToken = max(lastToken, e.Token)
				lg.Events = append(lg.Events, ev)
			}
			for _, e := range events {
				if _, ok := mentions(e, names[i:i+1]); !ok {
					continue
				}
				if len(lg.Trace) == traceLinesMax {
					lg.Capped++
					continue
				}
				lg.Trace = append(lg.Trace, traceLine{fmtDur(e.At), e.Proc, e.Text, classify(e).class})
			}
			p.Ops = append(p.Ops, lg)
		}
	}
	return p
}

// opName is the world's short name for an operation id: the chaos worlds
// number withdrawals in their id's last twelve hex digits and call the n-th
// "opN" in every trace line (scenarios.world.name).
func opName(id sluice.OperationID) string {
	s := string(id)
	if i := strings.LastIndexByte(s, '-'); i >= 0 {
		if n, err := strconv.ParseUint(s[i+1:], 16, 64); err == nil && n > 0 {
			return fmt.Sprintf("op%d", n)
		}
	}
	return s
}

// ---- event classes ----

// kind is how an event is drawn. The order is the legend's order.
type kind struct {
	class, label string
	notable      bool // always drawn, whatever the cap
}

var (
	kCrash    = kind{"crash", "crash", true}
	kPause    = kind{"pause", "pause (bar: its length)", true}
	kPauseW   = kind{"pausew", "pause right before a write", true}
	kWake     = kind{"wake", "wakes from a pause", true}
	kStall    = kind{"stall", "server stall", true}
	kLie      = kind{"lie", "node lied, failed or timed out", true}
	kNode     = kind{"nodefault", "node restart / eviction / lag, missed slots, reorg", true}
	kFenced   = kind{"fenced", "fenced write (token shown)", true}
	kClock    = kind{"clock", "wall clock jump", true}
	kLease    = kind{"lease", "lease expired, taken over (the lapsed token shown)", true}
	kClaim    = kind{"claim", "claim (token shown for the affected ops)", false}
	kWrite    = kind{"write", "state write (token shown for the affected ops)", false}
	kRelease  = kind{"release", "lease released", false}
	kClient   = kind{"client", "client answer", false}
	kOther    = kind{"other", "other event", false}
	legendAll = []kind{kCrash, kPause, kPauseW, kWake, kStall, kLie, kNode, kFenced, kLease, kClock, kClaim, kWrite, kRelease, kClient, kOther}
)

// classify is how a trace event is drawn, read from its fact (an event
// without one is "other").
func classify(e sim.Event) kind {
	f, ok := model.ReadFact(e.Data)
	if !ok {
		return kOther
	}
	switch {
	case f.Fenced || f.Kind == model.FactFencedStop:
		return kFenced
	case (f.Kind == model.FactBroadcast || f.Kind == model.FactLookup) && f.Failed:
		return kLie
	}
	switch f.Kind {
	case model.FactCrash, model.FactStop:
		return kCrash
	case model.FactPauseBeforeWrite:
		return kPauseW
	case model.FactPause:
		return kPause
	case model.FactWake:
		return kWake
	case model.FactStall:
		return kStall
	case model.FactNodeRestart, model.FactEvict, model.FactMissedSlots, model.FactNodeLag, model.FactReorg, model.FactOddExecution:
		return kNode
	case model.FactStoreStall:
		return kStall
	case model.FactClockJump:
		return kClock
	case model.FactLeaseExpired:
		return kLease
	case model.FactClaim:
		return kClaim
	case model.FactCAS:
		return kWrite
	case model.FactRelease:
		return kRelease
	case model.FactClientPost:
		return kClient
	}
	return kOther
}

// mentions reports whether the event's fact concerns one of ops, and
// returns the first it names.
func mentions(e sim.Event, ops []string) (string, bool) {
	f, ok := model.ReadFact(e.Data)
	if !ok {
		return "", false
	}
	for _, o := range f.Ops() {
		if slices.Contains(ops, o) {
			return o, true
		}
	}
	return "", false
}

// ---- lanes ----

// lanesMax bounds how many lanes are drawn one process each. Workers, the
// node and the world's own processes always get a lane, as do the clients
// and servers of the operations the violations name; the rest of the
// clients, servers and the reader share one lane per group.
const lanesMax = 48

// marksMax bounds the ordinary marks drawn (claims, writes, releases,
// client answers, reads): notable marks (faults, fences) are always drawn.
// A chaos run has about 1,100 events; ten times that still draws.
const marksMax = 6000

type lane struct {
	key   string // sort key
	label string
	procs int
	group bool
}

// laneOf names the lane for a process. affected is the set of client
// numbers of the violating operations, as "c49".
func laneOf(proc string, affected []string) (key, label string, group bool) {
	base := proc
	srv := strings.HasPrefix(proc, "srv-")
	if srv {
		base = strings.TrimPrefix(proc, "srv-")
		if i := strings.LastIndexByte(base, '.'); i >= 0 {
			base = base[:i]
		}
	}
	switch {
	case proc == "":
		return "9", "world", false
	case isWorker(proc):
		num, inc := workerNum(proc)
		return fmt.Sprintf("0 %06d %06d", num, inc), proc, false
	case proc == "chain" || proc == "node":
		return "1 " + proc, proc, false
	case base == "reader":
		if srv {
			return "6 reader servers", "reader servers", true
		}
		return "5 reader", "reader", false
	case strings.HasPrefix(base, "c") && len(base) > 1 && base[1] >= '0' && base[1] <= '9':
		num := strings.TrimRight(base[1:], "'*")
		if slices.Contains(affected, "c"+num) {
			n, _ := strconv.Atoi(num)
			return fmt.Sprintf("3 %06d %s", n, proc), proc, false
		}
		if srv {
			return "8 servers", "other servers", true
		}
		return "7 clients", "other clients", true
	}
	return "2 " + proc, proc, false // conductor, restarters, anything new
}

func isWorker(p string) bool {
	return len(p) > 1 && p[0] == 'w' && p[1] >= '0' && p[1] <= '9'
}

func workerNum(p string) (int, int) {
	num, inc, _ := strings.Cut(p[1:], ".")
	n, _ := strconv.Atoi(num)
	i, _ := strconv.Atoi(inc)
	return n, i
}

// swimlanes draws the trace as one lane per process (see laneOf), time
// running left to right. Marks carry a <title> with the event's full line.
func swimlanes(events []sim.Event, virtual time.Duration, affectedOps []string) (template.HTML, string) {
	if len(events) == 0 {
		return "", "The re-run recorded no events."
	}
	var affected []string
	for _, n := range affectedOps {
		if num, ok := strings.CutPrefix(n, "op"); ok {
			affected = append(affected, "c"+num)
		}
	}
	end := virtual
	for _, e := range events {
		end = max(end, e.At)
	}
	// Lanes, in a fixed order.
	var lanes []lane
	laneIdx := map[string]int{} // lookups only; order comes from lanes
	procLane := map[string]string{}
	for _, e := range events {
		if _, ok := procLane[e.Proc]; ok {
			continue
		}
		key, label, group := laneOf(e.Proc, affected)
		procLane[e.Proc] = key
		if i, ok := laneIdx[key]; ok {
			lanes[i].procs++
			continue
		}
		laneIdx[key] = len(lanes)
		lanes = append(lanes, lane{key, label, 1, group})
	}
	// Past the cap, individual lanes of the same group fold too: worker
	// incarnations stay, clients of affected ops fold into one lane.
	if len(lanes) > lanesMax {
		for _, e := range events {
			if strings.HasPrefix(procLane[e.Proc], "3 ") {
				procLane[e.Proc] = "4 affected"
			}
		}
		var kept []lane
		n := 0
		for _, l := range lanes {
			if strings.HasPrefix(l.key, "3 ") {
				n += l.procs
				continue
			}
			kept = append(kept, l)
		}
		if n > 0 {
			kept = append(kept, lane{"4 affected", "affected ops' clients", n, true})
		}
		lanes = kept
	}
	slices.SortFunc(lanes, func(a, b lane) int { return cmp.Compare(a.key, b.key) })
	for i, l := range lanes {
		laneIdx[l.key] = i
	}

	const labelW, laneH, top, right = 200, 22, 28, 24
	secs := end.Seconds()
	// Fit the page's 1180 px when the run is short enough to stay legible
	// at 4 px a second; longer runs scroll inside their container.
	pxPerSec := max(4.0, min(12.0, 930/max(secs, 1)))
	plotW := int(secs*pxPerSec) + 1
	width := labelW + plotW + right
	height := top + laneH*len(lanes) + 10
	x := func(d time.Duration) float64 { return float64(labelW) + d.Seconds()*pxPerSec }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="lanes" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="swimlane timeline">`, width, height, width, height)
	for i, l := range lanes {
		y := top + i*laneH
		cls := "lane"
		if i%2 == 1 {
			cls += " odd"
		}
		label := l.label
		if l.group {
			label = fmt.Sprintf("%s (%d)", l.label, l.procs)
		}
		fmt.Fprintf(&b, `<rect class="%s" x="0" y="%d" width="%d" height="%d"/><text class="lanelabel" x="6" y="%d">%s</text>`,
			cls, y, width, laneH, y+15, esc(label))
	}
	// Axis: a tick every 10 s (every 60 s on long runs).
	step := 10
	if secs > 400 {
		step = 60
	}
	for s := 0; float64(s) <= secs; s += step {
		xx := x(time.Duration(s) * time.Second)
		fmt.Fprintf(&b, `<line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text class="axis" x="%.1f" y="%d" text-anchor="middle">%ds</text>`,
			xx, top-4, xx, height-10, xx, top-8, s)
	}
	drawn, skipped := 0, 0
	var labels strings.Builder
	for _, e := range events {
		k := classify(e)
		affected, mentionsAffected := mentions(e, affectedOps)
		f, _ := model.ReadFact(e.Data)
		if !k.notable && !mentionsAffected {
			if drawn >= marksMax {
				skipped++
				continue
			}
			drawn++
		}
		y := top + laneIdx[procLane[e.Proc]]*laneH + laneH/2
		xx := x(e.At)
		title := esc(e.Describe())
		switch k {
		case kPause, kPauseW, kStall:
			d := f.Dur
			fmt.Fprintf(&b, `<rect class="m %s" x="%.1f" y="%d" width="%.1f" height="8"><title>%s</title></rect>`,
				k.class, xx, y-4, max(d.Seconds()*pxPerSec, 2), title)
		case kCrash:
			fmt.Fprintf(&b, `<path class="m crash" d="M%.1f,%d l8,8 m0,-8 l-8,8"><title>%s</title></path>`, xx-4, y-4, title)
		case kFenced:
			fmt.Fprintf(&b, `<path class="m fenced" d="M%.1f,%d l5,6 l-5,6 l-5,-6 z"><title>%s</title></path>`, xx, y-6, title)
		case kLie, kNode:
			fmt.Fprintf(&b, `<path class="m %s" d="M%.1f,%d l5,9 l-10,0 z"><title>%s</title></path>`, k.class, xx, y-5, title)
		default:
			r := 2.5
			if mentionsAffected {
				r = 4
			}
			fmt.Fprintf(&b, `<circle class="m %s" cx="%.1f" cy="%d" r="%.1f"><title>%s</title></circle>`, k.class, xx, y, r, title)
		}
		if k == kFenced || k == kLease || (mentionsAffected && (k == kClaim || k == kWrite)) {
			t := f.Token
			if mentionsAffected {
				t = f.TokenOf(affected)
			} else if t == 0 && len(f.Claimed) > 0 {
				t = f.Claimed[0].Token
			}
			if t != 0 {
				fmt.Fprintf(&labels, `<text class="token" x="%.1f" y="%d">t%d</text>`, xx+4, y-5, t)
			}
		}
	}
	b.WriteString(labels.String())
	b.WriteString(`</svg>`)

	note := fmt.Sprintf("%d events in %d lanes, %.0f px per virtual second. Every worker incarnation, the chain and the world's own processes have a lane; "+
		"the clients and server processes of the operations named by the violations have one each; all other clients, their server processes "+
		"and the reader's servers share one lane per group (the count of processes in brackets). Hover a mark for its trace line.",
		len(events), len(lanes), pxPerSec)
	if skipped > 0 {
		note += fmt.Sprintf(" %d ordinary marks (claims, writes, releases, answers) beyond the first %d were left out; faults, fences and every event of the affected operations are always drawn.", skipped, marksMax)
	}
	return template.HTML(b.String()), note
}

// legend is the marks' key, drawn with the same shapes as the timeline.
func legend() template.HTML {
	var b strings.Builder
	b.WriteString(`<ul class="legend">`)
	for _, k := range legendAll {
		var shape string
		switch k {
		case kPause, kPauseW, kStall:
			shape = fmt.Sprintf(`<rect class="m %s" x="1" y="4" width="18" height="8"/>`, k.class)
		case kCrash:
			shape = `<path class="m crash" d="M6,4 l8,8 m0,-8 l-8,8"/>`
		case kFenced:
			shape = `<path class="m fenced" d="M10,2 l5,6 l-5,6 l-5,-6 z"/>`
		case kLie, kNode:
			shape = fmt.Sprintf(`<path class="m %s" d="M10,3 l5,9 l-10,0 z"/>`, k.class)
		default:
			shape = fmt.Sprintf(`<circle class="m %s" cx="10" cy="8" r="4"/>`, k.class)
		}
		fmt.Fprintf(&b, `<li><svg width="20" height="16" viewBox="0 0 20 16" aria-hidden="true">%s</svg>%s</li>`, shape, esc(k.label))
	}
	b.WriteString(`</ul>`)
	return template.HTML(b.String())
}
