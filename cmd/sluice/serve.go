package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/prometheus/client_golang/prometheus/collectors"

	"sluicesim/cmd/internal/mockwallet"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/metrics"
	"sluicesim/sluice/money"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/postgres"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// runServe is the serve command: flags, then serve until SIGINT or SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, stderr, nil); err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
		return 1
	}
	return 0
}

// config is serve's flags.
type config struct {
	addr        string
	workers     int
	storeKind   string // "memory" or "postgres"
	databaseURL string
	lease       time.Duration
	solidLag    int
	idleSleep   time.Duration // a worker's pause after a tick that claimed nothing
	shutdownMax time.Duration // how long in-flight requests get on shutdown

	api         bool          // serve the intake API on addr
	nodeURL     string        // "": the in-process mock; else a remote node over nodehttp
	nodeAddr    string        // with the in-process mock: also serve it (and its ground truth) here
	nodeTimeout time.Duration // one call to a remote node, at most

	logFormat string     // logText ("" too) or logJSON
	logLevel  slog.Level // the least level logged

	// operatorAddr serves the operator API and /metrics ("" : off);
	// operatorToken is its bearer token, from $SLUICE_OPERATOR_TOKEN.
	operatorAddr  string
	operatorToken string
	// funds are the -fund credits made at startup, in flag order.
	funds []fund

	// killPointP is a test hook for the live check: after each write a
	// worker lands, the process SIGKILLs itself with this chance. 0 in
	// production.
	killPointP float64
	// dropEvery is a test hook for the live check: the in-process mock
	// node refuses every send of each dropEvery-th new transaction (0:
	// none), so that it dies unsent and must be proven dead.
	dropEvery int
	// shortEvery is a test hook for the live check: the in-process mock
	// node refuses the first shortSends sends of each shortEvery-th new
	// transaction for bandwidth (0: none), so that its withdrawal parks
	// and the operator's queue has parked rows to show and retry.
	shortEvery int
}

// fund is one -fund CUSTOMER=AMOUNT: a deposit credited at startup.
type fund struct {
	customer sluice.CustomerID
	amount   money.Amount
}

// ref is the credit's idempotency key, fund:CUSTOMER:AMOUNT with the amount
// in its canonical form ("12.50" is 12.5): a restart with the same flags
// credits nothing new, and "12.50" and "12.5" are one deposit. The live
// check relies on this spelling.
func (f fund) ref() string { return "fund:" + string(f.customer) + ":" + f.amount.String() }

// operatorTokenEnv names the environment variable holding the operator
// API's bearer token: never a flag, which any user on the machine can read
// in the process list.
const operatorTokenEnv = "SLUICE_OPERATOR_TOKEN"

// Limits of the HTTP server. A slow or hostile client can hold a
// connection only this long; bodies are capped by intake.BodyMax.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 15 * time.Second
	idleTimeout       = 60 * time.Second
	handlerTimeout    = 10 * time.Second // a request that takes longer gets a 503
	headerBytesMax    = 16 << 10
	workersMax        = 256
)

// The examples of serve -h and the README. TestHelpExamplesRun runs every
// curl line of both against a live serve.
const (
	exampleID   = "3f2b8c1e-7a4d-4e5f-9b6a-0c1d2e3f4a5b"
	exampleTo   = "TTaKgniRySbz5VZPWudMPeB3cPTvfXgoHi" // a valid mainnet address of nobody in particular
	exampleTxid = "e767c888b64bdcd241cc240968c623feda69d33eefb612ff53329b543bfd1812"
	exampleAPI  = "127.0.0.1:8080" // -addr's default
	exampleNode = "127.0.0.1:9090"
	exampleOp   = "127.0.0.1:8081" // -operator-addr in the examples
	// exampleCustomer is the examples' customer: the withdrawal's and the
	// credit's.
	exampleCustomer = "cust-1"
	// exampleToken is the examples' operator token; the help says to make
	// a random one.
	exampleToken = "8c1f0e2b7a9d4c6e5f3a1b0d9e8c7f6a"
)

