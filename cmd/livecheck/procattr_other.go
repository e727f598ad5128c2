//go:build !linux

package main

import "os/exec"

// dieWithParent has no portable equivalent; livecheck kills its children
// itself on every exit path it controls.
func dieWithParent(*exec.Cmd) {}
