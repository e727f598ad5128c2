package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Item is one operation as the queue shows it: the row, and what its event
// log says that the row does not.
type Item struct {
	Operation sluice.Operation
	// Txids is every txid it has had, oldest first (see Txids).
	Txids []tron.Txid
	// Decision and Evidence are the latest the event log holds (nil if
	// none): the stuck policy's answer behind a rebuild, cancel or review,
	// and the chain's word on a txid when it was retired or given up.
	Decision *sluice.Decision
	Evidence *sluice.Evidence
	// Waited is the time since the first send by the service's clock (0
	// if it was never sent): what a customer has been waiting for.
	Waited time.Duration
}

// Page is one page of the queue, ordered by operation id. Next is set when
// the page is full: the following page starts after it (and may be empty).
type Page struct {
	Items []Item
	Next  sluice.OperationID
}

// Queue bounds.
const (
	QueueDefault = 50
	// QueueMax bounds a page: each item costs one read of its event log.
	QueueMax = 200
)

// Queue lists the operations that need a person: every one in review, and
// every non-terminal one parked now, ordered by id, after the cursor, at
// most limit of them.
func (s *Service) Queue(ctx context.Context, after sluice.OperationID, limit int) (Page, error) {
	if limit < 1 || limit > QueueMax {
		return Page{}, &InputError{Field: FieldLimit, Reason: fmt.Sprintf("%d is not in [1, %d]", limit, QueueMax)}
	}
	if after != "" && !after.Canonical() {
		return Page{}, &InputError{Field: FieldAfter, Reason: "must be an operation id (a lowercase UUID)"}
	}
	// Two sorted reads of at most limit rows each: the first limit of
	// their union are the first limit of the queue. The two sets are
	// disjoint (a parked row is non-terminal, review is terminal).
	reviews, err := s.Store.List(ctx, sluice.ListFilter{States: []sluice.State{sluice.Review}, After: after, Limit: limit})
	if err != nil {
		return Page{}, fmt.Errorf("queue: %w", err)
	}
	parked, err := s.Store.List(ctx, sluice.ListFilter{Parked: true, After: after, Limit: limit})
	if err != nil {
		return Page{}, fmt.Errorf("queue: %w", err)
	}
	rows := append(reviews, parked...)
	slices.SortStableFunc(rows, func(a, b sluice.Operation) int { return strings.Compare(string(a.ID), string(b.ID)) })
	rows = slices.CompactFunc(rows, func(a, b sluice.Operation) bool { return a.ID == b.ID })
	var p Page
	if len(rows) > limit {
		rows = rows[:limit]
	}
	if len(rows) == limit {
		p.Next = rows[len(rows)-1].ID
	}
	for _, row := range rows {
		it, err := s.item(ctx, row)
		if err != nil {
			return Page{}, fmt.Errorf("queue: %w", err)
		}
		p.Items = append(p.Items, it)
	}
	return p, nil
}

// Item reads one operation, in the queue or not, as the queue shows it.
func (s *Service) Item(ctx context.Context, id sluice.OperationID) (Item, error) {
	row, err := s.Store.Get(ctx, id)
	if err != nil {
		return Item{}, err
	}
	return s.item(ctx, row)
}

func (s *Service) item(ctx context.Context, row sluice.Operation) (Item, error) {
	events, err := s.Store.Events(ctx, row.ID)
	if err != nil {
		return Item{}, err
	}
	it := Item{Operation: row, Txids: Txids(row, events)}
	for _, e := range events {
		if e.Decision != nil {
			it.Decision = e.Decision
		}
		if e.Evidence != nil {
			it.Evidence = e.Evidence
		}
	}
	if !row.FirstSentAt.IsZero() && s.Clock != nil {
		it.Waited = max(s.Clock.Now().Sub(row.FirstSentAt), 0)
	}
	return it, nil
}
