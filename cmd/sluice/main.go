package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand of sluice. run gets the arguments after the
// command's name and returns the exit code: 0 done, 1 failed, 2 bad usage.
type command struct {
	name string
	doc  string // one line, for sluice -h
	run  func(args []string, stdout, stderr io.Writer) int
}

// commands is every subcommand, in the order sluice -h lists them. Adding
// a command is one entry here.
var commands = []command{
	{"serve", "run the intake API and the workers against a store, on a mock TRON node", runServe},
	{"audit", "check a live database and node with the simulator's invariants, and rescan recent blocks for payments nobody owns", runAudit},
}

// run dispatches args (os.Args without the program name) and returns the
// exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "sluice: no command")
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		// Asked for, help goes to stdout and is no failure. "help serve"
		// is "serve -h".
		if name == "help" && len(rest) > 0 {
			c := find(rest[0])
			switch {
			case c == nil:
				fmt.Fprintf(stderr, "sluice help: unknown command %q\n", rest[0])
			case len(rest) > 1:
				fmt.Fprintf(stderr, "sluice help: unexpected argument %q\n", rest[1])
			default:
				return c.run([]string{"-h"}, stdout, stderr)
			}
			usage(stderr)
			return 2
		}
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "sluice %s: unexpected argument %q\n", name, rest[0])
			usage(stderr)
			return 2
		}
		usage(stdout)
		return 0
	}
	if c := find(name); c != nil {
		return c.run(rest, stdout, stderr)
	}
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "sluice: unknown flag %q: flags come after the command (sluice serve %s)\n", name, name)
	} else {
		fmt.Fprintf(stderr, "sluice: unknown command %q\n", name)
	}
	usage(stderr)
	return 2
}

func find(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `sluice: an idempotent USDT-on-TRON withdrawal processor. The TRON node it
pays on is a mock, in the process: no real chain is contacted, no real funds move.

usage: sluice <command> [flags]

commands:`)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.doc)
	}
	fmt.Fprintln(w, `
sluice <command> -h (or sluice help <command>) describes a command: its flags,
and for serve the HTTP APIs with example requests. Exit codes: 0 done, 1 failed,
2 bad usage.`)
}
