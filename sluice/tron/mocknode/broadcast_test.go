package mocknode

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// The expiration window at broadcast is [head + 3 s, head + 24 h], inclusive.
func TestExpirationWindowAtBroadcast(t *testing.T) {
	tests := []struct {
		name string
		lead time.Duration // expiration - head time
		want tron.Code
	}{
		{"in the past", -time.Second, tron.CodeTransactionExpirationError},
		{"at head", 0, tron.CodeTransactionExpirationError},
		{"1 ms short of head+3s", 3*time.Second - time.Millisecond, tron.CodeTransactionExpirationError},
		{"exactly head+3s", 3 * time.Second, tron.CodeSuccess},
		{"default 60s", time.Minute, tron.CodeSuccess},
		{"exactly head+24h", 24 * time.Hour, tron.CodeSuccess},
		{"1 ms past head+24h", 24*time.Hour + time.Millisecond, tron.CodeTransactionExpirationError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			// The clock sits mid-slot: the window is judged from the head's
			// time, not the clock's.
			e.at(31 * time.Second)
			head := e.node.Head().Time
			tx := e.tx("exp", 1, expires(head.Add(tt.lead)))
			if got := e.send(tx); got != string(tt.want) {
				t.Errorf("Broadcast with expiration head%+v = %s, want %s", tt.lead, got, tt.want)
			}
		})
	}
}

// A block may include a transaction only while its expiration is later than
// the PARENT block's time. With one transaction per block, the third of three
// pending transactions waits for block 3, whose parent is block 2 (+6 s);
// whether it lands then depends on its expiration against that time alone.
func TestValidityRuleAgainstParentTime(t *testing.T) {
	tests := []struct {
		name      string
		past      time.Duration // expiration - time of block 2 (the parent of block 3)
		wantLands bool
	}{
		{"expiration equal to parent time never lands", 0, false},
		{"expiration before parent time never lands", -2 * time.Second, false},
		{"expiration 1 ms after parent time lands", time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.BlockCapacity = 1 })
			e.mustSend(e.tx("first", 1), tron.CodeSuccess)
			e.mustSend(e.tx("second", 1), tron.CodeSuccess)
			block2 := genesis.Add(2 * SlotInterval)
			third := e.tx("third", 1, expires(block2.Add(tt.past)))
			// At broadcast the head is block 0 at +0s, so every row is
			// within the broadcast window: only the block rule decides.
			e.mustSend(third, tron.CodeSuccess)

			e.at(3 * SlotInterval)
			if got := e.node.Head().Number; got != 3 {
				t.Fatalf("head %d, want 3", got)
			}
			info := e.node.TxInfo(third.Txid())
			if got := info.Status == tron.Included; got != tt.wantLands {
				t.Fatalf("third included = %v (status %s), want %v", got, info.Status, tt.wantLands)
			}
			if tt.wantLands {
				if info.BlockNumber != 3 {
					t.Errorf("third in block %d, want 3", info.BlockNumber)
				}
				return
			}
			if got := eventCount(e.node, ExpiredDrop); got != 1 {
				t.Errorf("ExpiredDrop events = %d, want 1", got)
			}
			if got := e.node.BlockTxids(3); len(got) != 0 {
				t.Errorf("block 3 holds %d transactions, want 0", len(got))
			}
			// Re-broadcasting the same bytes can never bring it back.
			e.mustSend(third, tron.CodeTransactionExpirationError)
			e.at(time.Hour)
			if got := e.status(third.Txid()); got != tron.Unknown {
				t.Errorf("an hour later the dead transaction is %s, want unknown", got)
			}
			for _, inc := range e.node.Inclusions() {
				if inc.Txid == third.Txid() {
					t.Errorf("dead transaction included in block %d", inc.BlockNumber)
				}
			}
		})
	}
}

// The parent-time rule with missed slots: the parent is the last block
// produced, not the previous slot. A transaction expiring between the head
// and the next produced block still lands, because only the parent's time
// counts.
func TestValidityRuleAcrossMissedSlots(t *testing.T) {
	e := newEnv(t, nil)
	tx := e.tx("late block", 1, expires(genesis.Add(3*time.Second)))
	e.mustSend(tx, tron.CodeSuccess)
	e.node.SkipSlots(5) // the next block is at +18s, long after the expiration
	e.at(18 * time.Second)
	info := e.node.TxInfo(tx.Txid())
	if info.Status != tron.Included || info.BlockNumber != 1 {
		t.Fatalf("status %s in block %d, want included in block 1 (parent is block 0 at +0s)", info.Status, info.BlockNumber)
	}
	if got := info.BlockTime.Sub(genesis); got != 18*time.Second {
		t.Errorf("block time +%s, want +18s", got)
	}
}

