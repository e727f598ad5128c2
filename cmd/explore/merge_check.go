package main

import (
	"fmt"
	"maps"
	"slices"

	"sluicesim/model"
	"sluicesim/reports"
	"sluicesim/scenarios"
)

// consistent checks that a summary's parts agree with one another, with
// its shard and with this build's names. A merge adds the counts up and
// reports their sum as one run's: a summary edited by hand, cut short, or
// of a run that -duration stopped early would make it report a run that
// never happened (a failing one as green), so it is refused rather than
// summed. Only relations that every summary explore writes keeps are
// checked (see summary.fill and model.CountOutcomes): requested and
// accepted, for one, are not related, since a mutant of intake accepts
// requests that are not valid.
func consistent(sf shardFile) error {
	for _, check := range []func(*shardFile) error{
		checkSeedCounts, checkInShard, checkFailingSeeds, checkPerInvariant, checkViolations,
		checkOutcomes, checkFaults, checkCoverage, checkRecheck, checkHistograms,
	} {
		if err := check(&sf); err != nil {
			return err
		}
	}
	return nil
}

func checkSeedCounts(sf *shardFile) error {
	s := &sf.sum
	if want := shardSize(s.Seeds, sf.index, sf.shards); s.SeedsRun != want {
		return fmt.Errorf("seeds_run %d, but shard %s of %d seeds has %d (a run cut short by -duration does not merge)", s.SeedsRun, s.Shard, s.Seeds, want)
	}
	if s.SeedsFailed < 0 || s.SeedsFailed > s.SeedsRun {
		return fmt.Errorf("seeds_failed %d: want 0 to seeds_run %d", s.SeedsFailed, s.SeedsRun)
	}
	if s.ViolationsShown != len(s.Violations) {
		return fmt.Errorf("violations_listed %d, but %d violations listed", s.ViolationsShown, len(s.Violations))
	}
	if len(s.Violations) > violationsListedMax {
		return fmt.Errorf("%d violations listed: a summary lists at most %d", len(s.Violations), violationsListedMax)
	}
	return nil
}

// checkInShard: every seed the summary names is one of its shard's.
func checkInShard(sf *shardFile) error {
	s := &sf.sum
	last := s.SeedStart + uint64(s.Seeds) - 1
	for _, seed := range s.FailingSeeds {
		if !inShard(seed, s.SeedStart, s.Seeds, sf.index, sf.shards) {
			return fmt.Errorf("failing seed %d is not in shard %s of seeds %d..%d", seed, s.Shard, s.SeedStart, last)
		}
	}
	for _, v := range s.Violations {
		if !inShard(v.Seed, s.SeedStart, s.Seeds, sf.index, sf.shards) {
			return fmt.Errorf("a violation of seed %d, which is not in shard %s of seeds %d..%d", v.Seed, s.Shard, s.SeedStart, last)
		}
	}
	return nil
}

// checkFailingSeeds: failing_seeds are the lowest failing seeds, as many
// as the report has pages for, each once, ascending.
func checkFailingSeeds(sf *shardFile) error {
	s := &sf.sum
	if want := min(s.SeedsFailed, reportPagesMax); len(s.FailingSeeds) != want {
		return fmt.Errorf("failing_seeds lists %d seeds, but seeds_failed %d makes it %d (the lowest, at most %d)", len(s.FailingSeeds), s.SeedsFailed, want, reportPagesMax)
	}
	for i := 1; i < len(s.FailingSeeds); i++ {
		if s.FailingSeeds[i] <= s.FailingSeeds[i-1] {
			return fmt.Errorf("failing_seeds %v: not ascending without repeats", s.FailingSeeds)
		}
	}
	return nil
}

// checkPerInvariant: each invariant is one a run can name, and counts
// seeds that failed: no more than seeds_failed, and enough that every
// failing seed violated one.
func checkPerInvariant(sf *shardFile) error {
	s := &sf.sum
	known := scenarios.InvariantNames()
	sum := 0
	for _, name := range sortedKeys(s.PerInvariant) {
		n := s.PerInvariant[name]
		switch {
		case !slices.Contains(known, name):
			return fmt.Errorf("seeds_failed_per_invariant names %q, which is no invariant of this build", name)
		case n < 0:
			return fmt.Errorf("seeds_failed_per_invariant: %s %d is negative", name, n)
		case n > s.SeedsFailed:
			return fmt.Errorf("seeds_failed_per_invariant: %s %d, but only %d seeds failed (seeds_failed), of %d run", name, n, s.SeedsFailed, s.SeedsRun)
		}
		sum += n
	}
	if sum < s.SeedsFailed {
		return fmt.Errorf("seeds_failed %d, but seeds_failed_per_invariant counts %d seed-invariant pairs: every failing seed violated some invariant", s.SeedsFailed, sum)
	}
	return nil
}