// serveHelp is what serve -h says before its flags: what serve runs, the
// APIs it serves with example requests, what a withdrawal's life looks like
// in time, and what it logs. README's "Running sluice for real" says the
// same at more length.
func serveHelp() string {
	lag := time.Duration(mocknode.DefaultSolidLag) * mocknode.SlotInterval
	return fmt.Sprintf(`usage: sluice serve [flags]

serve runs the intake HTTP API on -addr and -workers worker goroutines against
one store: in memory (lost on exit), or PostgreSQL at $DATABASE_URL with
-store postgres (migrated at startup; several processes may share it), and,
with -operator-addr, the operator API and the metrics. The TRON node is a
MOCK inside the process, a block every %[1]s of real time: no real chain is
contacted and no real funds move. SIGINT or SIGTERM stops it.

THE INTAKE API, on -addr. Every answer is JSON, unknown paths included; an
error is {"error": "...", "field": "..."}, with field naming what is wrong.

  POST /v1/withdrawals       submit a withdrawal: a JSON object of five strings,
                             operation_id  a UUID the client mints once and sends
                                           again on every retry of the request
                             customer      whose balance pays (see -fund and
                                           POST /v1/credits): 1 to 64 letters,
                                           digits and . _ : -
                             to_address    a base58check TRON address
                             amount        a decimal string, at most 6 decimals
                                           ("12.50"; a JSON number is refused)
                             asset         "USDT-TRC20"
      201 created, the amount held on the customer's balance; 200 the same
      request again, nothing new (X-Idempotent-Replay: true; "1.5" and "1.50"
      are the same amount); 402 the customer's balance does not cover it
      (nothing stored; send the same request once it does); 409 the
      operation_id belongs to another request; 422 invalid (field says which);
      415 not JSON; 503 the store failed: the request may or may not be
      recorded, retry it with the same operation_id (Retry-After).
  GET  /v1/withdrawals/{id}  the withdrawal: state, txid, builds, reason, and its
                             history (each transition, its time and note);
                             200, 404 no such operation, 422 not a UUID
  GET  /healthz              {"ok":true,"node":"mock"}

  curl -s -X POST http://%[4]s/v1/withdrawals \
    -H 'Content-Type: application/json' \
    -d '{"operation_id":"%[5]s","customer":"%[11]s","to_address":"%[6]s","amount":"12.50","asset":"USDT-TRC20"}'
  curl -s http://%[4]s/v1/withdrawals/%[5]s

A WITHDRAWAL'S LIFE IN TIME (default flags). At the POST it is requested and
its amount held; within a second a worker takes it through validated,
signing, signed, broadcasting (the intent to send, written before the send)
to broadcast. Then nothing visible for about a minute: it is confirmed (the
hold settled, paid) only once its block is solid, and the mock's solid head
trails its head by %[2]d blocks of %[1]s (%[3]s; -solid-lag). Measured:
broadcast 0.2 s after the POST, confirmed 72 s after it. A transaction that
dies unincluded is rebuilt with a new txid only once the solid chain has
passed its expiration (60 s) plus a margin (30 s): minutes, not seconds. A
shortage of ours (bandwidth, energy, a node or signer unreachable) parks it
with backoff, and past its bounds (30 parks, or an hour parked) sends it to
review, never to failed. It ends confirmed; failed (the hold released; reason
says why: refused for good, dead past the stuck policy's patience, cancelled
by an operator); rejected (invalid once checked); or review (the chain shows
a payment but not exactly the one asked, or it was parked too long: an
operator decides).

THE MOCK NODE API, on -node-addr (off by default; loopback only). Other sluice
processes use it with -node-url; the live check reads the mock's ground truth
from it. TRON's paths, sluice's own bodies; X-Node-Caller names the caller.

  POST /wallet/getnowblock             head block: {"number","block_id","timestamp"}
  POST /walletsolidity/getnowblock     solid block, the same
  POST /wallet/gettransactioninfobyid  {"txid":"<hex>"}: status unknown, pending or
                                       included, block, solid, receipt, logs
  POST /wallet/broadcasttransaction    {"transaction":{...}}: {"code","message"}
  GET  /mock/truth                     what the mock saw: wire, acceptances,
                                       inclusions, blocks (for the live check)
  GET  /healthz                        {"ok":true}

  curl -s -X POST http://%[7]s/wallet/getnowblock
  curl -s -X POST http://%[7]s/wallet/gettransactioninfobyid -d '{"txid":"%[8]s"}'

THE OPERATOR API, on -operator-addr (off unless set), with the metrics.
Every request needs Authorization: Bearer <token>, the token being
$%[12]s (at least 16 bytes: serve refuses to start with
-operator-addr and no valid token; make one with openssl rand -hex 32): 401
without it or malformed, 403 wrong. It is plain HTTP: off this machine, put
TLS in front. Every answer but /metrics is JSON, an error {"error": "...",
"field": "..."}. An action's body names the operator and says why; both land
in the operation's event log.

  GET  /v1/queue?after=ID&limit=N   operations in review and parked ones, by id
                                    (limit 1..200, default 50): state, reason,
                                    parks and park reason, txids, the latest
                                    decision and evidence, the actions that may
                                    apply; "next" is the following page's after
  GET  /v1/operations/{id}          one operation, the same view
  POST /v1/operations/{id}/retry    {"operator","why"}: back to the workers now
                                    (park ended, backoff cleared, lease fenced);
                                    not for review, which is final
  POST /v1/operations/{id}/cancel   {"operator","why"}: failed, hold released;
                                    only with proof of death of its txid, checked
                                    on chain now (none needed if it never had
                                    one), and only while parked or in review;
                                    a txid included with SUCCESS never is
  POST /v1/operations/{id}/resolve  {"operator","why","txid"}: a review settled as
                                    paid (confirmed, hold settled) by its current
                                    txid, which the chain must show solid, SUCCESS,
                                    with exactly the Transfer asked
  POST /v1/credits                  {"operator","why","ref","customer","amount"}: a
                                    deposit, once per ref: 201 credited, 200 that
                                    ref again, 409 that ref with other numbers
  GET  /v1/accounts/{customer}      balance, held, paid, deposited
  GET  /metrics                     the metrics, Prometheus text (below)
      200 done (the operation as it is after); 409 refused, nothing changed:
      the error says what the row or the chain showed and what to do; 422
      malformed (field says which; nothing changed); 404 no such operation or
      account; 503 the node or the store failed (Retry-After): read the
      operation before acting again.

  curl -s -H 'Authorization: Bearer %[10]s' http://%[9]s/v1/queue
  curl -s -X POST http://%[9]s/v1/credits \
    -H 'Authorization: Bearer %[10]s' -H 'Content-Type: application/json' \
    -d '{"operator":"alice","why":"wire 2026-12-01 #881","ref":"wire-881","customer":"%[11]s","amount":"250"}'
  curl -s -H 'Authorization: Bearer %[10]s' http://%[9]s/v1/accounts/%[11]s
  curl -s -X POST http://%[9]s/v1/operations/%[5]s/retry \
    -H 'Authorization: Bearer %[10]s' -H 'Content-Type: application/json' \
    -d '{"operator":"alice","why":"bandwidth topped up"}'
  curl -s -X POST http://%[9]s/v1/operations/%[5]s/cancel \
    -H 'Authorization: Bearer %[10]s' -H 'Content-Type: application/json' \
    -d '{"operator":"alice","why":"customer asked, ticket 4411"}'
  curl -s -X POST http://%[9]s/v1/operations/%[5]s/resolve \
    -H 'Authorization: Bearer %[10]s' -H 'Content-Type: application/json' \
    -d '{"operator":"alice","why":"paid, checked on tronscan","txid":"%[8]s"}'
  curl -s -H 'Authorization: Bearer %[10]s' http://%[9]s/metrics

METRICS at /metrics on the operator listener. The gauges are the store's
(read at each scrape, shared by every process on it); the counters and the
histogram are this process's own.

  sluice_withdrawal_queue_depth{state}   withdrawals in each non-terminal state
  sluice_confirmation_latency_seconds    creation to confirmation (histogram,
                                         1 s to 2 h: p95 readable)
  sluice_stuck_ratio                     parked / open (non-terminal)
  sluice_review_size                     withdrawals in review (the DLQ)
  sluice_ledger_chain_mismatches_total   reviews entered because the solid
                                         SUCCESS did not carry the Transfer asked
  sluice_node_errors_total{call,code}    failed node calls, broadcasts neither SUCCESS nor DUP
  sluice_rebuilds_total, sluice_fenced_writes_total, sluice_parks_total,
  sluice_parked_operations, sluice_withdrawals_finished{state},
  sluice_reviews_entered_total{cause}, sluice_stuck_decisions_total{action},
  sluice_node_calls_total{call}, sluice_operator_actions_total{action,outcome},
  sluice_step_errors_total, sluice_census_errors_total; go_* and process_*.
  Deposit lag is not measured: deposits are operators' credits, there is no
  chain watcher to lag.

FUNDING. -fund CUSTOMER=AMOUNT (repeatable) credits CUSTOMER with AMOUNT USDT
at startup under the ref fund:CUSTOMER:AMOUNT (the amount as the API writes
it: 12.50 is 12.5), so a restart with the same flags credits nothing new.

LOGS go to stderr: one line per event (-log-format text) or one JSON object
(-log-format json), from -log-level up. info: startup, each -fund credit,
each withdrawal created, each transition a worker lands (operation_id, from,
to, token, worker, txid, note; the evidence of a rebuild), each decision of
the stuck policy but wait, each operator action (action, operator, why,
operation_id, from, to; a cancel's evidence) and each one refused (why).
warn: a park (reason, parks, not_before), an operation sent to review
(cause, reason), a write fenced off because another claim took the
operation, a store failure the API hid behind a 503, an operator action
that failed on the store or node. error: a worker tick that failed. debug:
each claim, each wait, the stuck policy's waits. Durations (waited, after)
read 1m30s in text and are nanoseconds in JSON; times are RFC 3339.

flags:
`, mocknode.SlotInterval, mocknode.DefaultSolidLag, lag, exampleAPI, exampleID, exampleTo, exampleNode, exampleTxid,
		exampleOp, exampleToken, exampleCustomer, operatorTokenEnv)
}