// nonceSigner stands for a random-nonce signer (ECDSA, a KMS): every signature
// of the same raw data is different, yet all verify, and the txid is the same.
type nonceSigner struct {
	key   []byte
	nonce byte
}

func (s *nonceSigner) Sign(_ context.Context, raw tron.RawData) ([]byte, error) {
	s.nonce++
	return append([]byte{s.nonce}, s.mac(raw)...), nil
}

func (s *nonceSigner) Verify(raw tron.RawData, sig []byte) bool {
	return len(sig) == 1+sha256.Size && hmac.Equal(sig[1:], s.mac(raw))
}

func (s *nonceSigner) mac(raw tron.RawData) []byte {
	id := raw.Txid()
	m := hmac.New(sha256.New, s.key)
	m.Write(id[:])
	return m.Sum(nil)
}

// The node deduplicates by txid against its pool and its blocks: the same
// bytes twice, or the same raw data signed again, is DUP and lands once. A
// rebuild (new timestamp) is a new txid and lands again: that is the double
// payment sluice must never cause, and the node does nothing to stop it.
func TestDedup(t *testing.T) {
	t.Run("same bytes while pending and after inclusion", func(t *testing.T) {
		e := newEnv(t, nil)
		tx := e.tx("op1", 5)
		e.mustSend(tx, tron.CodeSuccess)
		e.mustSend(tx, tron.CodeDupTransactionError)
		e.at(3 * time.Second)
		e.mustSend(tx, tron.CodeDupTransactionError)
		e.at(30 * time.Second)
		if got := len(e.node.Inclusions()); got != 1 {
			t.Errorf("%d inclusions, want 1", got)
		}
		acc := e.node.Accepted()
		if len(acc) != 1 || acc[0].Times != 1 {
			t.Errorf("Accepted() = %+v, want one txid accepted once", acc)
		}
		if got := e.node.Balance(alice); got != 5 {
			t.Errorf("alice balance %d, want 5", got)
		}
		var accepted []bool
		for _, w := range e.node.Wire() {
			accepted = append(accepted, w.Accepted)
		}
		if len(accepted) != 3 || !accepted[0] || !accepted[1] || !accepted[2] {
			t.Errorf("Wire Accepted flags %v, want [true true true] (DUP means the node has it)", accepted)
		}
	})

	t.Run("re-signed raw data", func(t *testing.T) {
		ns := &nonceSigner{key: []byte("k")}
		e := newEnv(t, func(c *Config) { c.Verifier = ns })
		raw := e.raw("op1", 5)
		sig1, _ := ns.Sign(context.Background(), raw)
		sig2, _ := ns.Sign(context.Background(), raw)
		if bytes.Equal(sig1, sig2) {
			t.Fatal("test signer produced equal signatures; the test needs distinct ones")
		}
		a, b := tron.Transaction{Raw: raw, Signature: sig1}, tron.Transaction{Raw: raw, Signature: sig2}
		if a.Txid() != b.Txid() {
			t.Fatal("re-signing changed the txid")
		}
		e.mustSend(a, tron.CodeSuccess)
		e.mustSend(b, tron.CodeDupTransactionError)
		e.at(3 * time.Second)
		e.mustSend(b, tron.CodeDupTransactionError)
		if got := len(e.node.Inclusions()); got != 1 {
			t.Errorf("%d inclusions, want 1", got)
		}
	})

	t.Run("rebuild is a new txid", func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.tx("op1", 5)
		e.after(time.Millisecond)
		b := e.tx("op1", 5) // same fields, later timestamp
		if a.Txid() == b.Txid() {
			t.Fatal("rebuild kept the txid")
		}
		e.mustSend(a, tron.CodeSuccess)
		e.mustSend(b, tron.CodeSuccess)
		e.at(3 * time.Second)
		if got := e.node.Balance(alice); got != 10 {
			t.Errorf("alice balance %d, want 10: both builds land", got)
		}
	})
}

