package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// Fresh seeds: a fixed range (-seed-start N) is a regression suite; a
// random start explores seeds nobody ran before, and a time budget
// (-duration) runs as many as fit. Both record what they ran, so that any
// failure they find is reproduced by its seed alone.

// seedStartRandomMax bounds a random start: far from the ranges people
// type (1..10^6), and small enough to print and type back.
const seedStartRandomMax = 1 << 48

// durationSeedsMax is the seed cap of a time-bounded run when -seeds is not
// given: about half an hour at this machine's 490 seeds/s.
const durationSeedsMax = 1_000_000

// parseSeedRange reads -seed-start (a number or "random") and checks the
// flags that shape the seed range: -duration and -recheck.
func (o *options) parseSeedRange(start string, set map[string]bool) error {
	switch start {
	case "random":
		o.seedRandom = true
		// Not simulated code: the choice of a range is the one thing a
		// fresh run leaves to chance, and it is printed and recorded.
		o.seedStart = 1 + rand.Uint64N(seedStartRandomMax)
	default:
		v, err := strconv.ParseUint(start, 10, 64)
		if err != nil {
			return fmt.Errorf("-seed-start %q: want a non-negative integer or random", start)
		}
		o.seedStart = v
	}
	if o.seedRandom && set["shard"] {
		return errors.New("-seed-start random with -shard: every shard would draw its own start; draw one start (any number) and give it to every shard")
	}
	if o.seedTimeout < 0 {
		return fmt.Errorf("-seed-timeout %s: want a positive duration, or 0 to wait for ever", o.seedTimeout)
	}
	if o.duration < 0 {
		return fmt.Errorf("-duration %s: want a positive duration", o.duration)
	}
	if set["duration"] {
		if o.duration == 0 {
			return errors.New("-duration 0: want a positive duration (drop the flag to run exactly -seeds)")
		}
		if set["shard"] {
			return errors.New("-duration with -shard: shards would stop at different seeds and leave holes in the range; give -seeds")
		}
		if !o.runsSeedRange() {
			return errors.New("-duration bounds a run of a seed range: drop it (or -mutants, -strategy exhaustive, -seed, -replay, -shrink)")
		}
		if !set["seeds"] {
			o.seeds = durationSeedsMax
		}
	}
	if o.regressions != "" && !o.runsSeedRange() {
		return errors.New("-regressions keeps failures of a seed range of the real core: drop it (or -mutants, -strategy exhaustive, -seed, -replay, -shrink)")
	}
	if o.regressions != "" && o.mutant != "" {
		// A mutant's failures are the checker working, never kept.
		return errors.New("-regressions keeps failures of the real core, and a mutant's are expected: drop -regressions or -mutant")
	}
	if o.requireCov && !o.runsSeedRange() {
		return errors.New("-require-coverage judges a seed range: drop it (or -mutants, -strategy exhaustive, -seed, -replay, -shrink)")
	}
	if o.seeds > 0 && o.seedStart > math.MaxUint64-uint64(o.seeds-1) {
		return fmt.Errorf("-seed-start %d with -seeds %d: the range runs past the largest seed (%d); start lower", o.seedStart, o.seeds, uint64(math.MaxUint64))
	}
	if !(o.recheck >= 0 && o.recheck <= 1) { // NaN fails both
		return fmt.Errorf("-recheck %g: want a fraction from 0 to 1", o.recheck)
	}
	if o.recheck > 0 && !o.runsSeedRange() {
		return errors.New("-recheck re-runs seeds of a seed range: drop it (or -mutants, -strategy exhaustive, -seed, -replay, -shrink)")
	}
	return nil
}

// runsSeedRange is whether the flags run a range of seeds of one world
// (the mode the flags of this file shape), rather than the kill table,
// exhaustive search, one seed, a replay or a shrink.
func (o *options) runsSeedRange() bool {
	return !(o.mutants || o.strategy == "exhaustive" || o.seedSet || o.replay != "" || o.shrink != "")
}