// parseFlags reads serve's flags. -h writes the help to stdout and returns
// flag.ErrHelp; anything wrong is said on stderr, naming the flag.
func parseFlags(args []string, stdout, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// The help is long; a typo gets the error and a pointer to it, -h all
	// of it.
	fs.Usage = func() {}
	var c config
	fs.StringVar(&c.addr, "addr", exampleAPI, "listen address of the intake API")
	fs.IntVar(&c.workers, "workers", 4, "worker goroutines (0: intake only)")
	fs.StringVar(&c.storeKind, "store", "memory", "memory, or postgres (at $DATABASE_URL)")
	fs.DurationVar(&c.lease, "lease", 30*time.Second, "lease granted by each claim")
	fs.IntVar(&c.solidLag, "solid-lag", mocknode.DefaultSolidLag, "mock node: blocks between head and solid head")
	fs.DurationVar(&c.idleSleep, "idle-sleep", 200*time.Millisecond, "a worker's pause after an empty claim")
	fs.DurationVar(&c.shutdownMax, "shutdown-timeout", 10*time.Second, "grace for in-flight requests on shutdown")
	fs.BoolVar(&c.api, "api", true, "serve the intake API on -addr (false: workers only)")
	fs.StringVar(&c.nodeURL, "node-url", "", "use the mock node served by another sluice process at this URL (see -node-addr) instead of one in this process")
	fs.StringVar(&c.nodeAddr, "node-addr", "", "also serve this process's mock node, with its ground truth, on this loopback address")
	fs.DurationVar(&c.nodeTimeout, "node-timeout", nodehttp.DefaultTimeout, "with -node-url: one node call at most")
	fs.StringVar(&c.logFormat, "log-format", logText, "text (one line per event) or json (one object per line)")
	fs.Func("log-level", "the least level logged: debug, info (default), warn or error", func(s string) error {
		if err := c.logLevel.UnmarshalText([]byte(s)); err != nil {
			return errors.New("want debug, info, warn or error")
		}
		return nil
	})
	fs.StringVar(&c.operatorAddr, "operator-addr", "", "serve the operator API and /metrics on this address (off when empty); needs $"+operatorTokenEnv)
	fs.Func("fund", "credit CUSTOMER with AMOUNT USDT at startup, once (ref fund:CUSTOMER:AMOUNT); repeatable", func(s string) error {
		customer, amount, ok := strings.Cut(s, "=")
		if !ok {
			return errors.New("want CUSTOMER=AMOUNT, e.g. cust-1=1000")
		}
		f := fund{customer: sluice.CustomerID(customer)}
		if why := f.customer.Valid(); why != "" {
			return fmt.Errorf("customer %q: %s", customer, why)
		}
		a, err := money.Parse(amount)
		if err != nil {
			return fmt.Errorf("amount %q: %w", amount, err)
		}
		f.amount = a
		c.funds = append(c.funds, f)
		return nil
	})
	fs.Float64Var(&c.killPointP, "kill-point", 0, "test hook (the live check): after each write a worker lands, SIGKILL this process with this chance; lands kills in every state, between the write-ahead and the send too. Never in production")
	fs.IntVar(&c.dropEvery, "mock-drop-every", 0, "test hook (the live check): the mock node in this process answers SERVER_BUSY to every send of each K-th new transaction, which then expires unsent and must be proven dead before its withdrawal is rebuilt (0: none)")
	fs.IntVar(&c.shortEvery, "mock-short-every", 0, fmt.Sprintf("test hook (the live check): the mock node in this process refuses the first %d sends of each K-th new transaction with BANDWITH_ERROR (not taken), so that its withdrawal parks; a transaction -mock-drop-every drops is not also shortened (0: none)", shortSends))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serveHelp())
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return c, err
		}
		// flag has said what is wrong.
		fmt.Fprintln(stderr, "usage: sluice serve [flags]  (sluice serve -h: the flags and the APIs)")
		return c, err
	}
	c.databaseURL = os.Getenv("DATABASE_URL")
	c.operatorToken = os.Getenv(operatorTokenEnv)
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q: serve takes flags only, and a flag after an argument is not read", fs.Arg(0))
	case c.workers < 0 || c.workers > workersMax:
		err = fmt.Errorf("-workers %d: want 0..%d", c.workers, workersMax)
	case c.storeKind != "memory" && c.storeKind != "postgres":
		err = fmt.Errorf("-store %q: want memory or postgres", c.storeKind)
	case c.storeKind == "postgres" && c.databaseURL == "":
		err = errors.New("-store postgres needs DATABASE_URL")
	case c.lease <= 0 || c.idleSleep <= 0 || c.shutdownMax <= 0 || c.nodeTimeout <= 0:
		err = errors.New("-lease, -idle-sleep, -shutdown-timeout and -node-timeout must be positive")
	case !c.api && c.workers == 0 && c.nodeAddr == "" && c.operatorAddr == "":
		err = errors.New("-api=false with -workers 0, no -node-addr and no -operator-addr: nothing to run")
	case c.nodeURL != "" && c.nodeAddr != "":
		err = errors.New("-node-url and -node-addr exclude each other: only a process with the mock in it can serve it")
	case c.nodeAddr != "" && !loopback(c.nodeAddr):
		err = fmt.Errorf("-node-addr %q: the mock node serves its ground truth and listens on loopback only", c.nodeAddr)
	case c.dropEvery < 0:
		err = fmt.Errorf("-mock-drop-every %d: want 0 or more", c.dropEvery)
	case c.dropEvery > 0 && c.nodeURL != "":
		err = errors.New("-mock-drop-every needs the mock node in this process: it excludes -node-url")
	case c.shortEvery < 0:
		err = fmt.Errorf("-mock-short-every %d: want 0 or more", c.shortEvery)
	case c.shortEvery > 0 && c.nodeURL != "":
		err = errors.New("-mock-short-every needs the mock node in this process: it excludes -node-url")
	case c.killPointP < 0 || c.killPointP >= 1:
		err = fmt.Errorf("-kill-point %v: want a chance in [0, 1)", c.killPointP)
	case c.nodeURL != "" && !strings.HasPrefix(c.nodeURL, "http://") && !strings.HasPrefix(c.nodeURL, "https://"):
		err = fmt.Errorf("-node-url %q: want http(s)://host:port", c.nodeURL)
	case c.logFormat != logText && c.logFormat != logJSON:
		err = fmt.Errorf("-log-format %q: want text or json", c.logFormat)
	case c.operatorAddr != "" && c.operatorToken == "":
		err = fmt.Errorf("-operator-addr %s needs the operator API's bearer token in $%s (e.g. export %s=$(openssl rand -hex 32))", c.operatorAddr, operatorTokenEnv, operatorTokenEnv)
	case c.operatorAddr != "":
		if terr := operator.CheckToken(c.operatorToken); terr != nil {
			err = fmt.Errorf("-operator-addr: $%s: %w", operatorTokenEnv, terr)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
	}
	return c, err
}

