package mocknode

import (
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Block 0 sits at the genesis time truncated to its 3 s slot, counted from the
// Unix epoch so that every block time is a multiple of 3000 ms.
func TestGenesisTruncatedToSlot(t *testing.T) {
	tests := []struct {
		name    string
		genesis time.Time
		want    time.Time
	}{
		{"aligned", genesis, genesis},
		{"one ms past", genesis.Add(time.Millisecond), genesis},
		{"just before next slot", genesis.Add(2999 * time.Millisecond), genesis},
		{"next slot", genesis.Add(3 * time.Second), genesis.Add(3 * time.Second)},
		{"before the epoch", time.UnixMilli(-1).UTC(), time.UnixMilli(-3000).UTC()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := New(&testClock{now: tt.genesis}, Config{Genesis: tt.genesis})
			if got := n.Head().Time; !got.Equal(tt.want) {
				t.Errorf("block 0 time = %s, want %s", got, tt.want)
			}
		})
	}

	t.Run("zero genesis takes the clock", func(t *testing.T) {
		now := genesis.Add(7 * time.Second)
		n := New(&testClock{now: now}, Config{})
		if got, want := n.Head().Time, genesis.Add(6*time.Second); !got.Equal(want) {
			t.Errorf("block 0 time = %s, want %s", got, want)
		}
	})
}

// Blocks are produced only when someone calls, and then every slot up to the
// clock at once.
func TestBlocksProducedOnDemand(t *testing.T) {
	tests := []struct {
		name string
		at   time.Duration
		head int64
	}{
		{"genesis", 0, 0},
		{"just before slot 1", 2999 * time.Millisecond, 0},
		{"slot 1", 3 * time.Second, 1},
		{"just after slot 1", 3001 * time.Millisecond, 1},
		{"thirty seconds", 30 * time.Second, 10},
		{"one hour", time.Hour, 1200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.at(tt.at)
			if got := e.node.net.blocks.len(); got != 1 {
				t.Fatalf("before any call: %d blocks, want 1 (production must wait for a call)", got)
			}
			if got := e.node.Head().Number; got != tt.head {
				t.Errorf("head after clock at +%s = %d, want %d", tt.at, got, tt.head)
			}
		})
	}

	t.Run("every call kind advances", func(t *testing.T) {
		calls := []struct {
			name string
			call func(e *env)
		}{
			{"Advance", func(e *env) { e.node.Advance() }},
			{"Broadcast", func(e *env) { e.send(e.tx("x", 1)) }},
			{"Lookup", func(e *env) { e.w1.Lookup(t.Context(), [32]byte{}) }},
			{"HeadBlock", func(e *env) { e.w1.HeadBlock(t.Context()) }},
			{"SolidBlock", func(e *env) { e.w1.SolidBlock(t.Context()) }},
			{"Restart", func(e *env) { e.node.Restart() }},
			{"Evict", func(e *env) { e.node.Evict([32]byte{}) }},
			{"SetOutcome", func(e *env) { e.node.SetOutcome([32]byte{}, "REVERT") }},
			{"SkipSlots", func(e *env) { e.node.SkipSlots(0) }},
		}
		for _, c := range calls {
			e := newEnv(t, nil)
			e.at(9 * time.Second)
			c.call(e)
			if got := e.node.net.blocks.len(); got != 4 {
				t.Errorf("after %s at +9s: %d blocks, want 4", c.name, got)
			}
		}
	})
}

// Whatever way the clock moves and slots are missed, block times are
// slot-aligned and strictly increasing, numbers are consecutive, the head is
// never in the future, and each id is the hash of its own fields.
func TestBlocksSlotAlignedAndMonotonic(t *testing.T) {
	e := newEnv(t, nil)
	steps := []struct {
		forward time.Duration
		skip    int
	}{
		{1700 * time.Millisecond, 0},
		{200 * time.Millisecond, 2},
		{5 * time.Second, 0},
		{1 * time.Millisecond, 1},
		{12 * time.Second, 0},
		{2999 * time.Millisecond, 3},
		{31 * time.Second, 0},
	}
	for i, s := range steps {
		e.after(s.forward)
		e.node.SkipSlots(s.skip)
		if i%2 == 0 {
			e.send(e.tx("tx"+string(rune('a'+i)), 1))
		}
	}
	blocks := e.node.Blocks()
	for i, b := range blocks {
		if b.Number != int64(i) {
			t.Errorf("blocks[%d].Number = %d, want %d", i, b.Number, i)
		}
		if ms := b.Time.UnixMilli(); ms%3000 != 0 {
			t.Errorf("block %d time %d ms is not slot-aligned", b.Number, ms)
		}
		if i == 0 {
			continue
		}
		prev := blocks[i-1]
		if !b.Time.After(prev.Time) {
			t.Errorf("block %d time %s not after block %d time %s", b.Number, b.Time, prev.Number, prev.Time)
		}
		if got := blockID(b.Number, b.Time, prev.ID, e.node.BlockTxids(b.Number)); got != b.ID {
			t.Errorf("block %d id is not sha256 of its number, time, parent and txids", b.Number)
		}
	}
	head := e.node.Head()
	if head.Time.After(e.clock.now) {
		t.Errorf("head time %s is after the clock %s", head.Time, e.clock.now)
	}
	if got, want := len(blocks)+eventCount(e.node, MissedSlot), int(e.clock.now.Sub(genesis)/SlotInterval)+1; got != want {
		t.Errorf("blocks + missed slots = %d, want %d slots up to the clock", got, want)
	}
}

