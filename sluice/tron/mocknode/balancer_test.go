package mocknode

import (
	"errors"
	"reflect"
	"testing"

	"sluicesim/sluice/tron"
)

// Goal: the balancer sends each call where the world's route hook says:
// sticky per worker, or a different node per call. Method: two workers make
// the same calls through balancers over three nodes; the network's records
// show which node each call reached.
func TestBalancerRoutes(t *testing.T) {
	tests := []struct {
		name  string
		route func(calls *int) func(Route) int
		want  []int // node of each recorded call, in Seq order
	}{
		{
			name: "sticky per worker",
			route: func(*int) func(Route) int {
				return func(r Route) int { return map[string]int{"w1": 1, "w2": 2}[r.Worker] }
			},
			want: []int{1, 2, 1, 2, 1, 2, 1, 2},
		},
		{
			name: "round robin per call",
			route: func(calls *int) func(Route) int {
				return func(Route) int { *calls++; return *calls % 3 }
			},
			want: []int{1, 2, 0, 1, 2, 0, 1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 3, nil)
			var calls int
			route := tt.route(&calls)
			w1, w2 := e.net.Balancer("w1", route), e.net.Balancer("w2", route)
			tx1, tx2 := e.tx("one", 1), e.tx("two", 1)
			sendAs(t, w1, tx1)
			sendAs(t, w2, tx2)
			for _, c := range []tron.Node{w1, w2} {
				c.HeadBlock(t.Context())
			}
			for _, c := range []tron.Node{w1, w2} {
				c.SolidBlock(t.Context())
			}
			for _, c := range []tron.Node{w1, w2} {
				c.Lookup(t.Context(), tx1.Txid())
			}
			var got []int
			for seq := 1; seq <= 8; seq++ {
				for _, w := range e.net.Wire() {
					if w.Seq == seq {
						got = append(got, w.Node)
					}
				}
				for _, q := range e.net.Queries() {
					if q.Seq == seq {
						got = append(got, q.Node)
					}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("calls reached nodes %v, want %v", got, tt.want)
			}
		})
	}
}

// Goal: failover on error. A call that fails with an error is offered to the
// route hook again with the node and error; an answer, even a refusal, goes
// to the caller at once; attempts stop at FailoverMax. Method: faults
// scripted on node 0, a route hook that starts there and fails over as each
// row says.
func TestBalancerFailover(t *testing.T) {
	tests := []struct {
		name      string
		faults0   []Fault           // node 0's broadcast script
		failover  func(r Route) int // asked for attempts after the first
		wantCode  string            // what the caller sees
		wantNodes []int             // node of each attempt on the wire
		wantRoute func(t *testing.T, rs []Route)
	}{
		{
			name:    "no fault: one attempt",
			faults0: nil, failover: func(Route) int { return 1 },
			wantCode: "SUCCESS", wantNodes: []int{0},
		},
		{
			name:    "timeout fails over to node 1",
			faults0: []Fault{LoseRequest}, failover: func(Route) int { return 1 },
			wantCode: "SUCCESS", wantNodes: []int{0, 1},
			wantRoute: func(t *testing.T, rs []Route) {
				if len(rs) != 2 || rs[1].Attempt != 1 || rs[1].Prev != 0 || !errors.Is(rs[1].PrevErr, tron.ErrTimeout) {
					t.Errorf("second route call = %+v, want attempt 1 after a timeout on node 0", rs[len(rs)-1])
				}
				if rs[0].Prev != -1 || rs[0].PrevErr != nil || rs[0].Kind != Broadcast || rs[0].Worker != "w1" {
					t.Errorf("first route call = %+v, want a fresh broadcast by w1", rs[0])
				}
			},
		},
		{
			name:    "an accept behind a timeout, then DUP from the same node",
			faults0: []Fault{AcceptThenTimeout}, failover: func(Route) int { return 0 },
			wantCode: "DUP_TRANSACTION_ERROR", wantNodes: []int{0, 0},
		},
		{
			name:    "stop hands the timeout to the caller",
			faults0: []Fault{LoseRequest}, failover: func(Route) int { return Stop },
			wantCode: AnswerTimeout, wantNodes: []int{0},
		},
		{
			name:    "a refusal is an answer, not retried",
			faults0: []Fault{Busy}, failover: func(Route) int { panic("asked again after an answer") },
			wantCode: "SERVER_BUSY", wantNodes: []int{0},
		},
		{
			name:     "bounded at FailoverMax",
			faults0:  []Fault{LoseRequest, LoseRequest, LoseRequest, LoseRequest, LoseRequest, LoseRequest, LoseRequest, LoseRequest, LoseRequest},
			failover: func(Route) int { return 0 },
			wantCode: AnswerTimeout, wantNodes: []int{0, 0, 0, 0, 0, 0, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 2, nil)
			for _, f := range tt.faults0 {
				e.net.Node(0).Next(Broadcast, f)
			}
			var rs []Route
			b := e.net.Balancer("w1", func(r Route) int {
				rs = append(rs, r)
				if r.Attempt == 0 {
					return 0
				}
				return tt.failover(r)
			})
			if got := sendAs(t, b, e.tx("failover", 1)); got != tt.wantCode {
				t.Errorf("caller saw %s, want %s", got, tt.wantCode)
			}
			var nodes []int
			for _, w := range e.net.Wire() {
				nodes = append(nodes, w.Node)
			}
			if !reflect.DeepEqual(nodes, tt.wantNodes) {
				t.Errorf("attempts on nodes %v, want %v", nodes, tt.wantNodes)
			}
			if tt.wantRoute != nil {
				tt.wantRoute(t, rs)
			}
		})
	}

	t.Run("queries fail over too", func(t *testing.T) {
		e := newNetEnv(t, 2, nil)
		e.net.Node(0).Next(Solid, QueryTimeout)
		b := e.net.Balancer("w1", func(r Route) int { return r.Attempt })
		if _, err := b.SolidBlock(t.Context()); err != nil {
			t.Errorf("SolidBlock through failover: %v, want an answer from node 1", err)
		}
		q := e.net.Queries()
		if len(q) != 2 || q[0].Node != 0 || q[0].Answer != AnswerTimeout || q[1].Node != 1 {
			t.Errorf("queries = %+v, want a timeout on node 0 then node 1", q)
		}
	})
}

// A route hook that stops before any attempt or names a node that does not
// exist is a wiring bug.
func TestBalancerMisusePanics(t *testing.T) {
	tests := []struct {
		name  string
		route func(Route) int
		want  string
	}{
		{"stop on the first attempt", func(Route) int { return Stop }, "first attempt"},
		{"no such node", func(Route) int { return 2 }, "node 2 of a network of 2"},
		{"negative node", func(Route) int { return -2 }, "node -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 2, nil)
			b := e.net.Balancer("w1", tt.route)
			mustPanic(t, tt.want, func() { b.HeadBlock(t.Context()) })
		})
	}
	e := newNetEnv(t, 2, nil)
	mustPanic(t, "nil route", func() { e.net.Balancer("w1", nil) })
}
