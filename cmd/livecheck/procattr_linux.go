package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the child if livecheck dies, so that
// no worker outlives a crashed check.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
