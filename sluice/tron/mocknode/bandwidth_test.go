package mocknode

import (
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Goal: CanRefuseForBandwidth is true exactly for the broadcasts a node would
// take if it had no bandwidth check: only those can be refused for
// bandwidth. Above all, in a network of two nodes where gossip did not carry
// a transaction, the node that never saw it can refuse its re-send while the
// node that holds it cannot (it answers DUP_TRANSACTION_ERROR first). Method:
// each row sets up two nodes, asks the question of one node, then really
// sends the same bytes there: the answer must be SUCCESS when the question
// said yes, and the refusal of an earlier check when it said no. Asking
// records nothing.
func TestCanRefuseForBandwidth(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the transaction to ask about and the node to ask.
		setup func(e *netEnv) (tron.Transaction, int)
		want  bool
		// wantAnswer is what a real send then answers.
		wantAnswer tron.Code
	}{
		{
			name: "the node that holds it in its pool answers DUP first",
			setup: func(e *netEnv) (tron.Transaction, int) {
				tx := e.tx("held", 1)
				e.mustSend(tx, tron.CodeSuccess)
				return tx, 0
			},
			want: false, wantAnswer: tron.CodeDupTransactionError,
		},
		{
			name: "the node gossip never reached, while the producer holds it",
			setup: func(e *netEnv) (tron.Transaction, int) {
				tx := e.tx("unseen", 1)
				e.mustSend(tx, tron.CodeSuccess)
				return tx, 1
			},
			want: true, wantAnswer: tron.CodeSuccess,
		},
		{
			name: "included, on a node in sync: DUP first",
			setup: func(e *netEnv) (tron.Transaction, int) {
				tx := e.tx("included", 1)
				e.mustSend(tx, tron.CodeSuccess)
				e.after(2 * SlotInterval)
				return tx, 1
			},
			want: false, wantAnswer: tron.CodeDupTransactionError,
		},
		{
			name: "included above a lagging node's head, which never heard of it",
			setup: func(e *netEnv) (tron.Transaction, int) {
				tx := e.tx("above", 1)
				e.mustSend(tx, tron.CodeSuccess)
				e.after(2 * SlotInterval)
				e.net.Node(1).SetLag(3)
				return tx, 1
			},
			want: true, wantAnswer: tron.CodeSuccess,
		},
		{
			name: "expired on the asked node's view: the expiration check answers first",
			setup: func(e *netEnv) (tron.Transaction, int) {
				tx := e.tx("expired", 1, expires(e.net.Head().Time.Add(5*time.Second)))
				e.mustSend(tx, tron.CodeSuccess)
				e.after(4 * SlotInterval)
				return tx, 1
			},
			want: false, wantAnswer: tron.CodeTransactionExpirationError,
		},
		{
			name: "a bad signature: SIGERROR first",
			setup: func(e *netEnv) (tron.Transaction, int) {
				tx := e.tx("badsig", 1)
				tx.Signature = append([]byte(nil), tx.Signature...)
				tx.Signature[0] ^= 1
				return tx, 1
			},
			want: false, wantAnswer: tron.CodeSigError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 2, nil)
			e.net.SetGossip(func(Hop) Gossip { return Gossip{Lost: true} }) // keep the pools apart
			e.at(25 * SlotInterval)
			tx, i := tt.setup(e)
			wire, queries := len(e.net.Wire()), len(e.net.Queries())
			if got := e.net.Node(i).CanRefuseForBandwidth(tx); got != tt.want {
				t.Errorf("node %d CanRefuseForBandwidth = %v, want %v", i, got, tt.want)
			}
			if len(e.net.Wire()) != wire || len(e.net.Queries()) != queries {
				t.Errorf("asking recorded a call: wire %d -> %d, queries %d -> %d", wire, len(e.net.Wire()), queries, len(e.net.Queries()))
			}
			if got := e.sendTo(i, tx); got != string(tt.wantAnswer) {
				t.Errorf("then a send to node %d = %s, want %s", i, got, tt.wantAnswer)
			}
		})
	}
}
