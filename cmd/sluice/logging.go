package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"sluicesim/sluice"
	"sluicesim/sluice/metrics"
	"sluicesim/sluice/operator"
)

// Log formats (-log-format).
const (
	logText = "text"
	logJSON = "json"
)

// logSink is where serve's log lines go: stderr, one Write per line under
// one lock, so that the lines of many goroutines never interleave and the
// kill point can make sure its line is the last (see lastLine).
type logSink struct {
	mu     sync.Mutex
	w      io.Writer
	format string // logText or logJSON; "" is text
	level  slog.Leveler
}

func newLogSink(w io.Writer, format string, level slog.Leveler) *logSink {
	return &logSink{w: w, format: format, level: level}
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// handler formats records for w at level and above.
func (s *logSink) handler(w io.Writer, level slog.Leveler) slog.Handler {
	if s.format == logJSON {
		return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	}
	return &lineHandler{w: w, level: level}
}

// logger is the service's logger.
func (s *logSink) logger() *slog.Logger { return slog.New(s.handler(s, s.level)) }

// lastLine logs msg at warn, whatever the level, as the last line the
// process writes: it takes the lock for good before writing, so every other
// goroutine's next line waits for ever. The caller is about to kill the
// process. The live check reads a log's last line to tell a death at a
// kill point from a crash; without the lock, a worker logging a transition
// between this line and the signal would make a planned death look like a
// crash.
func (s *logSink) lastLine(msg string, args ...any) {
	s.mu.Lock() // never unlocked
	slog.New(s.handler(s.w, slog.Level(math.MinInt))).Warn(msg, args...)
}

// lineHandler writes a record as one line,
//
//	sluice: 2026/12/01 21:37:06.288344 INFO transition operation_id=3f2b8c1e-... from=validated to=signing
//
// with the prefix and time layout of the log.Logger it replaced, and the
// message as it is. slog.TextHandler would write msg="running 4 workers":
// the live check (cmd/livecheck) reads these lines by their messages (a
// line that ends "running N workers", one with "worker <id>: ", the kill
// point's), and so do operators' greps. Attributes follow as key=value,
// quoted where a space, '=' or '"' would make them ambiguous; a group's
// keys are prefixed with its name and a dot. For a log that a program
// reads, use -log-format json.
type lineHandler struct {
	w     io.Writer
	level slog.Leveler
	attrs []byte // from WithAttrs, formatted, each with its leading space
	group string // the open groups, "a.b." (keys are prefixed with it)
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	b := make([]byte, 0, 256)
	b = append(b, "sluice: "...)
	if !r.Time.IsZero() {
		b = r.Time.AppendFormat(b, "2006/01/02 15:04:05.000000")
		b = append(b, ' ')
	}
	b = append(b, r.Level.String()...)
	b = append(b, ' ')
	if hasControl(r.Message) {
		// A newline inside a message would forge a line of its own.
		b = strconv.AppendQuote(b, r.Message)
	} else {
		b = append(b, r.Message...)
	}
	b = append(b, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		b = appendAttr(b, h.group, a)
		return true
	})
	b = append(b, '\n')
	_, err := h.w.Write(b)
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.attrs = append([]byte(nil), h.attrs...)
	for _, a := range as {
		c.attrs = appendAttr(c.attrs, h.group, a)
	}
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

// appendAttr appends " key=value", or a group's attributes each so, or
// nothing for an empty attribute or group (slog's rules for handlers).
func appendAttr(b []byte, group string, a slog.Attr) []byte {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return b
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			group += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			b = appendAttr(b, group, g)
		}
		return b
	}
	b = append(b, ' ')
	b = appendText(b, group+a.Key)
	b = append(b, '=')
	switch a.Value.Kind() {
	case slog.KindTime:
		return appendText(b, a.Value.Time().Format(time.RFC3339Nano))
	default:
		return appendText(b, a.Value.String())
	}
}

