package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/cmd/internal/audit"
	"sluicesim/sluice/tron/nodehttp"
)

// Exit codes of sluice audit, as explore's: 0 every invariant holds, 1 a
// violation, 2 the audit could not be carried out (bad usage, a database or
// node it cannot read, an output it cannot write).
const (
	auditOK        = 0
	auditViolation = 1
	auditUsage     = 2
)

const auditUsageText = `usage: sluice audit -node URL [-database-url URL] [-rescan N] [-json FILE] [-timeout D]

Audits a live sluice system with the simulator's invariants (package model):
reads every operation and its event log, and the customers' ledger
(accounts, holds, and the credits as the record of deposits), from
PostgreSQL and the chain from the node; runs txid-ownership, at-most-once,
conservation, funds, no-operational-failure and audit-log; and rescans the
last N solid blocks for transactions of the hot wallet that no operation
owns. The invariants that need the clients' records or a run's observer
are listed as not checked, with the reason. Read-only: it never writes to
the database or sends to the node.

The node must serve the mock's ground truth (sluice serve -node-addr); a
real TRON node does not, and is refused.

Exit 0: every invariant holds; 1: a violation (each printed); 2: the audit
could not be carried out.

`

// runAudit is sluice audit.
func runAudit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The flag package prints its own error; the usage is printed below,
	// to stdout when asked for (help is no failure).
	fs.Usage = func() {}
	dbURL := fs.String("database-url", os.Getenv("DATABASE_URL"), "the PostgreSQL database (default $DATABASE_URL)")
	nodeURL := fs.String("node", "", "the node's URL: the mock served by sluice serve -node-addr, http://127.0.0.1:PORT (required)")
	rescan := fs.Int64("rescan", 1200, "reconciliation rescans the last `N` solid blocks (1200 is an hour of 3 s blocks; 0: every solid block)")
	jsonPath := fs.String("json", "", "also write the report as JSON to `FILE`")
	timeout := fs.Duration("timeout", 5*time.Minute, "the whole audit, at most")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, auditUsageText)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return auditOK
		}
		fmt.Fprintln(stderr, "sluice audit: see sluice audit -h") // the flag package has said what is wrong
		return auditUsage
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "sluice audit: "+format+"\n", args...)
		return code
	}
	switch {
	case fs.NArg() > 0:
		return fail(auditUsage, "unexpected argument %q (every option is a flag; see sluice audit -h)", fs.Arg(0))
	case *dbURL == "":
		return fail(auditUsage, "no database: set -database-url or DATABASE_URL")
	case *nodeURL == "":
		return fail(auditUsage, "-node is required: the URL of the node (the mock served by sluice serve -node-addr)")
	case *rescan < 0:
		return fail(auditUsage, "-rescan %d: want a number of solid blocks, or 0 for all of them", *rescan)
	case *timeout <= 0:
		return fail(auditUsage, "-timeout %s: want a positive duration", *timeout)
	}
	node, err := nodehttp.NewClient(*nodeURL, nodehttp.Options{Caller: "audit", Timeout: time.Minute})
	if err != nil {
		return fail(auditUsage, "-node: %v", err)
	}
	pcfg, err := pgxpool.ParseConfig(*dbURL)
	if err != nil {
		return fail(auditUsage, "-database-url: %v", err)
	}
	// The audit only reads; the session refuses a write, whatever a bug
	// here would try.
	pcfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	pcfg.MaxConns = 4
	// Checked before anything is read, as explore checks its outputs: an
	// audit whose report cannot be written is not carried out.
	var jsonOut *os.File
	if *jsonPath != "" {
		if jsonOut, err = os.Create(*jsonPath); err != nil {
			return fail(auditUsage, "-json: %v", err)
		}
		defer jsonOut.Close()
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fail(auditUsage, "database: %v", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fail(auditUsage, "database: %v", err)
	}
	where := fmt.Sprintf("database %s on %s:%d", pcfg.ConnConfig.Database, pcfg.ConnConfig.Host, pcfg.ConnConfig.Port)
	if sp := pcfg.ConnConfig.RuntimeParams["search_path"]; sp != "" {
		where += ", schema " + sp
	}
	fmt.Fprintf(stdout, "sluice audit: %s; node %s\n", where, nodehttp.RedactURL(*nodeURL))
	rep, err := audit.Run(ctx, pool, node, audit.Config{Rescan: *rescan})
	if err != nil {
		return fail(auditUsage, "%v", err)
	}
	rep.Write(stdout, "")
	if jsonOut != nil {
		enc := json.NewEncoder(jsonOut)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(auditUsage, "-json: %v", err)
		}
		if err := jsonOut.Close(); err != nil {
			return fail(auditUsage, "-json: %v", err)
		}
	}
	if len(rep.Violations) > 0 {
		return auditViolation
	}
	return auditOK
}
