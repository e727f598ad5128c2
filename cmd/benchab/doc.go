// Command benchab compares benchmarks of two commits on a noisy machine the
// way the README's performance figures were measured: it builds the test
// binary of a package at a base commit (in a temporary git worktree) and
// in the working tree, then runs every matching benchmark in a process of
// its own, alternating the two binaries round by round (base first in odd
// rounds, new first in even ones, so that a machine that speeds up or
// slows down over the minutes does not favour either), each run with
// -count 2 and the second result kept (the first pays for growing a cold
// heap). It prints, per benchmark and unit, both medians and their ratio,
// and with -out writes the kept results as base.txt and new.txt for
// benchstat.
//
//	go run ./cmd/benchab -base 9e167bf -bench 'ChaosSeed$|Calm' -rounds 5
//
// Exit status: 0 done; 2 bad usage, a base that is not a commit, a package
// that does not build, or no benchmark matching in both.
package main
