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
	case c.lease <= 0 || c.idleSleep <= 0 || c.shutdownMax <= 0:
		err = errors.New("-lease, -idle-sleep and -shutdown-timeout must be positive")
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
	}
	return c, err
}

// wallClock is real time made monotonic: the mock node refuses a clock that
// runs backwards, and a wall clock stepped by NTP can. Readings are the start
// wall time plus the monotonic time elapsed since.
type wallClock struct{ start time.Time }

func newWallClock() wallClock { return wallClock{start: time.Now()} }

func (c wallClock) Now() time.Time {
	return c.start.Add(time.Since(c.start)).UTC().Round(0)
}

// lockedNode serializes calls into the mock node, which is a single-threaded
// simulation object: the workers, the block producer and the HTTP goroutines
// all reach it from here.
type lockedNode struct {
	mu *sync.Mutex
	n  tron.Node
}

func (l lockedNode) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n.Broadcast(ctx, tx)
}

func (l lockedNode) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n.Lookup(ctx, id)
}

func (l lockedNode) HeadBlock(ctx context.Context) (tron.Block, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n.HeadBlock(ctx)
}

func (l lockedNode) SolidBlock(ctx context.Context) (tron.Block, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n.SolidBlock(ctx)
}

// hotWallet is the mock chain's funded account; mockKey signs for it. Both
// are fixtures of the mock, not secrets.
var (
	hotWallet = tron.AddressFromBytes20([20]byte{0x5a, 0x1c, 0xe0, 0x01})
	mockKey   = []byte("sluice mock hot wallet key: not a real key")
)

// serve runs until ctx is done. If ready is not nil, it receives the
// listening address once the server accepts connections.
func serve(ctx context.Context, cfg config, logw io.Writer, ready chan<- string) error {
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

	signer := tron.NewHMACSigner(mockKey)
	var nodeMu sync.Mutex
	node := mocknode.New(clock, mocknode.Config{
		Genesis:    clock.Now().Add(-time.Minute),
		SolidLag:   cfg.solidLag,
		HotWallet:  hotWallet,
		HotBalance: 1_000_000_000 * 1_000_000,
		Verifier:   signer,
	})
	logger.Printf("THIS IS A MOCK: the TRON node is simulated in this process (blocks every %s of real time, solid lag %d); no real chain is contacted and no real funds move", mocknode.SlotInterval, cfg.solidLag)

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	api := intake.NewHandler(&intake.Service{Store: db})
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"ok":true,"node":"mock"}`)
	})
	srv := &http.Server{
		Handler: http.MaxBytesHandler(
			http.TimeoutHandler(mux, handlerTimeout, `{"error":"request timed out"}`),
			intake.BodyMax+1), // intake enforces BodyMax itself; this is the backstop
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    headerBytesMax,
		ErrorLog:          logger,
	}

	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var wg sync.WaitGroup

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

	// Each incarnation's worker ids are new, so a restarted process never
	// looks like the holder of a lease its predecessor took.
	incarnation := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	pcfg := sluice.DefaultConfig()
	for i := range cfg.workers {
		id := sluice.WorkerID(fmt.Sprintf("%s-w%d", incarnation, i))
		w := &sluice.Worker{
			ID: id,
			Pipeline: &sluice.Pipeline{
				Store: db, Node: lockedNode{mu: &nodeMu, n: node.Client(string(id))}, Signer: signer,
				Clock: clock, HotWallet: hotWallet, Config: pcfg,
			},
			Rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))),
		}
		wg.Go(func() { runWorker(workCtx, w, cfg.idleSleep, logger) })
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Printf("listening on http://%s with %d workers", ln.Addr(), cfg.workers)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Printf("shutting down: no new requests; in-flight ones get %s", cfg.shutdownMax)
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownMax)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Printf("shutdown: %v", err)
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
