// Package postgres is the PostgreSQL sluice.Store, built on pgx. It keeps
// exactly the semantics and error sentinels of store.Memory, which the
// storetest conformance suite checks against a live database.
//
// # Driving it
//
//	pool, _ := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	if err := postgres.Migrate(ctx, pool); err != nil { ... } // idempotent
//	s := postgres.New(pool, postgres.Options{Lease: 30 * time.Second})
//
// Migrate applies the embedded migrations (migrations/*.sql) in order, once
// each, recording them in schema_migrations; concurrent callers serialize on
// an advisory lock, so every process may call it at startup.
//
// # The clock
//
// The contract judges leases by the store's clock. In production that is the
// database's now() (Options.Clock nil), so workers with skewed clocks still
// agree on whose lease has run out. Tests set Options.Clock: every statement
// then takes "now" from that clock as a query parameter, which is what lets
// the conformance suite hit a lease's end to the nanosecond. Times are kept
// as bigint nanoseconds for the same reason (timestamptz keeps microseconds).
//
// # What the database enforces by itself
//
// Even against a raw psql session: the transition table and the immutability
// of terminal rows (a BEFORE UPDATE trigger), that the event log records only
// legal edges and is append-only, that a txid belongs to one operation
// forever (txid_owners plus a foreign key from operations), that a txid is
// the sha256 of its raw_data, and that amounts are NUMERIC(38,0) > 0.
//
// The ledger (migration 0005) too: every account balances (balance + held
// + paid = deposited, each >= 0) and never gives back what was deposited or
// paid; credits are append-only; a hold is born held for its request's
// customer and amount, which never change, and is closed at most once
// (held -> settled | released, SQLSTATE SL003 for a second close, which the
// store maps to sluice.ErrHoldClosed), by an event of its own operation
// whose hold action says so, while the row is in a closing state; an event
// carries a close exactly when it enters confirmed, failed or rejected
// (SL004, sluice.ErrHoldAction). The row's trigger cannot tell a worker
// from an operator, so it allows the union of sluice.Transitions and
// sluice.OperatorTransitions; CAS keeps workers off the operator's edges in
// code. The event log can tell: an operator-only edge or a retry (from =
// to) is recorded only under an "operator:" name.
//
// Rows from before the ledger belong to the customer legacy:pre-0005: those
// whose money had moved (confirmed, failed, rejected) have no hold, every
// other row a held hold of its amount, and the legacy account is credited
// with exactly their sum (ref migration-0005:legacy), so each can still end.
//
// # Ids are a uuid column
//
// Insert refuses an id that is not a canonical lowercase UUID, as every
// store does (sluice.CheckNewOperation decides it for both). Get, CAS and
// Events treat such an id as not found and Release as a no-op, exactly as
// the in-memory store treats an unknown id: the uuid column could not even
// be asked about it.
//
// # How the methods map to SQL
//
// Claim is one UPDATE over a SELECT ... FOR UPDATE SKIP LOCKED on the live
// rows, oldest first, incrementing the fencing token: concurrent claimers
// never wait on each other's rows and never share one. CAS is one
// transaction: the fencing predicate (id, token, state) locks the row or
// matches nothing (ErrFenced), then the row update and its event row, then
// the txid ownership check, the hold's close and the account's move; all
// commit together or not at all. Insert is INSERT ... ON CONFLICT DO
// NOTHING (an existing id is a replay, which needs no funds), then the
// customer's account locked FOR UPDATE, checked and moved, the creation
// event and the hold. Resolve locks the row, checks it is in From, bumps
// the token and writes row, event and close in one transaction; Park is
// one fenced UPDATE; Credit claims its ref with ON CONFLICT DO NOTHING and
// moves the account only if it did.
package postgres
