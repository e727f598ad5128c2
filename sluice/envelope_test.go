package sluice_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Goal: a worker never signs, sends, reconciles or awaits an envelope whose
// stored txid is not its raw data's. Bytes whose txid differs from the
// recorded one would be sent under one txid and reconciled under another:
// the chain would be asked about a transaction that is not the one sent,
// and a rebuild on its "death" pays twice. The pipeline's guard
// (mustHaveEnvelope) panics instead, in every state that uses the envelope,
// and through the workers' shared txid cache too, which has seen the
// untampered raw data and must not answer its txid for the tampered one.
func TestWorkerRefusesAnInconsistentEnvelope(t *testing.T) {
	tamper := map[string]func(env *sluice.Envelope){
		"raw data changed": func(env *sluice.Envelope) { env.Raw.Expiration++ },
		"txid zero":        func(env *sluice.Envelope) { env.Txid = tron.Txid{} },
		"txid of another":  func(env *sluice.Envelope) { env.Txid[0] ^= 1 },
	}
	for _, state := range []sluice.State{sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast} {
		for _, how := range []string{"raw data changed", "txid zero", "txid of another"} {
			t.Run(fmt.Sprintf("%s/%s", state, how), func(t *testing.T) {
				w := newWorld(t)
				// The first worker dies right after writing the state, so
				// the next claim finds the row in it (a tick otherwise
				// carries an operation through several states).
				first := w.spawn("w1")
				first.store.afterCAS = func(_ sluice.Change, op sluice.Operation, err error) {
					if err == nil && op.State == state {
						panic(crash{"after-cas"})
					}
				}
				w.submit("12.5")
				for range 600 {
					if first.tick(); first.dead {
						break
					}
				}
				if !first.dead {
					t.Fatalf("the operation never reached %s:\n%s", state, w.dump())
				}
				p := w.spawn("w2")
				p.worker.Pipeline.Txids = tron.NewTxidCache(16)
				tampered := false
				p.store.afterClaim = func(ops []sluice.Operation, _ error) {
					for i := range ops {
						if ops[i].State == state && !tampered {
							// The shared cache first learns the true
							// envelope's txid, as a worker sharing it would
							// have.
							if got := p.worker.Pipeline.Txids.Txid(&ops[i].Envelope.Raw); got != ops[i].Envelope.Txid {
								t.Fatalf("stored txid %s, raw data's %s", ops[i].Envelope.Txid, got)
							}
							tamper[how](&ops[i].Envelope)
							tampered = true
						}
					}
				}
				msg := ""
				for range 600 {
					claimed, panicked := tickCatching(p)
					if panicked != "" {
						msg = panicked
						break
					}
					if w.settled() {
						break
					}
					if claimed == 0 {
						w.clock.Advance(time.Second)
					}
				}
				if !tampered {
					t.Fatalf("no claim saw the operation in %s:\n%s", state, w.dump())
				}
				if !strings.Contains(msg, "without a consistent envelope") || !strings.Contains(msg, state.String()) {
					t.Fatalf("worker given a tampered envelope in %s: panic %q, want the envelope guard's\n%s", state, msg, w.dump())
				}
			})
		}
	}
}

// tickCatching ticks p once and returns the panic's text, if any.
func tickCatching(p *proc) (claimed int, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprint(r)
		}
	}()
	rep, err := p.worker.Tick(p.w.ctx)
	if err != nil {
		p.w.t.Fatalf("Tick: %v", err)
	}
	return rep.Claimed, ""
}
