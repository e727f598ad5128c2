package scenarios

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/store"
	"sluicesim/sluice/tron"
)

// auditStore is the world's store with every call written down as the
// state it reads or writes, in footprint keys: a row ("row:<id>"), every
// row ("row:*"), which rows a claim could take ("claim:*", "claim:<id>"),
// the row order (claimOrder), a customer's account ("acct:<customer>").
// What the world reads for its own records is not written down: LastSeq
// (the newest event's number) and EventCount (below).
type auditStore struct {
	Store
	log []audited
}

type audited struct {
	call string
	sim.Access
}

func (s *auditStore) touch(key string, write bool) {
	call := "?"
	if pc, _, _, ok := runtime.Caller(1); ok {
		call = runtime.FuncForPC(pc).Name()
		call = call[strings.LastIndex(call, ".")+1:]
	}
	s.log = append(s.log, audited{call, sim.Access{Key: key, Write: write}})
}

func (s *auditStore) customer(id sluice.OperationID) sluice.CustomerID {
	row, _ := s.Store.Get(context.Background(), id)
	return row.Request.Customer
}

func (s *auditStore) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	row, created, err := s.Store.Insert(ctx, op)
	s.touch("row:"+string(op.ID), true)
	s.touch("acct:"+string(op.Request.Customer), created)
	if created {
		s.touch(claimOrder, true)
	}
	return row, created, err
}

func (s *auditStore) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	s.touch("row:"+string(id), false)
	return s.Store.Get(ctx, id)
}

func (s *auditStore) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	ops, err := s.Store.Claim(ctx, worker, limit)
	s.touch("claim:*", false)
	for _, op := range ops {
		s.touch("row:"+string(op.ID), true)
		s.touch("claim:"+string(op.ID), true)
	}
	return ops, err
}

func (s *auditStore) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	s.touch("row:"+string(c.ID), true)
	if c.Hold != sluice.HoldKeep {
		s.touch("acct:"+string(s.customer(c.ID)), true)
	}
	return s.Store.CAS(ctx, c)
}

func (s *auditStore) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	s.touch("row:"+string(id), true)
	return s.Store.Release(ctx, id, token, after)
}

func (s *auditStore) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	s.touch("row:"+string(id), false)
	return s.Store.Events(ctx, id)
}

func (s *auditStore) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	s.touch("row:"+string(p.ID), true)
	return s.Store.Park(ctx, p)
}

func (s *auditStore) Resolve(ctx context.Context, r sluice.Resolution) (sluice.Operation, error) {
	s.touch("row:"+string(r.ID), true)
	if r.Hold != sluice.HoldKeep {
		s.touch("acct:"+string(s.customer(r.ID)), true)
	}
	return s.Store.Resolve(ctx, r)
}

func (s *auditStore) List(ctx context.Context, f sluice.ListFilter) ([]sluice.Operation, error) {
	s.touch("row:*", false)
	return s.Store.List(ctx, f)
}

func (s *auditStore) Census(ctx context.Context) (sluice.Census, error) {
	s.touch("row:*", false)
	return s.Store.Census(ctx)
}

func (s *auditStore) Credit(ctx context.Context, c sluice.Credit) (sluice.Account, bool, error) {
	s.touch("acct:"+string(c.Customer), true)
	return s.Store.Credit(ctx, c)
}

func (s *auditStore) Account(ctx context.Context, c sluice.CustomerID) (sluice.Account, error) {
	s.touch("acct:"+string(c), false)
	return s.Store.Account(ctx, c)
}

func (s *auditStore) Hold(ctx context.Context, id sluice.OperationID) (sluice.Hold, error) {
	s.touch("row:"+string(id), false)
	return s.Store.Hold(ctx, id)
}

func (s *auditStore) Snapshot() store.Snapshot {
	s.touch("row:*", false)
	return s.Store.Snapshot()
}

func (s *auditStore) Open() int {
	s.touch("row:*", false)
	return s.Store.Open()
}

func (s *auditStore) TxidOwner(id tron.Txid) (sluice.OperationID, bool) {
	owner, ok := s.Store.TxidOwner(id)
	if ok {
		s.touch("row:"+string(owner), false)
	} else {
		s.touch("row:*", false)
	}
	return owner, ok
}

// EventCount is how the world measures, around a client's read, the log
// the answer must come from (logLen): its own look, like LastSeq.
func (s *auditStore) EventCount(id sluice.OperationID) (int, bool) {
	return s.Store.(eventCounter).EventCount(id)
}