// checkViolations: the violations are those of the lowest failing seeds,
// in seed order, each seed's together, cut at violationsListedMax (see
// summary.fill): so their seeds lead failing_seeds, and a list shorter
// than the cut is every failing seed's, which the counts must match
// exactly. The seeds and the seeds per invariant are counted as sets, so
// that each contradiction is caught by its own check.
func checkViolations(sf *shardFile) error {
	s := &sf.sum
	known := scenarios.InvariantNames()
	type hit struct {
		seed      uint64
		invariant string
	}
	seedSet, hits := map[uint64]bool{}, map[hit]bool{}
	for i, v := range s.Violations {
		if !slices.Contains(known, v.Invariant) {
			return fmt.Errorf("violations: seed %d violates %q, which is no invariant of this build", v.Seed, v.Invariant)
		}
		if i > 0 && v.Seed < s.Violations[i-1].Seed {
			return fmt.Errorf("violations: seed %d listed after seed %d: want seed order", v.Seed, s.Violations[i-1].Seed)
		}
		seedSet[v.Seed] = true
		hits[hit{v.Seed, v.Invariant}] = true
	}
	seeds := slices.Sorted(maps.Keys(seedSet))
	perInv := map[string]int{} // seeds listed violating each invariant
	for h := range hits {
		perInv[h.invariant]++
	}
	if len(seeds) > s.SeedsFailed {
		return fmt.Errorf("violations name %d seeds, but seeds_failed is %d", len(seeds), s.SeedsFailed)
	}
	for i := range min(len(seeds), len(s.FailingSeeds)) {
		if seeds[i] != s.FailingSeeds[i] {
			return fmt.Errorf("violations name seed %d where failing_seeds has %d: both list the lowest failing seeds", seeds[i], s.FailingSeeds[i])
		}
	}
	complete := len(s.Violations) < violationsListedMax
	if complete && len(seeds) != s.SeedsFailed {
		return fmt.Errorf("seeds_failed %d, but the violations (all of them: fewer than %d) name %d seeds", s.SeedsFailed, violationsListedMax, len(seeds))
	}
	for _, name := range sortedKeys(perInv) {
		if n, counted := perInv[name], s.PerInvariant[name]; n > counted {
			return fmt.Errorf("seeds_failed_per_invariant: %s %d, but the violations listed show %d seeds violating it", name, counted, n)
		}
	}
	if complete {
		for _, name := range sortedKeys(s.PerInvariant) {
			if n, counted := perInv[name], s.PerInvariant[name]; n != counted {
				return fmt.Errorf("seeds_failed_per_invariant: %s %d, but the violations (all of them: fewer than %d) show %d seeds violating it", name, counted, violationsListedMax, n)
			}
		}
	}
	return nil
}

