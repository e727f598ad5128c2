package nodehttp

// Answers that must not be taken as they come (found by an independent
// review, 2026-12-03; each failed before the client refused it): a field
// missing is not a zero, and a redirect is not followed.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// fixed serves canned answers by path.
func fixed(t *testing.T, answers map[string]string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, a)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var blockID = strings.Repeat("ab", 32)

// A solid block answer without "number" (a renamed field, a proxy that
// reshapes answers, a server of another version) decodes as block #0 with
// no error. #0 is the unsafe value: Evidence.Proves compares the lookup
// node's solid head against it, so the lagging-node guard passes for any
// lookup, and an "unknown" from a node far behind proves death.
func TestSolidBlockWithoutNumberIsRefused(t *testing.T) {
	solidTime := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	txid := tron.Txid{7}
	c := fixed(t, map[string]string{
		PathSolid: fmt.Sprintf(`{"block_id":%q,"timestamp":%q}`, blockID, solidTime.Format(time.RFC3339)),
		// A lagging node (solid head #3) that has not seen the block
		// (say #190) that included txid.
		PathLookup: fmt.Sprintf(`{"txid":%q,"status":"unknown","node_solid":3}`, txid),
	})
	ctx := context.Background()
	solid, err := c.SolidBlock(ctx)
	if err == nil {
		// What the pipeline and the operator's cancel would then file:
		info, lerr := c.Lookup(ctx, txid)
		if lerr != nil {
			t.Fatal(lerr)
		}
		ev := sluice.Evidence{Txid: txid, Expiration: solidTime.Add(-5 * time.Minute), Margin: time.Minute,
			SolidNumber: solid.Number, SolidTime: solid.Time, Lookup: info.Status, LookupSolid: info.NodeSolid}
		t.Fatalf("solid block without a number decoded as #%d, no error; evidence from a node whose solid head is #%d Proves()=%v",
			solid.Number, info.NodeSolid, ev.Proves())
	}
}

// A head block without "timestamp" decodes as the zero time: the next
// envelope's expiration is head.Time + 60 s, i.e. in year 1, and the build
// is wasted (the node refuses it as expired; the proof of death that
// follows spends a rebuild).
func TestHeadBlockWithoutTimeIsRefused(t *testing.T) {
	c := fixed(t, map[string]string{PathHead: fmt.Sprintf(`{"number":200,"block_id":%q}`, blockID)})
	b, err := c.HeadBlock(context.Background())
	if err == nil {
		t.Fatalf("head block without a timestamp: %+v, no error", b)
	}
}

// An "included" answer without receipt or block number is taken as is.
// The pipeline's await reads a solid inclusion whose receipt is not SUCCESS
// as a failed receipt; Evidence.Proves refuses Receipt "" and BlockNumber
// 0, so failedReceipt waits, with no park, forever: a withdrawal stuck in
// broadcast that never reaches review.
func TestIncludedWithoutReceiptIsRefused(t *testing.T) {
	txid := tron.Txid{9}
	c := fixed(t, map[string]string{
		PathLookup: fmt.Sprintf(`{"txid":%q,"status":"included","solid":true,"node_solid":500}`, txid),
	})
	info, err := c.Lookup(context.Background(), txid)
	if err == nil {
		t.Fatalf("included answer without receipt/block: %+v, no error", info)
	}
}

// Redirects are followed. A 307/308 re-POSTs the signed transaction (and
// X-Node-Caller) to whatever host the Location names, and the answer from
// that host is then believed (a lookup "unknown" from it can feed a proof
// of death). A node client should refuse to be redirected.
func TestRedirectIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"number":999999,"block_id":%q,"timestamp":"2030-01-01T00:00:00Z"}`, blockID)
	}))
	defer other.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer front.Close()
	c, err := NewClient(front.URL, Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.SolidBlock(context.Background())
	if err == nil || elsewhere.Load() != 0 {
		t.Fatalf("redirected: answer %+v from another host (%d requests there), err %v; want an error and no request elsewhere", b, elsewhere.Load(), err)
	}
}

// Goal: a body trickled slower than the timeout is still bounded (the
// call's context covers the body read), so a slow node cannot hold a
// worker past its call's timeout.
func TestTrickledBodyIsBounded(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			w.Write([]byte(" "))
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	defer close(done)
	c, _ := NewClient(srv.URL, Options{Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := c.HeadBlock(context.Background())
	if el := time.Since(start); err == nil || el > 2*time.Second {
		t.Fatalf("trickled body: err %v after %s", err, el)
	}
}
