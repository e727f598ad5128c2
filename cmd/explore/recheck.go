package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"sluicesim/scenarios"
)

// The determinism re-check (-recheck F), as FoundationDB does it: a
// fraction of the seeds run a second time in the same process, after
// every other seed, and must make the same choices (the tape's digest) and
// reach the same verdict. What it catches is state that leaks from run to
// run (a pool, a cache, a package variable), map order reaching a
// decision, or anything else that makes a seed not the whole story; the
// fingerprint tests pin a fixed sample, this samples whatever ran.

// recheckPicked says whether seed is one of the fraction re-run: a fixed
// function of the seed (not of the order seeds finished in), so the same
// flags re-check the same seeds.
func recheckPicked(seed uint64, fraction float64) bool {
	if fraction <= 0 {
		return false
	}
	if fraction >= 1 {
		return true
	}
	// splitmix64: consecutive seeds map to unrelated values.
	z := seed + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11)/float64(1<<53) < fraction
}

// runFingerprint is what a re-run must reproduce.
type runFingerprint struct {
	tape    uint64
	steps   int
	verdict string
}

func fingerprintOf(r *scenarios.Result) runFingerprint {
	v, _ := json.Marshal(r.Violations) // plain strings
	return runFingerprint{tape: r.TapeDigest, steps: r.Steps, verdict: string(v)}
}

// recheckSet collects the first runs of the picked seeds.
type recheckSet struct {
	fraction float64
	mu       sync.Mutex
	first    map[uint64]runFingerprint
}

func newRecheckSet(fraction float64) *recheckSet {
	return &recheckSet{fraction: fraction, first: map[uint64]runFingerprint{}}
}

// options adds what a run must record for the re-check.
func (rs *recheckSet) options(seed uint64, ro scenarios.Options) scenarios.Options {
	if rs != nil && recheckPicked(seed, rs.fraction) {
		ro.TapeDigest = true
	}
	return ro
}

// note keeps the first run of a picked seed.
func (rs *recheckSet) note(r *scenarios.Result) {
	if rs == nil || !recheckPicked(r.Seed, rs.fraction) {
		return
	}
	rs.mu.Lock()
	rs.first[r.Seed] = fingerprintOf(r)
	rs.mu.Unlock()
}

// recheckMismatch is a seed whose second run differed from its first.
type recheckMismatch struct {
	Seed uint64 `json:"seed"`
	What string `json:"what"` // which part differed
}

// rerun runs every picked seed again (in parallel, so in another order and
// beside other seeds than the first time) and returns the seeds that
// differ, lowest first.
// watch makes the watchdog of the re-run (explore's, naming each run by
// the seed it re-runs).
func (rs *recheckSet) rerun(cfg scenarios.Config, ro scenarios.Options, parallel int, watch func(seedOf func(k int) uint64) *seedWatch) (int, []recheckMismatch) {
	seeds := make([]uint64, 0, len(rs.first))
	for s := range rs.first {
		seeds = append(seeds, s)
	}
	slices.Sort(seeds)
	ro.TapeDigest = true
	var mu sync.Mutex
	var bad []recheckMismatch
	seedAt := func(k int) uint64 { return seeds[len(seeds)-1-k] } // the other way round from the first pass
	forEachSeed(len(seeds), parallel, nil, watch(seedAt), func(k int) {
		seed := seedAt(k)
		again := fingerprintOf(scenarios.Run(cfg, seed, ro))
		first := rs.first[seed]
		what := ""
		switch {
		case again.tape != first.tape:
			what = fmt.Sprintf("the choice tape differs (digest %016x, then %016x)", first.tape, again.tape)
		case again.steps != first.steps:
			what = fmt.Sprintf("the steps differ (%d, then %d)", first.steps, again.steps)
		case again.verdict != first.verdict:
			what = fmt.Sprintf("the verdict differs (%s, then %s)", first.verdict, again.verdict)
		default:
			return
		}
		mu.Lock()
		bad = append(bad, recheckMismatch{Seed: seed, What: what})
		mu.Unlock()
	})
	slices.SortFunc(bad, func(a, b recheckMismatch) int {
		switch {
		case a.Seed < b.Seed:
			return -1
		case a.Seed > b.Seed:
			return 1
		}
		return 0
	})
	return len(seeds), bad
}

// printRecheck says what the re-check found.
func printRecheck(w io.Writer, fraction float64, n int, bad []recheckMismatch) {
	if len(bad) == 0 {
		fmt.Fprintf(w, "\ndeterminism re-check (-recheck %g): %d seeds run again after the others, every tape and verdict identical\n", fraction, n)
		return
	}
	fmt.Fprintf(w, "\ndeterminism re-check (-recheck %g): %d of %d seeds run again differ; a seed is no longer the whole story:\n", fraction, len(bad), n)
	for i, m := range bad {
		if i == 10 {
			fmt.Fprintf(w, "  ... and %d more\n", len(bad)-10)
			break
		}
		fmt.Fprintf(w, "  seed %d: %s\n", m.Seed, m.What)
	}
}
