package nodehttp

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// deadlineTransport answers every request with an error after noting the
// deadline its context carries (none: the zero time).
type deadlineTransport struct{ deadline time.Time }

func (t *deadlineTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.deadline, _ = r.Context().Deadline()
	return nil, errors.New("no node here")
}

// Goal: each call carries a deadline of the client's own: Options.Timeout
// when set, DefaultTimeout when it is zero (as Options says), never none. A
// zero read as "no deadline" (blind bug 304) leaves every worker hung on a
// node that takes the connection and never answers, and no timeout is ever
// counted, so the alert on node timeouts stays silent.
func TestEveryCallHasADeadline(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{0, DefaultTimeout}, {-time.Second, DefaultTimeout}, {1500 * time.Millisecond, 1500 * time.Millisecond}} {
		tr := &deadlineTransport{}
		c, err := NewClient("http://node.test", Options{Timeout: tc.set, HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if _, err := c.HeadBlock(context.Background()); err == nil {
			t.Fatalf("Timeout %s: a call with no node answered", tc.set)
		}
		if tr.deadline.IsZero() {
			t.Fatalf("Timeout %s: the call went out with no deadline", tc.set)
		}
		// The deadline was set between began and now, tc.want ahead.
		if got := tr.deadline.Sub(began); got < tc.want || got > tc.want+time.Since(began) {
			t.Errorf("Timeout %s: the call's deadline is %s ahead, want %s", tc.set, got, tc.want)
		}
	}
}