// appendText appends s, quoted if it would not read back as one token.
func appendText(b []byte, s string) []byte {
	if s == "" || !utf8.ValidString(s) || hasControl(s) {
		return strconv.AppendQuote(b, s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '=' || r == '"' || !unicode.IsPrint(r) {
			return strconv.AppendQuote(b, s)
		}
	}
	return append(b, s...)
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// workerLog logs what a worker's writes do to the store, with the
// operation id on every line: each transition that lands (info), a write
// fenced off because another claim took the operation (warn: the worker
// stops), a write that failed otherwise (warn, or error for the two that
// are bugs), and at debug each claim and each wait the worker decided
// (Release: the next look no sooner than after). Tick's own errors are
// runWorker's to log.
type workerLog struct {
	sluice.Store
	worker sluice.WorkerID
	log    *slog.Logger
}

func (s workerLog) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	ops, err := s.Store.Claim(ctx, worker, limit)
	if err == nil && s.log.Enabled(ctx, slog.LevelDebug) {
		for _, op := range ops {
			s.log.DebugContext(ctx, "claimed", "operation_id", op.ID, "state", op.State, "token", op.Token, "worker", worker)
		}
	}
	return ops, err
}

func (s workerLog) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	op, err := s.Store.CAS(ctx, c)
	args := []any{"operation_id", c.ID, "from", c.From, "to", c.To, "token", c.Token, "worker", c.Worker}
	switch {
	case err == nil:
		if !op.Envelope.Txid.IsZero() {
			args = append(args, "txid", op.Envelope.Txid)
		}
		if !c.RetiredTxid.IsZero() {
			args = append(args, "retired_txid", c.RetiredTxid)
		}
		if c.Reason != "" {
			args = append(args, "reason", c.Reason)
		}
		if c.Evidence != nil {
			args = append(args, "evidence", c.Evidence.String())
		}
		s.log.InfoContext(ctx, "transition", append(args, "note", c.Note)...)
	case errors.Is(err, sluice.ErrFenced):
		s.log.WarnContext(ctx, "fenced: another claim holds the operation; this worker leaves it", args...)
	case errors.Is(err, sluice.ErrIllegalTransition) || errors.Is(err, sluice.ErrTxidTaken):
		s.log.ErrorContext(ctx, "write refused: a bug", append(args, "err", err)...)
	default:
		// The write may have landed with its answer lost; the worker
		// re-reads before acting again.
		s.log.WarnContext(ctx, "write failed: it may or may not have landed", append(args, "err", err)...)
	}
	return op, err
}

func (s workerLog) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	err := s.Store.Release(ctx, id, token, after)
	if err == nil {
		s.log.DebugContext(ctx, "wait", "operation_id", id, "token", token, "worker", s.worker, "after", after)
	}
	return err
}

// intakeLog logs the intake API's creations (info) and its store failures
// (warn): the API answers a failing store with a 503 that says only
// "retry", and the operator needs to see why.
type intakeLog struct {
	sluice.Store
	log *slog.Logger
}

func (s intakeLog) Insert(ctx context.Context, n sluice.NewOperation) (sluice.Operation, bool, error) {
	op, created, err := s.Store.Insert(ctx, n)
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "intake: store failed", "call", "insert", "operation_id", n.ID, "err", err)
	case created:
		// The amount as the API writes it, a decimal string: as a value,
		// JSON would write the base units.
		s.log.InfoContext(ctx, "created", "operation_id", op.ID, "customer", op.Request.Customer,
			"to_address", op.Request.To.String(), "amount", op.Request.Amount.String(), "asset", op.Request.Asset)
	}
	return op, created, err
}

func (s intakeLog) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	op, err := s.Store.Get(ctx, id)
	if err != nil && !errors.Is(err, sluice.ErrNotFound) {
		s.log.WarnContext(ctx, "intake: store failed", "call", "get", "operation_id", id, "err", err)
	}
	return op, err
}