// loopback reports whether addr (host:port) names a loopback interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// wallClock is real time made monotonic: the mock node refuses a clock that
// runs backwards, and a wall clock stepped by NTP can. Readings are the start
// wall time plus the monotonic time elapsed since.
type wallClock struct{ start time.Time }

func newWallClock() wallClock { return wallClock{start: time.Now()} }

func (c wallClock) Now() time.Time {
	return c.start.Add(time.Since(c.start)).UTC().Round(0)
}

// hotWallet is the mock chain's funded account; mockKey signs for it. Both
// are fixtures of the mock, not secrets (package mockwallet, which the live
// check shares).
var (
	hotWallet = mockwallet.HotWallet
	mockKey   = mockwallet.Key()
)

// listening is where serve accepts connections: the intake API, the mock
// node's HTTP face and the operator API; "" for what it does not serve.
type listening struct{ api, node, operator string }

// serve runs until ctx is done, logging to logw. If ready is not nil, it
// receives the listening addresses once the servers accept connections.
func serve(ctx context.Context, cfg config, logw io.Writer, ready chan<- listening) error {
	sink := newLogSink(logw, cfg.logFormat, cfg.logLevel)
	logger := sink.logger()
	clock := newWallClock()

	var db sluice.Store
	switch cfg.storeKind {
	case "memory":
		db = store.NewMemory(clock, cfg.lease)
		logger.Info("store: in-memory (everything is lost on exit)")
	case "postgres":
		pool, err := pgxpool.New(ctx, cfg.databaseURL)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		defer pool.Close()
		if err := postgres.Migrate(ctx, pool); err != nil {
			return err
		}
		// Clock nil: leases are judged by the database's now(), so that
		// processes with skewed clocks agree on whose lease is over.
		db = postgres.New(pool, postgres.Options{Lease: cfg.lease})
		logger.Info("store: postgresql (migrated)")
	}
	for _, f := range cfg.funds {
		acct, credited, err := db.Credit(ctx, sluice.Credit{Ref: f.ref(), Customer: f.customer, Amount: f.amount})
		if err != nil {
			return fmt.Errorf("-fund %s=%s: %w", f.customer, f.amount, err)
		}
		what := "fund: credited"
		if !credited {
			what = "fund: already credited by an earlier start, nothing new"
		}
		logger.Info(what, "customer", f.customer, "amount", f.amount.String(), "ref", f.ref(), "balance", acct.Balance.String())
	}
	// One set of instruments for the process: every worker observes into
	// it, every node it calls is counted, and the operator listener serves
	// it at /metrics. The gauges come from the store at each scrape.
	meter := metrics.New(db)
	meter.Registry().MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var wg sync.WaitGroup
	var servers []*http.Server
	errc := make(chan error, 2)
	var at listening

	signer := tron.NewHMACSigner(mockKey)
	// nodeFor is the node as worker id sees it.
	var nodeFor func(id string) (tron.Node, error)
	if cfg.nodeURL != "" {
		nodeFor = func(id string) (tron.Node, error) {
			return nodehttp.NewClient(cfg.nodeURL, nodehttp.Options{Caller: id, Timeout: cfg.nodeTimeout})
		}
		logger.Info(fmt.Sprintf("THIS IS A MOCK: the TRON node is the mock served by another sluice process at %s; no real chain is contacted and no real funds move", nodehttp.RedactURL(cfg.nodeURL)))
	} else {
		var nodeMu sync.Mutex
		node := mocknode.New(clock, mocknode.Config{
			Genesis:    clock.Now().Add(-time.Minute),
			SolidLag:   cfg.solidLag,
			HotWallet:  hotWallet,
			HotBalance: 1_000_000_000 * 1_000_000,
			Verifier:   signer,
		})
		nodeFor = func(id string) (tron.Node, error) { return nodehttp.Serialized(&nodeMu, node.Client(id)), nil }
		if cfg.dropEvery > 0 || cfg.shortEvery > 0 {
			node.SetFaults(liveFaults(cfg.dropEvery, cfg.shortEvery))
		}
		logger.Info(fmt.Sprintf("THIS IS A MOCK: the TRON node is simulated in this process (blocks every %s of real time, solid lag %d); no real chain is contacted and no real funds move", mocknode.SlotInterval, cfg.solidLag))

		// The block producer: the chain moves with real time even when no
		// worker is calling the node.
		wg.Go(func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-workCtx.Done():
					return
				case <-t.C:
					nodeMu.Lock()
					node.Advance()
					nodeMu.Unlock()
				}
			}
		})

		if cfg.nodeAddr != "" {
			ns := &nodehttp.Server{
				Node: func(caller string) tron.Node {
					return nodehttp.Serialized(&nodeMu, node.Client("remote:"+caller))
				},
				Truth: func() nodehttp.Truth {
					nodeMu.Lock()
					defer nodeMu.Unlock()
					return nodehttp.Truth{Wire: node.Wire(), Accepted: node.Accepted(), Inclusions: node.Inclusions(),
						Blocks: node.Blocks(), Solid: node.Solid(), HotWallet: hotWallet}
				},
			}
			ln, err := net.Listen("tcp", cfg.nodeAddr)
			if err != nil {
				return fmt.Errorf("-node-addr: %w", err)
			}
			srv := newHTTPServer(ns.Handler(), sink)
			servers = append(servers, srv)
			go func() { errc <- srv.Serve(ln) }()
			at.node = ln.Addr().String()
			logger.Info("mock node: serving the node API and its ground truth on http://" + at.node)
			// This process's workers and operator reach the mock over HTTP
			// too, as every other process's do: one that called it
			// directly would skip the node client, and a defect in the
			// client would hide behind it (a proof of death another
			// process's worker cannot make, this one would).
			local := "http://" + at.node
			nodeFor = func(id string) (tron.Node, error) {
				return nodehttp.NewClient(local, nodehttp.Options{Caller: id, Timeout: cfg.nodeTimeout})
			}
		}
	}

	if cfg.api {
		ln, err := net.Listen("tcp", cfg.addr)
		if err != nil {
			stopWork()
			wg.Wait()
			return err
		}
		srv := newHTTPServer(apiHandler(intakeLog{Store: db, log: logger}), sink)
		servers = append(servers, srv)
		go func() { errc <- srv.Serve(ln) }()
		at.api = ln.Addr().String()
		logger.Info("listening on http://" + at.api)
	}
	pcfg := sluice.DefaultConfig()

	if cfg.operatorAddr != "" {
		node, err := nodeFor("operator")
		if err != nil {
			stopWork()
			wg.Wait()
			return err
		}
		svc := &operator.Service{Store: db, Node: meter.Node(node), HotWallet: hotWallet, Clock: clock, Config: pcfg,
			Observer: actionObservers{meter, actionLog{log: logger}}}
		h, err := operator.NewHandler(svc, cfg.operatorToken, meter)
		if err == nil {
			var ln net.Listener
			if ln, err = net.Listen("tcp", cfg.operatorAddr); err == nil {
				// The operator handler makes its own answers JSON (all but
				// /metrics, which is Prometheus's text): bounded, not retyped.
				srv := newServer(bounded(h, handlerTimeout, operatorTimeoutBody), sink)
				servers = append(servers, srv)
				go func() { errc <- srv.Serve(ln) }()
				at.operator = ln.Addr().String()
				logger.Info("operator API and /metrics on http://" + at.operator + " (bearer token from $" + operatorTokenEnv + ")")
			}
		}
		if err != nil {
			stopWork()
			wg.Wait()
			return fmt.Errorf("-operator-addr: %w", err)
		}
	}

	// Each incarnation's worker ids are new, so a restarted process never
	// looks like the holder of a lease its predecessor took.
	incarnation := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	// One txid cache for every worker: an operation goes from one to
	// another (released to wait, or its lease lapsed), and the next finds
	// its envelope's txid there instead of hashing it again.
	txids := tron.NewTxidCache(256)
	for i := range cfg.workers {
		id := sluice.WorkerID(fmt.Sprintf("%s-w%d", incarnation, i))
		node, err := nodeFor(string(id))
		if err != nil {
			stopWork()
			wg.Wait()
			return err
		}
		// The kill point wraps the log, so that a landed write is logged
		// before the kill point's line, which must be the last.
		var st sluice.Store = workerLog{Store: db, worker: id, log: logger}
		if cfg.killPointP > 0 {
			st = &killPoint{Store: st, p: cfg.killPointP, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))), sink: sink}
		}
		w := &sluice.Worker{
			ID: id,
			Pipeline: &sluice.Pipeline{
				Store: st, Node: meter.Node(node), Signer: signer,
				Clock: clock, HotWallet: hotWallet, Config: pcfg,
				Txids: txids,
			},
			Rand:     rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))),
			Observer: stepObservers{meter, stepLog{log: logger}},
		}
		wg.Go(func() { runWorker(workCtx, w, cfg.idleSleep, logger) })
	}
	// The live check waits for this line, as it is: a line that ends
	// "running N workers" (cmd/livecheck's startedLine).
	logger.Info(fmt.Sprintf("running %d workers", cfg.workers))
	if ready != nil {
		ready <- at
	}

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info(fmt.Sprintf("shutting down: no new requests; in-flight ones get %s", cfg.shutdownMax))
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownMax)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			logger.Warn("shutdown", "err", err)
		}
	}
	// Workers stop between steps; one cut off mid-step is exactly a crash,
	// which the protocol survives: its lease lapses and another takes over.
	stopWork()
	wg.Wait()
	logger.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// apiHandler is the intake API's listener: the API, and /healthz.
