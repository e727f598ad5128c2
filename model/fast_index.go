package model

import (
	"cmp"
	"slices"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// This file holds the index every checker reads instead of re-scanning the
// snapshot: built once per Judge (kept in the memo of Judge's copy of the
// snapshot; a checker called alone builds one for itself), in a few passes
// over the snapshot's slices, with positions into those slices rather than
// copies. It is an index only: nothing in it is ranged over in map order,
// and the checkers build their messages from the snapshot's own records.

// index is what the checkers derive from one snapshot's slices.
type index struct {
	// Operation slots: every id an event or a row names, numbered in
	// first-seen order (the event log's, then the rows').
	slot map[sluice.OperationID]int32
	ids  []sluice.OperationID // by slot
	// byID is every slot, in id order.
	byID []int32
	// evSlot is each event's slot, by position in Events.
	evSlot []int32

	// The event log by operation: eventsOf(k) are slot k's events'
	// positions in Events, in log order.
	evPos, evStart []int32
	// The rows by operation: rowsOf(k) are slot k's rows' positions in
	// Operations, in insertion order (more than one only when intake broke).
	rowPos, rowStart []int32

	// Per slot, from its events (-1: none).
	lastEv     []int32                      // its last event
	firstSent  []int32                      // its first event entering broadcasting
	firstFinal []int32                      // its first event entering a terminal state
	creations  []int32                      // how many of its events are creations (From None)
	visited    [][4]uint64                  // the states its events entered, a bit per State
	parked     []int32                      // parks the world saw land on it
	parkedElse map[sluice.OperationID]int32 // parks of ids with no slot

	// The txids: what the world saw of each.
	tx map[tron.Txid]txFacts
	// onChain is the chain by txid, in chain order.
	onChain map[tron.Txid][]mocknode.Inclusion

	// The chain's blocks by number (blocksAt), worked out on first use.
	blocksChecked, blocksSorted bool
	blocksByNumber              map[int64][]tron.Block

	// The payloads, each read once (a run repeats the same few in many
	// records): readings, and where each payload's (and each raw post's)
	// is.
	readings  []reading
	byPayload map[Payload]int32
	byRaw     map[*RawPost]int32
	// The intake records and reads: the key of the id they name (opKey),
	// and the readings of what the client sent and what the answer showed.
	intakeKey    []sluice.OperationID
	intakeSent   []int32
	intakeAnswer []int32
	readKey      []sluice.OperationID
	readAnswer   []int32
	// texts holds the readings' strings.
	texts textArena
}

// txFacts is what the world saw of one txid. Positions are 1-based (0:
// never).
type txFacts struct {
	wire         int32 // its first wire attempt (lowest Seq)
	wireAccepted bool  // some wire attempt was accepted
	nodeAccepted bool  // the node's acceptances list it
	envelope     int32 // the first envelope stored with it
}

// index returns the snapshot's index: the memo's, or a new one for a
// checker called alone.
func (s *Snapshot) index() *index {
	if s.memo != nil && s.memo.ix != nil {
		return s.memo.ix
	}
	ix := buildIndex(s)
	if s.memo != nil {
		s.memo.ix = ix
	}
	return ix
}

func buildIndex(s *Snapshot) *index {
	ix := &index{slot: make(map[sluice.OperationID]int32, len(s.Operations))}
	slotOf := func(id sluice.OperationID) int32 {
		k, ok := ix.slot[id]
		if !ok {
			k = int32(len(ix.ids))
			ix.slot[id] = k
			ix.ids = append(ix.ids, id)
		}
		return k
	}

	// Events and rows by slot: a counting sort, stable in log (insertion)
	// order.
	evSlot := make([]int32, len(s.Events)+len(s.Operations))
	rowSlot := evSlot[len(s.Events):]
	evSlot = evSlot[:len(s.Events)]
	ix.ids = make([]sluice.OperationID, 0, len(s.Operations))
	for i := range s.Events {
		evSlot[i] = slotOf(s.Events[i].OperationID)
	}
	for i := range s.Operations {
		rowSlot[i] = slotOf(s.Operations[i].ID)
	}
	n := len(ix.ids)
	ix.evSlot = evSlot
	ix.evPos, ix.evStart = groupBy(evSlot, n)
	ix.rowPos, ix.rowStart = groupBy(rowSlot, n)

	ix.byID = make([]int32, n)
	for k := range ix.byID {
		ix.byID[k] = int32(k)
	}
	slices.SortFunc(ix.byID, func(a, b int32) int {
		switch x, y := ix.ids[a], ix.ids[b]; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})

	per := make([]int32, 5*n)
	ix.lastEv, ix.firstSent, ix.firstFinal, ix.creations, ix.parked = per[:n], per[n:2*n], per[2*n:3*n], per[3*n:4*n], per[4*n:]
	for k := range n {
		ix.lastEv[k], ix.firstSent[k], ix.firstFinal[k] = -1, -1, -1
	}
	ix.visited = make([][4]uint64, n)
	for i := range s.Events {
		e, k := &s.Events[i], evSlot[i]
		ix.lastEv[k] = int32(i)
		if ix.firstSent[k] < 0 && e.To == sluice.Broadcasting {
			ix.firstSent[k] = int32(i)
		}
		if ix.firstFinal[k] < 0 && Terminal(e.To) {
			ix.firstFinal[k] = int32(i)
		}
		if e.From == sluice.None {
			ix.creations[k]++
		}
		ix.visited[k][e.To/64] |= 1 << (e.To % 64)
	}
	for _, p := range s.Parks {
		if k, ok := ix.slot[p.Op]; ok {
			ix.parked[k]++
			continue
		}
		if ix.parkedElse == nil {
			ix.parkedElse = make(map[sluice.OperationID]int32)
		}
		ix.parkedElse[p.Op]++
	}

	ix.tx = make(map[tron.Txid]txFacts, len(s.Envelopes)+len(s.Wire)/4)
	for i, w := range s.Wire {
		f := ix.tx[w.Txid]
		if f.wire == 0 || w.Seq < s.Wire[f.wire-1].Seq {
			f.wire = int32(i + 1)
		}
		f.wireAccepted = f.wireAccepted || w.Accepted
		ix.tx[w.Txid] = f
	}
	for _, a := range s.Accepted {
		f := ix.tx[a.Txid]
		f.nodeAccepted = true
		ix.tx[a.Txid] = f
	}
	for i, e := range s.Envelopes {
		if f := ix.tx[e.Txid]; f.envelope == 0 {
			f.envelope = int32(i + 1)
			ix.tx[e.Txid] = f
		}
	}

	ix.onChain = make(map[tron.Txid][]mocknode.Inclusion, len(s.Inclusions))
	for i, in := range s.Inclusions {
		if prev, ok := ix.onChain[in.Txid]; ok {
			// The mock node includes a txid at most once; should two
			// entries ever share one, all are kept, in chain order (prev
			// has no spare capacity, so this copies).
			ix.onChain[in.Txid] = append(prev, in)
			continue
		}
		ix.onChain[in.Txid] = s.Inclusions[i : i+1 : i+1]
	}

	keys := make([]sluice.OperationID, len(s.Intake)+len(s.Reads))
	ix.intakeKey, ix.readKey = keys[:len(s.Intake)], keys[len(s.Intake):]
	rds := make([]int32, 2*len(s.Intake)+len(s.Reads))
	ix.intakeSent, ix.intakeAnswer, ix.readAnswer = rds[:len(s.Intake)], rds[len(s.Intake):2*len(s.Intake)], rds[2*len(s.Intake):]
	ix.byPayload = make(map[Payload]int32, len(s.Intake))
	ix.readings = make([]reading, 0, len(s.Intake)) // runs repeat payloads: about as many as posts
	if raws := countRaw(s.Intake); raws > 0 {
		ix.byRaw = make(map[*RawPost]int32, raws)
	}
	// A reading's strings are its key, a slash and its customer: about 80
	// bytes for each distinct payload, of which a run has fewer than it has
	// records.
	ix.texts.block = 80 * (len(s.Intake) + len(s.Reads)) / 2
	for i := range s.Intake {
		r := &s.Intake[i]
		ix.intakeKey[i] = opKeyIn(r.ID, &ix.texts)
		ix.intakeSent[i] = ix.sent(r)
		if r.Raw == nil && r.Answer == r.Sent {
			// The answer showed the payload sent (a created or
			// replayed post's usually does): the same reading.
			ix.intakeAnswer[i] = ix.intakeSent[i]
			continue
		}
		ix.intakeAnswer[i] = ix.read(r.Answer)
	}
	for i := range s.Reads {
		r := &s.Reads[i]
		ix.readKey[i] = opKeyIn(r.ID, &ix.texts)
		ix.readAnswer[i] = ix.read(r.Answer)
	}
	return ix
}

// read is where p's reading is, reading it the first time.
func (ix *index) read(p Payload) int32 {
	if i, ok := ix.byPayload[p]; ok {
		return i
	}
	i := int32(len(ix.readings))
	ix.readings = append(ix.readings, readPayloadIn(p, &ix.texts))
	ix.byPayload[p] = i
	return i
}

// sent is where the reading of what record r's client meant is: its Sent
// payload's, or for a raw post that of the payload ReadPost finds in it (a
// form ReadPost refuses is an invalid request, for the reason it gives).
func (ix *index) sent(r *IntakeRecord) int32 {
	if r.Raw == nil {
		return ix.read(r.Sent)
	}
	if i, ok := ix.byRaw[r.Raw]; ok {
		return i
	}
	var i int32
	if p, bad := readPost(*r.Raw, &ix.texts); bad == "" {
		i = ix.read(p)
	} else {
		i = int32(len(ix.readings))
		ix.readings = append(ix.readings, reading{bad: ix.texts.cat("request ", bad)})
	}
	if ix.byRaw == nil {
		ix.byRaw = make(map[*RawPost]int32)
	}
	ix.byRaw[r.Raw] = i
	return i
}

// countRaw is how many of the records are raw posts.
func countRaw(recs []IntakeRecord) int {
	n := 0
	for i := range recs {
		if recs[i].Raw != nil {
			n++
		}
	}
	return n
}

// sentOf is intake record i's sent reading; answerOf its answer's;
// readAnswerOf read j's answer's.
func (ix *index) sentOf(i int) *reading       { return &ix.readings[ix.intakeSent[i]] }
func (ix *index) answerOf(i int) *reading     { return &ix.readings[ix.intakeAnswer[i]] }
func (ix *index) readAnswerOf(j int) *reading { return &ix.readings[ix.readAnswer[j]] }

// groupBy sorts positions 0..len(slot)-1 by slot (stable), returning them
// and where each slot's run starts (start has n+1 entries). A position
// whose slot is negative is left out.
func groupBy(slot []int32, n int) (pos, start []int32) {
	buf := make([]int32, 2*n+1+len(slot)) // start, next, and room for pos
	start, next, rest := buf[:n+1:n+1], buf[n+1:2*n+1], buf[2*n+1:]
	for _, k := range slot {
		if k >= 0 {
			start[k+1]++
		}
	}
	for k := range n {
		start[k+1] += start[k]
	}
	copy(next, start[:n])
	pos = rest[:start[n]:start[n]]
	for i, k := range slot {
		if k >= 0 {
			pos[next[k]] = int32(i)
			next[k]++
		}
	}
	return pos, start
}

// events are id's events' positions in Events, in log order (nil if none).
func (ix *index) events(id sluice.OperationID) []int32 {
	k, ok := ix.slot[id]
	if !ok {
		return nil
	}
	return ix.eventsOf(k)
}

// enteredWith reports whether id's log has an event into state st after
// which its txid was txid (hex as an answer shows it, "" for none).
func (ix *index) enteredWith(s *Snapshot, id sluice.OperationID, st sluice.State, txid string) bool {
	for _, i := range ix.events(id) {
		if e := &s.Events[i]; e.To == st && showsTxid(txid, e.Txid) {
			return true
		}
	}
	return false
}

func (ix *index) eventsOf(k int32) []int32 { return ix.evPos[ix.evStart[k]:ix.evStart[k+1]] }

func (ix *index) rowsOf(k int32) []int32 { return ix.rowPos[ix.rowStart[k]:ix.rowStart[k+1]] }

// lastEvent is id's last event (zero if it has none).
func (ix *index) lastEvent(s *Snapshot, id sluice.OperationID) *sluice.Event {
	if k, ok := ix.slot[id]; ok && ix.lastEv[k] >= 0 {
		return &s.Events[ix.lastEv[k]]
	}
	return &noEvent
}

// noEvent is the zero event lastEvent returns for an operation without
// one; nobody writes it.
var noEvent sluice.Event

// firstWriteAhead is when id first entered broadcasting (store clock).
func (ix *index) firstWriteAhead(s *Snapshot, id sluice.OperationID) (time.Time, bool) {
	if k, ok := ix.slot[id]; ok && ix.firstSent[k] >= 0 {
		return s.Events[ix.firstSent[k]].At, true
	}
	return time.Time{}, false
}

// parks is how many parks the world saw land on id.
func (ix *index) parks(id sluice.OperationID) int {
	if k, ok := ix.slot[id]; ok {
		return int(ix.parked[k])
	}
	return int(ix.parkedElse[id])
}

// firstWire is t's first wire attempt (lowest Seq).
func (ix *index) firstWire(s *Snapshot, t tron.Txid) (*mocknode.WireAttempt, bool) {
	if f := ix.tx[t]; f.wire > 0 {
		return &s.Wire[f.wire-1], true
	}
	return nil, false
}

// envelope is the raw data of the first envelope stored with txid t.
func (ix *index) envelope(s *Snapshot, t tron.Txid) (*tron.RawData, bool) {
	if f := ix.tx[t]; f.envelope > 0 {
		return &s.Envelopes[f.envelope-1].Raw, true
	}
	return nil, false
}

// onWire reports whether t was ever on the wire.
func (ix *index) onWire(t tron.Txid) bool { return ix.tx[t].wire > 0 }

// acceptedByNode reports whether the node's acceptances list t.
func (ix *index) acceptedByNode(t tron.Txid) bool { return ix.tx[t].nodeAccepted }

// accepted reports whether t was ever accepted: by a wire attempt's answer
// or in the node's acceptances.
func (ix *index) accepted(t tron.Txid) bool {
	f := ix.tx[t]
	return f.wireAccepted || f.nodeAccepted
}

// blocksAt is every block of the chain numbered n, in the snapshot's
// order. The chain is kept by number, so this is a binary search; a
// snapshot whose blocks are out of order gets a map, built on first use.
func (ix *index) blocksAt(s *Snapshot, n int64) []tron.Block {
	if !ix.blocksChecked {
		ix.blocksChecked = true
		ix.blocksSorted = slices.IsSortedFunc(s.Blocks, func(a, b tron.Block) int { return cmp.Compare(a.Number, b.Number) })
		if !ix.blocksSorted {
			ix.blocksByNumber = make(map[int64][]tron.Block, len(s.Blocks))
			for _, b := range s.Blocks {
				ix.blocksByNumber[b.Number] = append(ix.blocksByNumber[b.Number], b)
			}
		}
	}
	if !ix.blocksSorted {
		return ix.blocksByNumber[n]
	}
	lo, _ := slices.BinarySearchFunc(s.Blocks, n, func(b tron.Block, n int64) int { return cmp.Compare(b.Number, n) })
	hi := lo
	for hi < len(s.Blocks) && s.Blocks[hi].Number == n {
		hi++
	}
	return s.Blocks[lo:hi:hi]
}