func (s intakeLog) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	evs, err := s.Store.Events(ctx, id)
	if err != nil && !errors.Is(err, sluice.ErrNotFound) {
		s.log.WarnContext(ctx, "intake: store failed", "call", "events", "operation_id", id, "err", err)
	}
	return evs, err
}

// stepObservers hands each worker step to every observer in turn.
type stepObservers []sluice.Observer

func (xs stepObservers) Observe(o sluice.Observation) {
	for _, x := range xs {
		x.Observe(o)
	}
}

// actionObservers hands each operator action to every observer in turn.
type actionObservers []operator.Observer

func (xs actionObservers) ObserveAction(a operator.Action) {
	for _, x := range xs {
		x.ObserveAction(a)
	}
}

// stepLog logs what a worker step decided beyond the transition it landed
// (workerLog logs those): the stuck policy's decision (info; debug for a
// wait, which comes with every poll of a txid the chain does not know), a
// park with its reason and backoff (warn: an operational error of ours),
// and an operation sent to review (warn: a person must act), each with the
// operation id.
type stepLog struct {
	log *slog.Logger
}

func (l stepLog) Observe(o sluice.Observation) {
	ctx := context.Background()
	id := o.After.ID
	if d := o.Decision; d != nil {
		level := slog.LevelInfo
		if d.Action == sluice.Wait {
			level = slog.LevelDebug
		}
		l.log.Log(ctx, level, "decision", "operation_id", id, "worker", o.Worker, "state", o.Before.State,
			"action", d.Action.String(), "waited", d.Waited, "rebuilds", d.Rebuilds, "reason", d.Reason)
	}
	if o.Err != nil {
		return // workerLog has said what the write did
	}
	switch {
	case o.After.State == sluice.Review && o.Before.State != sluice.Review:
		l.log.WarnContext(ctx, "review: an operator decides (GET /v1/queue on the operator API)", "operation_id", id,
			"worker", o.Worker, "from", o.Before.State, "cause", metrics.ReviewCause(o), "reason", o.After.Reason)
	case o.Park != "" && o.After.Parked():
		l.log.WarnContext(ctx, "parked", "operation_id", id, "worker", o.Worker, "state", o.After.State,
			"parks", o.After.Parks, "not_before", o.After.NotBefore, "reason", o.Park)
	}
}

// actionLog logs every operator action with who, why and the operation id:
// landed (info, with the transition and, for a cancel, the proof), refused
// or invalid (info: the operator was told why), failed (warn: the store or
// the node).
type actionLog struct {
	log *slog.Logger
}

func (l actionLog) ObserveAction(a operator.Action) {
	ctx := context.Background()
	args := []any{"action", a.Kind.String(), "operator", a.Operator, "why", a.Why}
	if a.Kind == operator.Credit {
		args = append(args, "customer", a.Credit.Customer, "ref", a.Credit.Ref, "amount", a.Credit.Amount.String())
	} else {
		args = append(args, "operation_id", a.ID)
	}
	switch {
	case a.Err == nil && a.Kind == operator.Credit:
		l.log.InfoContext(ctx, "operator action", append(args, "credited", a.Credited, "balance", a.Account.Balance.String())...)
	case a.Err == nil:
		args = append(args, "from", a.Before.State, "to", a.After.State, "token", a.After.Token)
		if !a.Txid.IsZero() {
			args = append(args, "txid", a.Txid)
		}
		if a.Evidence != nil {
			args = append(args, "evidence", a.Evidence.String())
		}
		l.log.InfoContext(ctx, "operator action", args...)
	case errors.Is(a.Err, operator.ErrRefused), errors.Is(a.Err, operator.ErrInvalid),
		errors.Is(a.Err, sluice.ErrPayloadMismatch), errors.Is(a.Err, sluice.ErrNotFound):
		l.log.InfoContext(ctx, "operator action refused", append(args, "err", a.Err)...)
	default:
		l.log.WarnContext(ctx, "operator action failed: it may or may not have landed", append(args, "err", a.Err)...)
	}
}
