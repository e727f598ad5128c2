package operator_test

// The operator over the node's HTTP client: an answer that lost a field on
// the way must not prove a paid withdrawal dead (found by an independent
// review, 2026-12-03).

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/nodehttp"
)

// laggingLookups answers every lookup as a node whose solid head is #1
// would for a transaction in a later block: unknown. That is the case
// TxInfo.NodeSolid exists for (a balancer's other node, a failover).
type laggingLookups struct{ tron.Node }

func (l laggingLookups) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{Txid: id, Status: tron.Unknown, NodeSolid: 1}, nil
}

// Money at risk, end to end over nodehttp: a review whose transaction PAID
// (included, SUCCESS, solid) is cancelled and its hold released (the
// customer keeps the tokens and gets the balance back) when (a) the solid
// block's answer lacks "number" (field renamed by a newer server, a proxy
// reshaping it) and (b) the lookup lands on a lagging node. With (a) alone
// the client's decode is the defect: #0 makes the lagging-node guard
// LookupSolid >= SolidNumber always true. The same Evidence.Proves gates
// the pipeline's rebuild (a second payment).
func TestCancelOfAPaidReviewWhenTheSolidNumberIsMissing(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.reviewAfterParking("cust-1")
	w.idle(5 * time.Minute)
	txid := w.get(id).Envelope.Txid
	if info, _ := w.node.Client("truth").Lookup(w.ctx, txid); info.Status != tron.Included || !info.Solid || info.Receipt != tron.ReceiptSuccess {
		t.Fatalf("precondition: %+v, want included, solid, SUCCESS", info)
	}

	var mu sync.Mutex
	srv := &nodehttp.Server{Node: func(string) tron.Node {
		return nodehttp.Serialized(&mu, laggingLookups{w.node.Client("operator")})
	}}
	inner := srv.Handler()
	// The answer loses its "number" on the way (a server of another
	// version): everything else is the real node's.
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if r.URL.Path == nodehttp.PathSolid {
			var m map[string]any
			json.Unmarshal(body, &m)
			delete(m, "number")
			body, _ = json.Marshal(m)
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(rec.Code)
		rw.Write(bytes.TrimSpace(body))
	}))
	defer front.Close()
	client, err := nodehttp.NewClient(front.URL, nodehttp.Options{Caller: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	w.svc.Node = client

	op, err := w.svc.Cancel(w.ctx, id, act)
	if err == nil {
		t.Fatalf("a PAID review was cancelled: %s, hold %s, account %+v (evidence %s)",
			op.State, w.hold(id).State, w.account("cust-1"), w.lastEvent(id).Evidence)
	}
}
