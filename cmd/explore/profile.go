package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts what -cpuprofile and -memprofile ask for, over the
// whole run whatever the mode, and returns what writes them out: the
// issue's rule for performance work is to profile before changing, and
// the command users run is the thing worth profiling. The allocation
// profile counts every allocation since the process started (the "allocs"
// profile), at the runtime's default sampling rate.
//
// The CPU profile is gathered in memory and written, like every output,
// when the run is done (a few MB for a long run): an existing profile is
// replaced only by a finished one.
func startProfiles(o *options) (stop func() error, err error) {
	var cpu *bytes.Buffer
	if o.cpuProfile != "" {
		cpu = new(bytes.Buffer)
		if err := pprof.StartCPUProfile(cpu); err != nil {
			return nil, fmt.Errorf("-cpuprofile %s: %w", o.cpuProfile, err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := writeFile(o.cpuProfile, func(w io.Writer) error { _, err := cpu.WriteTo(w); return err }); err != nil {
				errs = append(errs, fmt.Errorf("-cpuprofile %s: %w", o.cpuProfile, bareErr(err)))
			}
		}
		if o.memProfile != "" {
			if err := writeAllocs(o.memProfile); err != nil {
				errs = append(errs, fmt.Errorf("-memprofile %s: %w", o.memProfile, err))
			}
		}
		return errors.Join(errs...)
	}, nil
}

func writeAllocs(path string) error {
	// The profile shows allocations up to the last collection; one more
	// brings it up to date with the run's end.
	runtime.GC()
	return bareErr(writeFile(path, func(w io.Writer) error { return pprof.Lookup("allocs").WriteTo(w, 0) }))
}