// checkOutcomes holds the outcomes to what model.CountOutcomes makes of a
// run, and what adding runs keeps: every accepted withdrawal ended in one
// way, each failure and review is tallied by its reason once, and parked
// ones are among the accepted.
func checkOutcomes(sf *shardFile) error {
	o := &sf.sum.Outcomes
	for _, c := range []struct {
		field string
		n     int
	}{{"requested", o.Requested}, {"accepted", o.Accepted}, {"confirmed", o.Confirmed}, {"failed", o.Failed},
		{"rejected", o.Rejected}, {"review", o.Review}, {"open", o.Open}, {"parked", o.Parked}} {
		if c.n < 0 {
			return fmt.Errorf("outcomes: %s %d is negative", c.field, c.n)
		}
	}
	if ended := o.Confirmed + o.Failed + o.Rejected + o.Review + o.Open; ended != o.Accepted {
		return fmt.Errorf("outcomes: accepted %d, but confirmed %d + failed %d + rejected %d + review %d + open %d make %d: each accepted withdrawal ends one way",
			o.Accepted, o.Confirmed, o.Failed, o.Rejected, o.Review, o.Open, ended)
	}
	if o.Parked > o.Accepted {
		return fmt.Errorf("outcomes: parked %d, but only %d accepted", o.Parked, o.Accepted)
	}
	for _, c := range []struct {
		field string
		by    []model.Tally
		total int
		of    string
	}{{"failed_by", o.FailedBy, o.Failed, "failed"}, {"review_by", o.ReviewBy, o.Review, "review"}} {
		sum := 0
		for i, t := range c.by {
			if t.Count < 1 {
				return fmt.Errorf("outcomes: %s: %q counts %d: a reason is listed for at least one withdrawal", c.field, t.Kind, t.Count)
			}
			if i > 0 && t.Kind <= c.by[i-1].Kind {
				return fmt.Errorf("outcomes: %s: %q after %q: want each reason once, sorted", c.field, t.Kind, c.by[i-1].Kind)
			}
			sum += t.Count
		}
		if sum != c.total {
			return fmt.Errorf("outcomes: %s sums to %d, but %s is %d: each is tallied by its reason", c.field, sum, c.of, c.total)
		}
	}
	return nil
}

// checkFaults: each kind is one a run of this build tallies, once, in
// order, and fired no negative number of times.
func checkFaults(sf *shardFile) error {
	known := scenarios.FaultKinds()
	faults := sf.sum.Faults
	for i, t := range faults {
		if _, found := slices.BinarySearch(known, t.Kind); !found {
			return fmt.Errorf("faults: kind %q is no fault of this build", t.Kind)
		}
		if i > 0 && t.Kind <= faults[i-1].Kind {
			return fmt.Errorf("faults: %q after %q: want each kind once, sorted", t.Kind, faults[i-1].Kind)
		}
		if t.Count < 0 {
			return fmt.Errorf("faults: %s %d is negative", t.Kind, t.Count)
		}
	}
	return nil
}

// checkCoverage: each condition is one of the catalog, once, reached by
// no more seeds than ran.
func checkCoverage(sf *shardFile) error {
	s := &sf.sum
	catalog := scenarios.CoverageNames()
	seen := map[string]bool{}
	for _, c := range s.Coverage {
		switch {
		case !slices.Contains(catalog, c.Name):
			return fmt.Errorf("coverage: %q is no condition of the coverage catalog", c.Name)
		case seen[c.Name]:
			return fmt.Errorf("coverage: %q listed twice", c.Name)
		case c.Seeds < 0 || c.Seeds > s.SeedsRun:
			return fmt.Errorf("coverage: %s reached by %d seeds: want 0 to seeds_run %d", c.Name, c.Seeds, s.SeedsRun)
		}
		seen[c.Name] = true
	}
	return nil
}

// checkRecheck: a re-check is of a fraction in (0, 1] (no -recheck writes
// none), re-ran no more seeds than ran, and found no more of them to
// differ than it re-ran.
func checkRecheck(sf *shardFile) error {
	r, s := sf.sum.Recheck, &sf.sum
	switch {
	case r == nil:
		return nil
	case !(r.Fraction > 0 && r.Fraction <= 1):
		return fmt.Errorf("recheck: fraction %g: want more than 0, at most 1", r.Fraction)
	case r.Rechecked < 0 || r.Rechecked > s.SeedsRun:
		return fmt.Errorf("recheck: rechecked %d: want 0 to seeds_run %d", r.Rechecked, s.SeedsRun)
	case r.Mismatches < 0 || r.Mismatches > r.Rechecked:
		return fmt.Errorf("recheck: mismatches %d: want 0 to rechecked %d", r.Mismatches, r.Rechecked)
	}
	return nil
}

func checkHistograms(sf *shardFile) error {
	s := &sf.sum
	stepSeeds := 0
	for _, c := range s.Histograms.Steps {
		stepSeeds += c.Seeds
	}
	if stepSeeds != s.SeedsRun {
		return fmt.Errorf("histograms: steps count %d seeds, but seeds_run is %d", stepSeeds, s.SeedsRun)
	}
	if _, err := reports.MergeStates(s.Histograms); err != nil {
		return fmt.Errorf("histograms: %w", err)
	}
	return nil
}