// Each row breaks several checks at once; the node must answer with the first
// in java-tron's order: pool full, contract present, expiration, signature,
// TAPoS, size, duplicate, contract validation.
func TestBroadcastCheckOrder(t *testing.T) {
	badSig := func(tx tron.Transaction) tron.Transaction {
		tx.Signature = bytes.Repeat([]byte{0xee}, len(tx.Signature))
		return tx
	}
	expired := func(e *env) func(*tron.RawData) { return expires(e.node.Head().Time) }
	badRef := func(r *tron.RawData) { r.RefBlockHash[0] ^= 0xff }
	big := func(r *tron.RawData) { r.Memo = bytes.Repeat([]byte{'m'}, 400) }
	noData := func(r *tron.RawData) { r.Contract.Data = nil }
	noContract := func(r *tron.RawData) { r.Contract.Contract = tron.Address{} }
	notUSDT := func(r *tron.RawData) { r.Contract.Contract = bob }
	notTransfer := func(r *tron.RawData) { r.Contract.Data = []byte{0xde, 0xad, 0xbe, 0xef} }

	tests := []struct {
		name string
		cfg  func(*Config)
		tx   func(e *env) tron.Transaction
		want tron.Code
	}{
		{
			name: "pool full before anything else",
			cfg:  func(c *Config) { c.PoolMax = 1 },
			tx: func(e *env) tron.Transaction {
				e.mustSend(e.tx("filler", 1), tron.CodeSuccess)
				return badSig(e.tx("x", 1, noData, expired(e), badRef, big))
			},
			want: tron.CodeServerBusy,
		},
		{
			name: "pool full before duplicate",
			cfg:  func(c *Config) { c.PoolMax = 1 },
			tx: func(e *env) tron.Transaction {
				tx := e.tx("filler", 1)
				e.mustSend(tx, tron.CodeSuccess)
				return tx
			},
			want: tron.CodeServerBusy,
		},
		{
			name: "no call data before expiration",
			tx:   func(e *env) tron.Transaction { return badSig(e.tx("x", 1, noData, expired(e))) },
			want: tron.CodeContractValidateError,
		},
		{
			name: "no contract address before expiration",
			tx:   func(e *env) tron.Transaction { return badSig(e.tx("x", 1, noContract, expired(e))) },
			want: tron.CodeContractValidateError,
		},
		{
			name: "expiration before signature",
			tx:   func(e *env) tron.Transaction { return badSig(e.tx("x", 1, expired(e), badRef, big)) },
			want: tron.CodeTransactionExpirationError,
		},
		{
			name: "signature before tapos",
			tx:   func(e *env) tron.Transaction { return badSig(e.tx("x", 1, badRef, big, notUSDT)) },
			want: tron.CodeSigError,
		},
		{
			name: "tapos before size",
			tx:   func(e *env) tron.Transaction { return e.tx("x", 1, badRef, big, notUSDT) },
			want: tron.CodeTaposError,
		},
		{
			name: "size before contract validation",
			tx:   func(e *env) tron.Transaction { return e.tx("x", 1, big, notUSDT) },
			want: tron.CodeTooBigTransactionError,
		},
		{
			name: "signature counts toward size",
			cfg: func(c *Config) {
				// Exactly one byte too many with the 32-byte signature.
				c.MaxTxBytes = len(sizeProbe().Marshal()) + 31
			},
			tx:   func(e *env) tron.Transaction { return e.tx("size", 1) },
			want: tron.CodeTooBigTransactionError,
		},
		{
			name: "exactly at the size limit",
			cfg:  func(c *Config) { c.MaxTxBytes = len(sizeProbe().Marshal()) + 32 },
			tx:   func(e *env) tron.Transaction { return e.tx("size", 1) },
			want: tron.CodeSuccess,
		},
		{
			name: "included then re-sent after expiry: expiration, not dup",
			tx: func(e *env) tron.Transaction {
				tx := e.tx("x", 1)
				e.mustSend(tx, tron.CodeSuccess)
				e.after(2 * time.Minute)
				if got := e.status(tx.Txid()); got != tron.Included {
					e.t.Fatalf("setup: %s, want included", got)
				}
				return tx
			},
			want: tron.CodeTransactionExpirationError,
		},
		{
			name: "included then re-sent with a bad signature: sigerror, not dup",
			tx: func(e *env) tron.Transaction {
				tx := e.tx("x", 1)
				e.mustSend(tx, tron.CodeSuccess)
				e.after(3 * time.Second)
				return badSig(tx)
			},
			want: tron.CodeSigError,
		},
		{
			name: "pending then re-sent: dup",
			tx: func(e *env) tron.Transaction {
				tx := e.tx("x", 1)
				e.mustSend(tx, tron.CodeSuccess)
				return tx
			},
			want: tron.CodeDupTransactionError,
		},
		{
			name: "contract not USDT",
			tx:   func(e *env) tron.Transaction { return e.tx("x", 1, notUSDT) },
			want: tron.CodeContractValidateError,
		},
		{
			name: "call data not a transfer",
			tx:   func(e *env) tron.Transaction { return e.tx("x", 1, notTransfer) },
			want: tron.CodeContractValidateError,
		},
		{
			name: "valid",
			tx:   func(e *env) tron.Transaction { return e.tx("x", 1) },
			want: tron.CodeSuccess,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg)
			e.at(90 * time.Second) // a solid block other than genesis
			tx := tt.tx(e)
			before := totalAcceptances(e.node)
			if got := e.send(tx); got != string(tt.want) {
				t.Errorf("Broadcast = %s, want %s", got, tt.want)
			}
			// Only SUCCESS may put a transaction into the pool.
			want := 0
			if tt.want == tron.CodeSuccess {
				want = 1
			}
			if got := totalAcceptances(e.node) - before; got != want {
				t.Errorf("acceptances by this broadcast = %d, want %d", got, want)
			}
		})
	}
}