// SkipSlots(k) makes the next k slots pass without a block; block numbers stay
// consecutive and the next block keeps its own slot's time.
func TestMissedSlots(t *testing.T) {
	tests := []struct {
		name      string
		skip      int
		slots     int // slots the clock moves past
		wantHead  int64
		wantFirst time.Duration // time of block 1 after genesis
	}{
		{"none", 0, 4, 4, 3 * time.Second},
		{"one", 1, 4, 3, 6 * time.Second},
		{"three", 3, 4, 1, 12 * time.Second},
		{"more than elapsed", 6, 4, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.node.SkipSlots(tt.skip)
			e.at(time.Duration(tt.slots) * SlotInterval)
			if got := e.node.Head().Number; got != tt.wantHead {
				t.Errorf("head = %d, want %d", got, tt.wantHead)
			}
			if tt.wantHead > 0 {
				if got := e.node.Blocks()[1].Time.Sub(genesis); got != tt.wantFirst {
					t.Errorf("block 1 at +%s, want +%s", got, tt.wantFirst)
				}
			}
			if got, want := eventCount(e.node, MissedSlot), min(tt.skip, tt.slots); got != want {
				t.Errorf("MissedSlot events = %d, want %d", got, want)
			}
		})
	}

	t.Run("skips start after the clock", func(t *testing.T) {
		// Asked at +7s, the slots at +3s and +6s are history: the skip
		// applies to +9s.
		e := newEnv(t, nil)
		e.at(7 * time.Second)
		e.node.SkipSlots(1)
		e.at(12 * time.Second)
		var got []time.Duration
		for _, b := range e.node.Blocks() {
			got = append(got, b.Time.Sub(genesis))
		}
		want := []time.Duration{0, 3 * time.Second, 6 * time.Second, 12 * time.Second}
		if len(got) != len(want) {
			t.Fatalf("block times %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("block times %v, want %v", got, want)
				break
			}
		}
	})
}

// The solid head is SolidLag blocks behind the head, never below block 0, and
// the client's SolidBlock agrees with the ground truth.
func TestSolidLag(t *testing.T) {
	tests := []struct {
		name  string
		lag   int
		head  int64
		solid int64
	}{
		{"genesis", 0, 0, 0},
		{"default lag, young chain", 0, 5, 0},
		{"default lag, exactly lag", 0, 19, 0},
		{"default lag, lag+1", 0, 20, 1},
		{"default lag, long chain", 0, 100, 81},
		{"lag 2", 2, 10, 8},
		{"lag 1", 1, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.SolidLag = tt.lag })
			e.at(time.Duration(tt.head) * SlotInterval)
			if got := e.node.Head().Number; got != tt.head {
				t.Fatalf("head = %d, want %d", got, tt.head)
			}
			b, err := e.w1.SolidBlock(t.Context())
			if err != nil {
				t.Fatalf("SolidBlock: %v", err)
			}
			if b.Number != tt.solid {
				t.Errorf("SolidBlock().Number = %d, want %d", b.Number, tt.solid)
			}
			if got := e.node.Solid(); got != b {
				t.Errorf("Solid() = %+v, SolidBlock() = %+v: ground truth and client disagree", got, b)
			}
			if got := e.node.Blocks()[tt.solid]; got != b {
				t.Errorf("SolidBlock() = %+v, want block %d = %+v", b, tt.solid, got)
			}
		})
	}
}

// A clock that runs backwards is a wiring bug: lazy production would let the
// number of observers change the chain.
func TestClockBackwardsPanics(t *testing.T) {
	e := newEnv(t, nil)
	e.at(10 * time.Second)
	e.node.Advance()
	e.at(5 * time.Second)
	defer func() {
		if recover() == nil {
			t.Errorf("Advance with the clock moved back did not panic")
		}
	}()
	e.node.Advance()
}

// A block id commits to the block's contents: the same slot on two nodes gets
// the same id only if the same transactions went in, and a difference in one
// block changes every id after it (through the parent id).
func TestBlockIDsCommitToContents(t *testing.T) {
	build := func(memos ...string) []tron.Block {
		e := newEnv(t, nil)
		for _, m := range memos {
			e.mustSend(e.tx(m, 1), tron.CodeSuccess)
		}
		e.at(2 * SlotInterval)
		return e.node.Blocks()
	}
	empty1, empty2 := build(), build()
	withA, withA2, withB := build("a"), build("a"), build("b")
	tests := []struct {
		name  string
		x, y  []tron.Block
		block int
		same  bool
	}{
		{"empty chains agree", empty1, empty2, 2, true},
		{"genesis unaffected by later blocks", empty1, withA, 0, true},
		{"same transaction, same id", withA, withA2, 1, true},
		{"a transaction changes the id", empty1, withA, 1, false},
		{"another transaction, another id", withA, withB, 1, false},
		{"the change carries to the child", empty1, withA, 2, false},
	}
	for _, tt := range tests {
		if got := tt.x[tt.block].ID == tt.y[tt.block].ID; got != tt.same {
			t.Errorf("%s: block %d ids equal = %v, want %v", tt.name, tt.block, got, tt.same)
		}
	}
}