func apiHandler(db sluice.Store) http.Handler {
	mux := http.NewServeMux()
	// The intake handler answers every path it does not have (404, JSON).
	mux.Handle("/", intake.NewHandler(&intake.Service{Store: db}))
	mux.HandleFunc("/healthz", health)
	return mux
}

func health(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		fmt.Fprintf(w, "{\"error\":%q}\n", "method "+r.Method+" not allowed; use GET")
		return
	}
	fmt.Fprintln(w, `{"ok":true,"node":"mock"}`)
}

// timeoutBody is the answer to a request that outlived handlerTimeout.
const timeoutBody = `{"error":"request timed out; a POST may or may not have been recorded: retry it with the same operation_id"}`

// operatorTimeoutBody is the operator listener's: its actions are not
// idempotent by a client's key, so the safe move is to look first.
const operatorTimeoutBody = `{"error":"request timed out; the action may or may not have landed: read the operation before acting again"}`

// newHTTPServer serves h with the service's limits and every answer JSON
// (surface).
func newHTTPServer(h http.Handler, sink *logSink) *http.Server {
	return newServer(surface(h, handlerTimeout), sink)
}

// newServer serves h with the service's connection limits, logging
// net/http's own complaints (a handler's superfluous WriteHeader, a broken
// connection) at warn.
func newServer(h http.Handler, sink *logSink) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    headerBytesMax,
		ErrorLog:          slog.NewLogLogger(sink.logger().Handler(), slog.LevelWarn),
	}
}

