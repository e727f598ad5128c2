package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"sluicesim/scenarios"
)

// Every command explore prints or records to reproduce a run (on the
// console, in -json, on report pages and in the kill table) and every trace
// file name it makes up comes from this file, so that they cannot drift
// apart from one another or from the flags.

// exploreCmd starts every reproduce command. It is go run rather than a
// built binary because the commands are for reading a run again, where the
// exit code does not matter (go run turns every non-zero exit into 1).
const exploreCmd = "go run ./cmd/explore"

// repro names one run by the flags that make it again: a world (with a
// mutant, or none for the real core), a seed and a scheduling strategy.
type repro struct {
	world, mutant string
	seed          uint64
	// pctDepth > 0: PCT with that depth; 0: random scheduling. A run that
	// no seed reproduces (exhaustive search, a shrunk world) has no repro:
	// it is reproduced by replaying its trace.
	pctDepth int
	swarm    bool   // the world drawn per seed (-swarm)
	store    string // "postgres" for a run on PostgreSQL; memory otherwise
}

// reproOf is the repro of a seed run under the options' strategy.
func (o *options) reproOf(world, mutant string, seed uint64) repro {
	r := repro{world: world, mutant: mutant, seed: seed, swarm: o.swarmFor(world), store: o.storeKind}
	if o.strategy == "pct" {
		r.pctDepth = o.pctDepth
	}
	return r
}

// traceName is the file name of the run's trace: the world, the mutant if
// any, and the seed, so that traces of several mutants or worlds written
// into one directory (a report, the kill table's) never collide.
func (r repro) traceName() string {
	return fmt.Sprintf("%s-seed%d.trace.jsonl", r.label(), r.seed)
}

func (r repro) label() string {
	if r.mutant == "" {
		return r.world
	}
	return r.world + "-" + r.mutant
}

// exhaustiveTraceName names the trace of the first failing schedule of an
// exhaustive search: the search, not a seed, reproduces it.
func exhaustiveTraceName(world, mutant string) string {
	return repro{world: world, mutant: mutant}.label() + "-exhaustive.trace.jsonl"
}

// shrunkTraceName is where -shrink writes the shrunk trace of the trace
// at path when -trace does not say: beside it.
func shrunkTraceName(path string) string {
	return strings.TrimSuffix(path, ".jsonl") + ".shrunk.jsonl"
}

// flags are the flags that select the run, without -trace.
func (r repro) flags() string {
	s := " -world " + r.world
	if r.pctDepth > 0 {
		s += fmt.Sprintf(" -strategy pct -pct-depth %d", r.pctDepth)
	}
	if r.mutant != "" {
		s += " -mutant " + r.mutant
	}
	if r.swarm != swarmDefault(r.world) {
		s += fmt.Sprintf(" -swarm=%v", r.swarm)
	}
	if r.store == "postgres" {
		// A bug of the PostgreSQL store shows only on it: a re-run on the
		// memory store would pass.
		s += " -store postgres"
	}
	return s + fmt.Sprintf(" -seed %d", r.seed)
}

// rerun is the command that runs the seed again and writes its trace.
func (r repro) rerun(trace string) string {
	return exploreCmd + r.flags() + " -trace " + shellQuote(trace)
}

// replayCommand is the command that replays a trace file.
func replayCommand(trace string) string {
	return exploreCmd + " -replay " + shellQuote(trace)
}

// inDir is the path of a file written into dir, as commands should name
// it: the directory exactly as the user gave it, so that a command printed
// for -report out names out/..., and works from where explore ran.
func inDir(dir, name string) string {
	if dir == "" {
		return name
	}
	return filepath.Join(dir, name)
}

// strategyRepro reads a trace header's strategy ("random", "pct/3",
// "exhaustive") back into a repro's PCT depth; ok is false for a strategy
// that no seed reproduces.
func strategyRepro(strategy string) (pctDepth int, ok bool) {
	depth, seeded, err := scenarios.ParseStrategy(strategy)
	return depth, err == nil && seeded
}

// shellQuote quotes a path for a POSIX shell when it needs it, so that a
// printed command can be pasted as is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
