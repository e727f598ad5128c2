package sim

// newProc is storage for a new process. Processes are made in blocks of
// procBlock: a chaos seed spawns a few hundred (one per HTTP request), and
// one allocation each was the kernel's largest count of allocations. A
// block lives as long as any process in it is referenced; nothing carries
// over from one Sim to another.
func (s *Sim) newProc() *Proc {
	if len(s.spare) == 0 {
		s.spare = make([]Proc, procBlock)
	}
	p := &s.spare[0]
	s.spare = s.spare[1:]
	return p
}

// procBlock is how many processes newProc makes at once: about what a
// small world spawns in all, a tenth of a chaos seed's.
const procBlock = 16
