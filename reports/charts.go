package reports

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"sluicesim/sluice"
)

// SVG is built with a strings.Builder rather than a template: it is mostly
// numbers, and every piece of text goes through esc.
var esc = template.HTMLEscapeString

// ---- the state machine ----

type pos struct{ x, y int }

// layout places the eleven nodes by hand so the diagram never moves between
// reports: the happy path along the top row, the dead ends and review below, and
// the rebuild edges (back to signing) arching above.
var layout = [sluice.StateCount]pos{
	sluice.None:         {60, 170},
	sluice.Requested:    {185, 170},
	sluice.Validated:    {310, 170},
	sluice.Signing:      {435, 170},
	sluice.Signed:       {560, 170},
	sluice.Broadcasting: {685, 170},
	sluice.Broadcast:    {810, 170},
	sluice.Confirmed:    {935, 170},
	sluice.Rejected:     {247, 330},
	sluice.Failed:       {685, 330},
	sluice.Review:       {935, 330},
}

const nodeW, nodeH = 104, 34

// stateDiagram draws the state machine with each edge's hit count. Edges
// never hit are red and dashed; counts on pairs that are not edges at all
// (only a broken core makes them) are returned as illegal, and the names of
// unhit edges as unhit.
func stateDiagram(tr *[sluice.StateCount][sluice.StateCount]int) (template.HTML, []illegalEdge, []string) {
	edges := append([]sluice.Transition{{From: sluice.None, To: sluice.Requested, Why: "created by intake"}}, sluice.Transitions()...)
	var b strings.Builder
	b.WriteString(`<svg class="diagram" viewBox="0 0 1000 370" width="1000" height="370" role="img" aria-label="state machine with transition counts">`)
	b.WriteString(`<defs>` +
		`<marker id="arr" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker>` +
		`<marker id="arr-unhit" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c62828"/></marker>` +
		`</defs>`)
	var unhit []string
	var labels strings.Builder
	for _, e := range edges {
		n := tr[e.From][e.To]
		cls, marker := "edge", "arr"
		if n == 0 {
			cls, marker = "edge unhit", "arr-unhit"
			unhit = append(unhit, e.From.String()+"→"+e.To.String())
		}
		path, lx, ly := edgePath(e.From, e.To)
		fmt.Fprintf(&b, `<path class="%s" d="%s" marker-end="url(#%s)"><title>%s → %s: %d (%s)</title></path>`,
			cls, path, marker, e.From, e.To, n, esc(e.Why))
		label := fmt.Sprint(n)
		if n == 0 {
			label = "0 never hit"
		}
		fmt.Fprintf(&labels, `<text class="count%s" x="%d" y="%d">%s</text>`, map0(n, " unhit"), lx, ly, label)
	}
	b.WriteString(labels.String())
	for s := sluice.None; s <= sluice.Rejected; s++ {
		p := layout[s]
		cls := "node"
		if s.Terminal() {
			cls += " terminal"
		}
		if s == sluice.None {
			cls += " none"
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="%d" width="%d" height="%d" rx="6"/><text class="state" x="%d" y="%d">%s</text>`,
			cls, p.x-nodeW/2, p.y-nodeH/2, nodeW, nodeH, p.x, p.y+5, s)
	}
	b.WriteString(`</svg>`)
	var illegal []illegalEdge
	for from := sluice.None; from <= sluice.Rejected; from++ {
		for to := sluice.None; to <= sluice.Rejected; to++ {
			if n := tr[from][to]; n > 0 && !slices.ContainsFunc(edges, func(e sluice.Transition) bool { return e.From == from && e.To == to }) {
				illegal = append(illegal, illegalEdge{from.String(), to.String(), n})
			}
		}
	}
	return template.HTML(b.String()), illegal, unhit
}

func map0(n int, s string) string {
	if n == 0 {
		return s
	}
	return ""
}

// edgePath returns an SVG path between two nodes and where its label goes.
// Edges back to signing (rebuilds) arch above the row, higher the farther
// they come from, so the three never overlap.
func edgePath(from, to sluice.State) (string, int, int) {
	a, c := layout[from], layout[to]
	switch {
	case a.y == c.y && c.x < a.x: // a rebuild: arch above
		lift := 30 + (a.x-c.x)/125*28
		top := a.y - nodeH/2
		x1, x2 := a.x-12, c.x+12
		cy := top - lift*2
		mx := (x1 + x2) / 2
		return fmt.Sprintf("M%d,%d Q%d,%d %d,%d", x1, top, mx, cy, x2, top), mx, top - lift - 4
	case a.y == c.y: // along the row
		x1, x2 := a.x+nodeW/2, c.x-nodeW/2
		return fmt.Sprintf("M%d,%d L%d,%d", x1, a.y, x2, c.y), (x1 + x2) / 2, a.y - 24
	default: // down to a dead end
		x1, y1 := a.x, a.y+nodeH/2
		x2, y2 := c.x+(a.x-c.x)/4, c.y-nodeH/2
		return fmt.Sprintf("M%d,%d L%d,%d", x1, y1, x2, y2), (x1+x2)/2 + (x1-x2)/8, (y1 + y2) / 2
	}
}

// ---- distributions ----

// histStats are the count and percentiles of a histogram whose bucket i
// holds values in [i, i+1).
type histStats struct {
	N             int
	P50, P95, P99 int // bucket index: the value lies in [P, P+1)
	Max           int
}

func histogramStats(h []int) histStats {
	var s histStats
	for i, n := range h {
		s.N += n
		if n > 0 {
			s.Max = i
		}
	}
	if s.N == 0 {
		return s
	}
	pct := func(q float64) int {
		// The smallest bucket at which the cumulative count reaches q of N
		// (nearest-rank): what "p95" means in every monitoring tool.
		rank := int(q*float64(s.N) + 0.999999)
		rank = max(rank, 1)
		cum := 0
		for i, n := range h {
			cum += n
			if cum >= rank {
				return i
			}
		}
		return len(h) - 1
	}
	s.P50, s.P95, s.P99 = pct(0.50), pct(0.95), pct(0.99)
	return s
}

type stepStats struct {
	N             int
	Min, P50, Max int
}

// stepsHistogram bins steps per seed into at most barsMax bins of equal
// integer width, starting at the smallest value.
func stepsHistogram(steps []int) (stepStats, []int, int) {
	var s stepStats
	s.N = len(steps)
	if s.N == 0 {
		return s, nil, 1
	}
	sorted := slices.Clone(steps)
	slices.Sort(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	s.P50 = sorted[(len(sorted)-1)/2]
	width := max(1, (s.Max-s.Min)/barsMax+1)
	h := make([]int, (s.Max-s.Min)/width+1)
	for _, v := range steps {
		h[(v-s.Min)/width]++
	}
	return s, h, width
}

const barsMax = 60

// barChart draws a histogram whose bucket i is the value i. Long histograms
// are merged into at most barsMax bars.
func barChart(h []int, xlabel, ylabel string) template.HTML {
	width := max(1, (len(h)+barsMax-1)/barsMax)
	merged := make([]int, (len(h)+width-1)/width)
	for i, n := range h {
		merged[i/width] += n
	}
	return barChartFrom(merged, 0, width, xlabel, ylabel)
}

// barChartFrom draws bars where bar i covers values [lo+i*width, lo+(i+1)*width).
func barChartFrom(h []int, lo, width int, xlabel, ylabel string) template.HTML {
	const w, hgt, left, bottom, top = 360, 150, 44, 34, 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, w, hgt, w, hgt, esc(xlabel))
	if len(h) == 0 {
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d">no data</text></svg>`, w/2, hgt/2)
		return template.HTML(b.String())
	}
	peak := slices.Max(h)
	plotW, plotH := w-left-8, hgt-bottom-top
	bw := float64(plotW) / float64(len(h))
	for i, n := range h {
		if n == 0 {
			continue
		}
		bh := max(1, n*plotH/max(peak, 1))
		from := lo + i*width
		rng := fmt.Sprint(from)
		if width > 1 {
			rng = fmt.Sprintf("%d–%d", from, from+width-1)
		}
		fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s: %d %s</title></rect>`,
			float64(left)+float64(i)*bw, top+plotH-bh, max(bw-1, 0.5), bh, rng, n, esc(ylabel))
	}
	fmt.Fprintf(&b, `<line class="axisline" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, top+plotH, w-8, top+plotH)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="end">%d</text>`, left-4, top+8, peak)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="end">0</text>`, left-4, top+plotH)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="start">%d</text>`, left, top+plotH+14, lo)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="end">%d</text>`, w-8, top+plotH+14, lo+len(h)*width-1)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">%s</text>`, left+plotW/2, hgt-4, esc(xlabel))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