// surface wraps a listener's handler in what every answer of the service
// shares: a bounded body, a bounded time, and JSON, whatever the muxes and
// net/http answer on their own (an unknown path, a method a pattern does not
// allow, an unclean path's redirect). What net/http answers before any
// handler runs (a malformed request line, headers over MaxHeaderBytes) is
// plain text, and beyond reach here.
func surface(h http.Handler, timeout time.Duration) http.Handler {
	return bounded(intake.JSONAnswers(h), timeout, timeoutBody)
}

// bounded is surface without the JSON rewrite, for a handler that makes its
// own answers JSON and must serve one that is not (the operator listener's
// /metrics, in Prometheus's text format).
func bounded(h http.Handler, timeout time.Duration, body string) http.Handler {
	inner := http.TimeoutHandler(h, timeout, body)
	typed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// TimeoutHandler writes its own 503 with no Content-Type, and
		// otherwise copies the handler's headers over these. Inside it,
		// every answer with a body has its type (JSONAnswers, or the
		// metrics handler's own), so the JSON set here stays only on the
		// timeout's answer. No answer of the service may be kept by a
		// shared cache (intake's and the operator's are no-store; a 503 or
		// a scrape must not be served again either).
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		inner.ServeHTTP(w, r)
	})
	return http.MaxBytesHandler(typed, intake.BodyMax+1) // intake enforces BodyMax itself; this is the backstop
}