// stepAudit is the observer: each step's store calls, held against the
// footprint the step named.
type stepAudit struct {
	store   *auditStore
	checked int            // store accesses held against a footprint
	missed  map[string]int // "Get reads row:<id>" -> times a step did it unnamed
}

func (a *stepAudit) StepStart(int) bool {
	a.store.log = a.store.log[:0] // what the world did between steps is not a step's
	return true
}

func (a *stepAudit) StepDone(_ int, fp []sim.Access) {
	a.checked += len(a.store.log)
	for _, x := range a.store.log {
		if !named(x.Access, fp) {
			key := x.Key
			if kind, rest, _ := strings.Cut(key, ":"); rest != "*" && rest != "order" {
				key = kind + ":<id>"
				if kind == "acct" {
					key = "acct:<customer>"
				}
			}
			a.missed[fmt.Sprintf("%s %s %s", x.call, map[bool]string{false: "reads", true: "writes"}[x.Write], key)]++
		}
	}
}

// named reports whether the footprint names the access: the key (or a
// wildcard over it), written if the access writes.
func named(x sim.Access, fp []sim.Access) bool {
	for _, y := range fp {
		p, wild := strings.CutSuffix(y.Key, "*")
		if (y.Key == x.Key || wild && strings.HasPrefix(x.Key, p)) && (y.Write || !x.Write) {
			return true
		}
	}
	return false
}

// Goal: every step names in its footprint what it reads and writes of the
// store, mutants' wrappers included, whether or not a schedule exists in
// which the omission changes an outcome (TestMutantsKeepTheReductionExact
// sees only those that do). Method: the worlds exhaustive search runs
// (pair, pair2, and zombies trimmed the same way, where leases are stolen
// and zombies wake), run at random with every store call written down, for
// the real core and each mutant; every call a step made must be named by
// its footprint. Before the mutants named theirs, 16 failed here (every
// one whose wrapper reads or writes the store directly, except
// store-error-is-success and confirm-ignores-receipt, whose reads are on
// paths these worlds do not take): cas-ignores-token, cas-ignores-state,
// mismatch-fails, rebuild-without-evidence, settle-without-confirmation
// (the row read before a CAS), claim-ignores-lease (a scan of every lease,
// and the releases), send-before-write-ahead, carry-on-after-fence,
// adopts-holder-token, park-is-failure, cancel-without-proof (a row read),
// confirm-ignores-transfer-log, log-ignores-amount,
// resend-reject-is-terminal (a txid's owner and its row),
// release-hold-twice (an account credited), history-of-another (a scan of
// every row).
func TestStepsNameTheStoreTheyTouch(t *testing.T) {
	// pair2 with every other request to the hot wallet (rejected by the
	// pipeline, its hold released) and clients that read their withdrawals
	// back (a GET reads the log): paths the exhaustive worlds leave off,
	// which two mutants' wrappers take.
	paths := ForExhaustive(Pair2())
	paths.Name, paths.RejectEvery, paths.ClientGetP = "pair2 with rejections and reads", 2, 0.5
	worlds := []Config{ForExhaustive(Pair()), ForExhaustive(Pair2()), ForExhaustive(Zombies()), paths}
	for _, m := range append([]Mutant{{Name: ""}}, Mutants...) {
		name := m.Name
		if name == "" {
			name = "real"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, cfg := range worlds {
				cfg.Mutant = m.Name
				audit := &stepAudit{missed: map[string]int{}}
				stores := func(clock sluice.Clock, lease time.Duration) (Store, func(), error) {
					s, dispose, err := MemoryStores(clock, lease)
					audit.store = &auditStore{Store: s}
					return audit.store, dispose, err
				}
				for seed := uint64(1); seed <= 10; seed++ {
					res := Run(cfg, seed, Options{observer: audit, Stores: stores})
					if res.Failure != "" {
						t.Fatalf("%s seed %d: %s", cfg.Name, seed, res.Failure)
					}
				}
				if audit.checked == 0 {
					t.Fatalf("%s: no store call was held against a footprint", cfg.Name)
				}
				if len(audit.missed) > 0 {
					t.Errorf("%s, seeds 1-10: steps touched the store without naming it in their footprints (access: steps): %v", cfg.Name, audit.missed)
				}
			}
		})
	}
}
