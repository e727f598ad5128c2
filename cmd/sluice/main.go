package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
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

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/postgres"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: sluice serve [flags]  (sluice serve -h for flags)")
		os.Exit(2)
	}
	cfg, err := parseFlags(os.Args[2:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "sluice serve:", err)
		os.Exit(1)
	}
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

	// killPointP is a test hook for the live check: after each write a
	// worker lands, the process SIGKILLs itself with this chance. 0 in
	// production.
	killPointP float64
}

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

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address")
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
	fs.Float64Var(&c.killPointP, "kill-point", 0, "test hook (the live check): after each write a worker lands, SIGKILL this process with this chance; lands kills in every state, between the write-ahead and the send too. Never in production")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.databaseURL = os.Getenv("DATABASE_URL")
	var err error
	switch {
	case c.workers < 0 || c.workers > workersMax:
		err = fmt.Errorf("-workers %d: want 0..%d", c.workers, workersMax)
	case c.storeKind != "memory" && c.storeKind != "postgres":
		err = fmt.Errorf("-store %q: want memory or postgres", c.storeKind)
	case c.storeKind == "postgres" && c.databaseURL == "":
		err = errors.New("-store postgres needs DATABASE_URL")
	case c.lease <= 0 || c.idleSleep <= 0 || c.shutdownMax <= 0 || c.nodeTimeout <= 0:
		err = errors.New("-lease, -idle-sleep, -shutdown-timeout and -node-timeout must be positive")
	case !c.api && c.workers == 0 && c.nodeAddr == "":
		err = errors.New("-api=false with -workers 0 and no -node-addr: nothing to run")
	case c.nodeURL != "" && c.nodeAddr != "":
		err = errors.New("-node-url and -node-addr exclude each other: only a process with the mock in it can serve it")
	case c.nodeAddr != "" && !loopback(c.nodeAddr):
		err = fmt.Errorf("-node-addr %q: the mock node serves its ground truth and listens on loopback only", c.nodeAddr)
	case c.killPointP < 0 || c.killPointP >= 1:
		err = fmt.Errorf("-kill-point %v: want a chance in [0, 1)", c.killPointP)
	case c.nodeURL != "" && !strings.HasPrefix(c.nodeURL, "http://") && !strings.HasPrefix(c.nodeURL, "https://"):
		err = fmt.Errorf("-node-url %q: want http(s)://host:port", c.nodeURL)
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
// are fixtures of the mock, not secrets.
var (
	hotWallet = tron.AddressFromBytes20([20]byte{0x5a, 0x1c, 0xe0, 0x01})
	mockKey   = []byte("sluice mock hot wallet key: not a real key")
)

// listening is where serve accepts connections: the intake API and the
// mock node's HTTP face; "" for what it does not serve.
type listening struct{ api, node string }

// serve runs until ctx is done. If ready is not nil, it receives the
// listening addresses once the servers accept connections.
func serve(ctx context.Context, cfg config, logw io.Writer, ready chan<- listening) error {
	logger := log.New(logw, "sluice: ", log.LstdFlags|log.Lmicroseconds)
	clock := newWallClock()

	var db sluice.Store
	switch cfg.storeKind {
	case "memory":
		db = store.NewMemory(clock, cfg.lease)
		logger.Printf("store: in-memory (everything is lost on exit)")
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
		logger.Printf("store: postgresql (migrated)")
	}

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
		logger.Printf("THIS IS A MOCK: the TRON node is the mock served by another sluice process at %s; no real chain is contacted and no real funds move", cfg.nodeURL)
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
		logger.Printf("THIS IS A MOCK: the TRON node is simulated in this process (blocks every %s of real time, solid lag %d); no real chain is contacted and no real funds move", mocknode.SlotInterval, cfg.solidLag)

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
			srv := newHTTPServer(ns.Handler(), logger)
			servers = append(servers, srv)
			go func() { errc <- srv.Serve(ln) }()
			at.node = ln.Addr().String()
			logger.Printf("mock node: serving the node API and its ground truth on http://%s", at.node)
		}
	}

	if cfg.api {
		ln, err := net.Listen("tcp", cfg.addr)
		if err != nil {
			stopWork()
			wg.Wait()
			return err
		}
		api := intake.NewHandler(&intake.Service{Store: db})
		mux := http.NewServeMux()
		mux.Handle("/v1/", api)
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"ok":true,"node":"mock"}`)
		})
		srv := newHTTPServer(mux, logger)
		servers = append(servers, srv)
		go func() { errc <- srv.Serve(ln) }()
		at.api = ln.Addr().String()
		logger.Printf("listening on http://%s", at.api)
	}

	// Each incarnation's worker ids are new, so a restarted process never
	// looks like the holder of a lease its predecessor took.
	incarnation := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	pcfg := sluice.DefaultConfig()
	for i := range cfg.workers {
		id := sluice.WorkerID(fmt.Sprintf("%s-w%d", incarnation, i))
		node, err := nodeFor(string(id))
		if err != nil {
			stopWork()
			wg.Wait()
			return err
		}
		var st sluice.Store = db
		if cfg.killPointP > 0 {
			st = &killPoint{Store: db, p: cfg.killPointP, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))), logger: logger}
		}
		w := &sluice.Worker{
			ID: id,
			Pipeline: &sluice.Pipeline{
				Store: st, Node: node, Signer: signer,
				Clock: clock, HotWallet: hotWallet, Config: pcfg,
			},
			Rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))),
		}
		wg.Go(func() { runWorker(workCtx, w, cfg.idleSleep, logger) })
	}
	logger.Printf("running %d workers", cfg.workers)
	if ready != nil {
		ready <- at
	}

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Printf("shutting down: no new requests; in-flight ones get %s", cfg.shutdownMax)
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownMax)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			logger.Printf("shutdown: %v", err)
		}
	}
	// Workers stop between steps; one cut off mid-step is exactly a crash,
	// which the protocol survives: its lease lapses and another takes over.
	stopWork()
	wg.Wait()
	logger.Printf("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// newHTTPServer wraps h with the service's limits.
func newHTTPServer(h http.Handler, logger *log.Logger) *http.Server {
	return &http.Server{
		Handler: http.MaxBytesHandler(
			http.TimeoutHandler(h, handlerTimeout, `{"error":"request timed out"}`),
			intake.BodyMax+1), // intake enforces BodyMax itself; this is the backstop
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    headerBytesMax,
		ErrorLog:          logger,
	}
}

// runWorker ticks w until ctx ends: a pause after an empty claim so an idle
// service does not spin on the store, a longer one after a store error.
func runWorker(ctx context.Context, w *sluice.Worker, idle time.Duration, logger *log.Logger) {
	const errorPause = time.Second
	for ctx.Err() == nil {
		rep, err := w.Tick(ctx)
		pause := time.Duration(0)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Printf("worker %s: %v", w.ID, err)
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

// killPoint is the live check's crash hook: after a write lands, the
// process kills itself at once with chance p, as kill -9 would, running no
// deferred code. The write committed and the worker never acted on it: a
// kill after the write-ahead to broadcasting is the crash between intent
// and send, which only recovery from the chain can resolve. Its log line is
// how the live check tells such a death from a real one.
type killPoint struct {
	sluice.Store
	p      float64
	mu     sync.Mutex
	rng    *rand.Rand
	logger *log.Logger
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
		k.logger.Printf("%s %s->%s", killPointLine, c.From, c.To)
		if self, ferr := os.FindProcess(os.Getpid()); ferr == nil {
			self.Kill()
		}
		select {} // the signal is on its way; never act on the write
	}
	return op, err
}

// killPointLine opens the log line a kill point writes before it fires.
const killPointLine = "kill point: SIGKILL self after"