// sizeProbe has the serialized length of e.tx("size", 1): every other field
// of raw data has a fixed length.
func sizeProbe() tron.RawData {
	return tron.RawData{Memo: []byte("size"), Contract: tron.TriggerSmartContract{Data: tron.EncodeTransfer(alice, 1)}}
}

// TAPoS: the referenced block must be one of the last 65,536 blocks, matched
// by the low 16 bits of its number and bytes 8..16 of its id.
func TestTaposWindow(t *testing.T) {
	e := newEnv(t, nil)
	e.at(TaposWindow * SlotInterval) // head = 65536
	blocks := e.node.Blocks()
	head := blocks[len(blocks)-1]
	if head.Number != TaposWindow {
		t.Fatalf("head %d, want %d", head.Number, TaposWindow)
	}
	future := tron.Block{Number: head.Number + 1, ID: head.ID}
	tests := []struct {
		name string
		ref  tron.Block
		want tron.Code
	}{
		{"head", head, tron.CodeSuccess},
		{"solid", e.node.Solid(), tron.CodeSuccess},
		{"oldest in window", blocks[head.Number-TaposWindow+1], tron.CodeSuccess},
		{"just out of window", blocks[head.Number-TaposWindow], tron.CodeTaposError},
		{"genesis, aliased by the head's low bits", blocks[0], tron.CodeTaposError},
		{"right number, wrong hash", tron.Block{Number: head.Number - 3, ID: blocks[head.Number-4].ID}, tron.CodeTaposError},
		{"a block not produced yet", future, tron.CodeTaposError},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx := e.tx("tapos"+string(rune('a'+i)), 1, refTo(tt.ref))
			if got := e.send(tx); got != string(tt.want) {
				t.Errorf("Broadcast referencing block %d = %s, want %s", tt.ref.Number, got, tt.want)
			}
		})
	}

	t.Run("young chain, reference from the future", func(t *testing.T) {
		e := newEnv(t, nil)
		e.at(5 * SlotInterval)
		ref := e.node.Head()
		ref.Number += 5
		if got := e.send(e.tx("young", 1, refTo(ref))); got != string(tron.CodeTaposError) {
			t.Errorf("Broadcast referencing block %d at head 5 = %s, want %s", ref.Number, got, tron.CodeTaposError)
		}
	})
}

// A nil Verifier accepts any non-empty signature.
func TestNilVerifier(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Verifier = nil })
	// The HMAC signature is still there; with no verifier anything goes.
	tx := e.tx("nil verifier", 1)
	tx.Signature = []byte{1}
	e.mustSend(tx, tron.CodeSuccess)
	tx2 := e.tx("unsigned", 1)
	tx2.Signature = nil
	e.mustSend(tx2, tron.CodeSigError)
}