// runWorker ticks w until ctx ends: a pause after an empty claim so an idle
// service does not spin on the store, a longer one after a store error.
func runWorker(ctx context.Context, w *sluice.Worker, idle time.Duration, logger *slog.Logger) {
	const errorPause = time.Second
	for ctx.Err() == nil {
		rep, err := w.Tick(ctx)
		pause := time.Duration(0)
		switch {
		case err != nil && ctx.Err() == nil:
			// The live check counts these lines by "worker <id>: "
			// (cmd/livecheck's workerErrorLine).
			logger.Error(fmt.Sprintf("worker %s: tick failed", w.ID), "worker", w.ID, "err", err)
			pause = errorPause
		case rep.Claimed == 0:
			pause = idle
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
}

// liveFaults are the live check's node faults, counted over the distinct
// transactions the node is sent (the k-th is the k-th new txid).
//
// drop: the drop-th, 2drop-th, ... transaction is refused (SERVER_BUSY,
// not taken) at every send, as by a node too busy to take it until it
// expires. Only a proof of death (a lookup's unknown from a node whose
// solid block is past the expiration and margin) lets the pipeline rebuild
// it.
//
// short: the first shortSends sends of each short-th transaction (one not
// dropped) are refused for bandwidth (BANDWITH_ERROR, not taken), as when
// the hot wallet's bandwidth runs out for a while: the worker parks the
// withdrawal with backoff, and the operator's queue shows it parked, where
// the live check's person on call retries it. The send after those is
// taken.
//
// The node calls the hook under its lock.
func liveFaults(drop, short int) func(mocknode.Call) mocknode.Fault {
	type fate struct {
		doomed bool
		short  bool
		sends  int
	}
	fates := map[tron.Txid]*fate{}
	return func(c mocknode.Call) mocknode.Fault {
		if c.Kind != mocknode.Broadcast {
			return mocknode.None
		}
		f := fates[c.Txid]
		if f == nil {
			n := len(fates) + 1
			f = &fate{doomed: drop > 0 && n%drop == 0}
			f.short = !f.doomed && short > 0 && n%short == 0
			fates[c.Txid] = f
		}
		f.sends++
		switch {
		case f.doomed:
			return mocknode.Busy
		case f.short && f.sends <= shortSends:
			return mocknode.BandwidthExhausted
		}
		return mocknode.None
	}
}

// shortSends is how many sends of a transaction -mock-short-every refuses:
// three parks in a spell (backoff doubling from RetryAmbiguous) unless an
// operator retries it sooner.
const shortSends = 3

// killPoint is the live check's crash hook: after a write lands, the
// process kills itself at once with chance p, as kill -9 would, running no
// deferred code. The write committed and the worker never acted on it: a
// kill after the write-ahead to broadcasting is the crash between intent
// and send, which only recovery from the chain can resolve. Its log line,
// the process's last, is how the live check tells such a death from a
// real one.
type killPoint struct {
	sluice.Store
	p    float64
	mu   sync.Mutex
	rng  *rand.Rand
	sink *logSink
}

func (k *killPoint) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	op, err := k.Store.CAS(ctx, c)
	if err != nil {
		return op, err
	}
	k.mu.Lock()
	hit := k.rng.Float64() < k.p
	k.mu.Unlock()
	if hit {
		k.sink.lastLine(fmt.Sprintf("%s %s->%s", killPointLine, c.From, c.To),
			"operation_id", c.ID, "token", c.Token, "worker", c.Worker)
		if self, ferr := os.FindProcess(os.Getpid()); ferr == nil {
			self.Kill()
		}
		select {} // the signal is on its way; never act on the write
	}
	return op, err
}

// killPointLine opens the log line a kill point writes before it fires
// (cmd/livecheck's killPointLine).
const killPointLine = "kill point: SIGKILL self after"
