package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts what -cpuprofile and -memprofile ask for, over the
// whole run whatever the mode, and returns what writes them out: the
// issue's rule for performance work is to profile before changing, and
// the command users run is the thing worth profiling. The allocation
// profile counts every allocation since the process started (the "allocs"
// profile), at the runtime's default sampling rate.
func startProfiles(o *options) (stop func() error, err error) {
	var cpu *os.File
	if o.cpuProfile != "" {
		if cpu, err = os.Create(o.cpuProfile); err != nil {
			return nil, fmt.Errorf("-cpuprofile %s: %w", o.cpuProfile, bareErr(err))
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("-cpuprofile %s: %w", o.cpuProfile, err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
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
	f, err := os.Create(path)
	if err != nil {
		return bareErr(err)
	}
	// The profile shows allocations up to the last collection; one more
	// brings it up to date with the run's end.
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return bareErr(f.Close())
}
