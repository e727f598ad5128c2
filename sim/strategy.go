package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"time"
)

// Ask is one decision put to a strategy: its kind, the number of
// alternatives, and for a two-way Chance the probability of yes that the
// random strategy should use (0 means uniform).
type Ask struct {
	Kind string
	N    int
	P    float64
	// Procs, for a scheduling decision ("sched"), are the ids of the
	// runnable processes the alternatives stand for, in order; Current is
	// the id of the process that ran the step before (-1 for none).
	Procs   []int
	Current int
}

// Choice is one entry of the tape: a decision and the alternative picked.
// Recording the kind and the number of alternatives lets a replay notice the
// first point where the code no longer asks the same question.
type Choice struct {
	Kind string `json:"kind"`
	N    int    `json:"n"`
	Pick int    `json:"pick"`
}

// Strategy is a source of tapes. index is the position on the tape the
// answer will take.
type Strategy interface {
	Pick(a Ask, index int) (int, error)
}

// Random answers from a PCG stream seeded by the seed. It draws from the
// PCG itself, not through a rand.Rand: the source interface was a dynamic
// call on every decision. intN and float64 draw exactly what rand.Rand's
// IntN and Float64 draw from the same stream (TestRandomDrawsAsRand), so
// every seed keeps its tape.
type Random struct{ pcg rand.PCG }

// NewRandom seeds a random strategy. The second PCG word is fixed so that a
// seed names the same stream everywhere.
func NewRandom(seed uint64) *Random {
	r := &Random{}
	r.pcg.Seed(seed, 0x5eed_51c3_d00d_f00d)
	return r
}

// Pick answers uniformly, or with probability P for pick 1 on a Chance.
func (r *Random) Pick(a Ask, _ int) (int, error) {
	if a.N == 2 && a.P > 0 {
		return r.chance(a.P), nil
	}
	return r.intN(a.N), nil
}

// chance is a two-way Chance's pick: 1 with probability p.
func (r *Random) chance(p float64) int {
	if r.float64() < p {
		return 1
	}
	return 0
}

// intN is uniform in [0, n), n > 0: the high word of a 128-bit product,
// redrawn in the rare case the low word falls in the biased sliver
// (Lemire's method, as rand.Rand uses on 64-bit platforms; on 32-bit ones
// rand.Rand draws small bounds another way, and this does not, so a seed
// names the same tape on every platform).
func (r *Random) intN(n int) int {
	if n <= 0 {
		panic("sim: intN of a non-positive bound")
	}
	m := uint64(n)
	if m&(m-1) == 0 {
		return int(r.pcg.Uint64() & (m - 1))
	}
	hi, lo := bits.Mul64(r.pcg.Uint64(), m)
	if lo < m {
		for thresh := -m % m; lo < thresh; {
			hi, lo = bits.Mul64(r.pcg.Uint64(), m)
		}
	}
	return int(hi)
}

// float64 is uniform in [0, 1), from the top 53 bits' worth of a draw.
func (r *Random) float64() float64 { return float64(r.pcg.Uint64()<<11>>11) / (1 << 53) }

// PCT is probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi
// and Nagarakatte, ASPLOS 2010): every process gets a random priority when
// it is first seen, the scheduler always runs the highest-priority runnable
// process, and at depth-1 random scheduling steps the running process's
// priority drops below every initial one. A bug that needs d ordering
// constraints is found with probability at least 1/(n*k^(d-1)) per run.
// Decisions other than scheduling are drawn at random from the same seeded
// stream, as Random would.
type PCT struct {
	Random
	depth    int
	prio     map[int]int
	changeAt map[int]int // scheduling step -> the priority it assigns
	sched    int
}

// NewPCT seeds a PCT strategy for runs of about steps scheduling decisions.
func NewPCT(seed uint64, depth, steps int) *PCT {
	p := &PCT{Random: *NewRandom(seed), depth: depth, prio: map[int]int{}, changeAt: map[int]int{}}
	for j := range depth - 1 {
		p.changeAt[1+p.intN(max(steps, 1))] = depth - 1 - j
	}
	return p
}

// Pick runs the highest-priority runnable process.
func (p *PCT) Pick(a Ask, i int) (int, error) {
	if a.Kind != "sched" || len(a.Procs) != a.N {
		return p.Random.Pick(a, i)
	}
	p.sched++
	best := -1
	for k, id := range a.Procs {
		if _, ok := p.prio[id]; !ok {
			p.prio[id] = p.depth + p.intN(1<<30)
		}
		if best < 0 || p.prio[id] > p.prio[a.Procs[best]] {
			best = k
		}
	}
	if low, ok := p.changeAt[p.sched]; ok {
		p.prio[a.Procs[best]] = low
		best = -1
		for k, id := range a.Procs {
			if best < 0 || p.prio[id] > p.prio[a.Procs[best]] {
				best = k
			}
		}
	}
	return best, nil
}

// Replay answers from a recorded tape and checks that every question is the
// one the tape recorded.
type Replay struct{ tape []Choice }

// NewReplay replays tape.
func NewReplay(tape []Choice) *Replay { return &Replay{tape: tape} }

// Pick returns the recorded pick, or a *Divergence.
func (r *Replay) Pick(a Ask, i int) (int, error) {
	if i >= len(r.tape) {
		return 0, &Divergence{Index: i, Got: a, TapeEnded: true}
	}
	c := r.tape[i]
	if c.Kind != a.Kind || c.N != a.N || c.Pick >= a.N {
		return 0, &Divergence{Index: i, Want: c, Got: a}
	}
	return c.Pick, nil
}

// Divergence is a replay whose run asked a different question than the tape
// recorded, or ran past its end.
type Divergence struct {
	Index     int
	Want      Choice
	Got       Ask
	TapeEnded bool
}

func (d *Divergence) Error() string {
	if d.TapeEnded {
		return fmt.Sprintf("replay diverged at choice %d: the tape ended, the run asked %q of %d", d.Index, d.Got.Kind, d.Got.N)
	}
	return fmt.Sprintf("replay diverged at choice %d: the tape has %q of %d (pick %d), the run asked %q of %d",
		d.Index, d.Want.Kind, d.Want.N, d.Want.Pick, d.Got.Kind, d.Got.N)
}

// Event is a recorded happening: the step and tape position at which it
// happened, the virtual time, the process, and a one-line description.
type Event struct {
	Step int           `json:"step"`
	Tape int           `json:"tape"`
	At   time.Duration `json:"at_ns"`
	Proc string        `json:"proc"`
	Text string        `json:"text"`
	// Data is the event's fields as the world defines them (opaque JSON
	// to the kernel): what reports and tools read instead of the text.
	Data json.RawMessage `json:"data,omitempty"`
}

// Same reports whether two events are one: same point, text and data.
func (e Event) Same(o Event) bool {
	return e.Step == o.Step && e.Tape == o.Tape && e.At == o.At && e.Proc == o.Proc && e.Text == o.Text && bytes.Equal(e.Data, o.Data)
}

// Describe is the event's stable one-line form, e.g.
// "t=93.000s w2 cas op7 signing->signed token=4".
func (e Event) Describe() string {
	if e.Proc == "" {
		return fmt.Sprintf("t=%.3fs %s", e.At.Seconds(), e.Text)
	}
	return fmt.Sprintf("t=%.3fs %s %s", e.At.Seconds(), e.Proc, e.Text)
}
