package sim

// What the exhaustive search reads of a run it is attached to (see
// ExhaustiveRun.Attach) beyond the observer's calls: whether a process has
// finished (a process that is neither runnable nor finished is asleep), and
// whether the run ended without a failure. Kept here, in one place, because
// they read the kernel's own fields.

func (s *Sim) finished(id int) bool { return id < len(s.procs) && s.procs[id].done }

func (s *Sim) endedCleanly() bool { return s.failure == nil }

func (s *Sim) wasStopped() bool { return s.stopped }
