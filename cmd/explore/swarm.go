package main

import (
	"fmt"
	"strconv"
)

// swarmFlag is -swarm: unset (the world's default), on or off.
type swarmFlag int

const (
	swarmAuto swarmFlag = iota
	swarmOn
	swarmOff
)

// swarmDefault is whether a world runs swarm seeds when -swarm is not
// given: the chaos world does (its kill table with swarm reached every
// catchable mutant with the same median and a worst of 44 seeds against
// 276; see the README), the special-purpose worlds keep the mix they were
// built for; the settings world is a swarm by definition (what it adds is
// drawn).
func swarmDefault(world string) bool { return world == "chaos" || world == "settings" }

// swarmFor is whether runs of world draw their world per seed.
func (o *options) swarmFor(world string) bool {
	switch o.swarm {
	case swarmOn:
		return true
	case swarmOff:
		return false
	}
	return o.strategy != "exhaustive" && swarmDefault(world)
}

func (f *swarmFlag) String() string {
	switch *f {
	case swarmOn:
		return "true"
	case swarmOff:
		return "false"
	}
	return "auto"
}

func (f *swarmFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, not %q", s)
	}
	*f = swarmOff
	if v {
		*f = swarmOn
	}
	return nil
}

// IsBoolFlag lets -swarm stand alone, as a boolean flag does.
func (f *swarmFlag) IsBoolFlag() bool { return true }
