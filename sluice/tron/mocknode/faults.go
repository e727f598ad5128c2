package mocknode

import (
	"fmt"

	"sluicesim/sluice/tron"
)

// CallKind is the kind of a call a Client makes. Fault scripts are kept per
// kind, so a script for lookups never eats a fault meant for a broadcast.
type CallKind int

const (
	Broadcast CallKind = iota + 1 // tron.Node.Broadcast
	Lookup                        // tron.Node.Lookup
	Head                          // tron.Node.HeadBlock
	Solid                         // tron.Node.SolidBlock

	callKindEnd // one past the last kind; not a kind
)

func (k CallKind) String() string {
	switch k {
	case Broadcast:
		return "broadcast"
	case Lookup:
		return "lookup"
	case Head:
		return "head"
	case Solid:
		return "solid"
	}
	return fmt.Sprintf("callkind(%d)", int(k))
}

func (k CallKind) valid() bool { return k >= Broadcast && k < callKindEnd }

// Call describes a call about to reach the node; the fault hook sees it
// before the node does anything, so its choice cannot depend on the outcome.
type Call struct {
	Kind   CallKind
	Worker string
	Txid   tron.Txid // zero for Head and Solid
	Node   int       // the node called (always 0 for a single node)
}

// Fault is a lie or failure on the path between a worker and the node. Only
// failures a real node or network can produce are modelled: every one of them
// is something sluice must survive without double-paying.
type Fault int

const (
	// None: the call goes through and the caller sees the node's answer.
	None Fault = iota

	// LoseRequest: the request never reaches the node; the caller times out.
	LoseRequest
	// AcceptThenTimeout: the node processes the broadcast normally (it may
	// well accept it), but the answer is lost: the caller times out.
	AcceptThenTimeout
	// Busy: the node answers SERVER_BUSY without taking the transaction.
	Busy
	// NoConnection: the node answers NO_CONNECTION without taking it.
	NoConnection
	// UnknownCode: the node processes the broadcast normally; the answer
	// the caller sees is a code it does not know (a newer node, a proxy).
	UnknownCode
	// RelayFailAfterAccept: the node processes the broadcast normally; if
	// it would have answered SUCCESS it answers
	// NOT_ENOUGH_EFFECTIVE_CONNECTION instead, although the transaction is
	// in its pool (the relay to peers failed after the local accept).
	RelayFailAfterAccept
	// OtherErrorAfterAccept: as RelayFailAfterAccept, with OTHER_ERROR.
	OtherErrorAfterAccept
	// ExpirationLie: the node processes the broadcast normally; if the
	// transaction is then pending or already included, the caller sees
	// TRANSACTION_EXPIRATION_ERROR (as from a node whose head is ahead, or
	// for an included transaction re-sent late).
	ExpirationLie
	// TaposLie: as ExpirationLie, with TAPOS_ERROR (a node on another fork).
	TaposLie

	// QueryTimeout: a Lookup, HeadBlock or SolidBlock gets no answer; the
	// caller sees tron.ErrTimeout.
	QueryTimeout

	// BandwidthExhausted: the node refuses the broadcast with BANDWITH_ERROR
	// without taking it: the hot wallet is out of bandwidth for now. It can
	// hit a re-send while an earlier send of the same bytes sits in a pool,
	// which is why a hard reject of a re-send must not be terminal.
	BandwidthExhausted

	// ContractStateRefusal: the node refuses the broadcast with
	// CONTRACT_VALIDATE_ERROR without taking it, from its own view of the
	// chain's state (the caller's account not yet known to it, the fee
	// limit above what its parameters allow): a refusal at the same stage
	// as the bandwidth check, that says nothing of another node.
	ContractStateRefusal
	// SignatureLie: the caller sees SIGERROR for bytes that may land
	// anyway. If the node held the transaction before this call (pending
	// or included), it processes the broadcast normally and answers
	// SIGERROR: java-tron checks the signature before the duplicate, so a
	// node whose view of the hot wallet's permissions has moved refuses
	// bytes it holds. If only another node holds them, it refuses them
	// without taking them. If no node holds them, it answers truly. Only
	// a first send refused before any acceptance may read SIGERROR as
	// final (TRON.md); a world asks for this lie only on a worker's
	// re-send.
	SignatureLie

	faultEnd // one past the last fault; not a fault

	// faultsOfTheGolden is one past the last fault TestSingleNodeGolden's
	// transcript draws from: the faults that existed when it was written.
	faultsOfTheGolden = ContractStateRefusal
)

func (f Fault) String() string {
	switch f {
	case None:
		return "none"
	case LoseRequest:
		return "lose-request"
	case AcceptThenTimeout:
		return "accept-then-timeout"
	case Busy:
		return "busy"
	case NoConnection:
		return "no-connection"
	case UnknownCode:
		return "unknown-code"
	case RelayFailAfterAccept:
		return "relay-fail-after-accept"
	case OtherErrorAfterAccept:
		return "other-error-after-accept"
	case ExpirationLie:
		return "expiration-lie"
	case TaposLie:
		return "tapos-lie"
	case QueryTimeout:
		return "query-timeout"
	case BandwidthExhausted:
		return "bandwidth-exhausted"
	case ContractStateRefusal:
		return "contract-state-refusal"
	case SignatureLie:
		return "signature-lie"
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

func (f Fault) valid() bool { return f >= None && f < faultEnd }

// FaultCount is how often a fault actually changed what a caller saw.
type FaultCount struct {
	Fault Fault
	Count int
}

// Event is a chain or pool event that is not a lie on a call but still
// something sluice must survive. The node counts them so that a run can show
// which of them actually happened (a green run of a world where nothing ever
// reverted proves little about reverts).
type Event int

const (
	// MissedSlot: a slot produced no block (SkipSlots).
	MissedSlot Event = iota + 1
	// PoolRestart: a Restart lost at least one pending transaction.
	PoolRestart
	// PoolEvict: an Evict dropped a pending transaction.
	PoolEvict
	// PoolTTLDrop: a pending transaction aged out of the pool (PoolTTL).
	PoolTTLDrop
	// ExpiredDrop: a pending transaction was dropped because its
	// expiration was not later than the parent block's time: it can never
	// land.
	ExpiredDrop
	// OverrideReceipt: an included transaction got its receipt from
	// SetOutcome.
	OverrideReceipt
	// InsufficientBalance: an included transfer reverted because the owner
	// could not cover it.
	InsufficientBalance

	// Reorged: a reorg replaced blocks above the solid block (Network.Reorg).
	Reorged
	// TxOrphaned: an inclusion was taken off the chain by a reorg.
	TxOrphaned
	// TaposDrop: after a reorg, a pending transaction referencing an
	// orphaned block was dropped by the producer (it fails TAPoS).
	TaposDrop
	// GossipLost: the gossip hook lost a hop between two nodes.
	GossipLost
	// OddExecution: a successful transfer executed other than exactly as
	// asked (the execution hook chose a variant).
	OddExecution
	// StaleFork: at a reorg, a node stayed on the orphaned fork
	// (Network.ReorgKeeping).
	StaleFork
	// PricedOutOfEnergy: an included transfer ran out of energy because
	// its fee limit could not buy the energy at the price of its block
	// (Network.SetEnergyPrice).
	PricedOutOfEnergy

	eventEnd // one past the last event; not an event
)

func (e Event) String() string {
	switch e {
	case MissedSlot:
		return "missed-slot"
	case PoolRestart:
		return "pool-restart"
	case PoolEvict:
		return "pool-evict"
	case PoolTTLDrop:
		return "pool-ttl-drop"
	case ExpiredDrop:
		return "expired-drop"
	case OverrideReceipt:
		return "override-receipt"
	case InsufficientBalance:
		return "insufficient-balance"
	case Reorged:
		return "reorg"
	case TxOrphaned:
		return "tx-orphaned"
	case TaposDrop:
		return "tapos-drop"
	case GossipLost:
		return "gossip-lost"
	case OddExecution:
		return "odd-execution"
	case StaleFork:
		return "stale-fork"
	case PricedOutOfEnergy:
		return "priced-out-of-energy"
	}
	return fmt.Sprintf("event(%d)", int(e))
}

// EventCount is how often an event happened.
type EventCount struct {
	Event Event
	Count int
}

// Next appends f to the script for calls of kind k. Scripted faults are
// consumed first-in first-out, one per call of that kind, before the hook is
// asked. A scripted fault that does not apply to k is consumed and ignored.
func (n *Node) Next(k CallKind, f Fault) {
	if !k.valid() {
		panic(fmt.Sprintf("mocknode: Next: invalid call kind %d", int(k)))
	}
	if !f.valid() {
		panic(fmt.Sprintf("mocknode: Next: invalid fault %d", int(f)))
	}
	n.script[k] = append(n.script[k], f)
}

// SetFaults installs the hook asked for a fault on every call to this node
// whose kind has no scripted fault left; nil removes it. In a network each
// node has its own script and hook (Call.Node says which node asks). The hook is called exactly once per
// such call, before the node acts, so a choice tape behind it stays aligned.
func (n *Node) SetFaults(hook func(Call) Fault) { n.hook = hook }

// pick chooses the fault for c: the script first, then the hook.
func (n *Node) pick(c Call) Fault {
	f := None
	if s := n.script[c.Kind]; len(s) > 0 {
		f = s[0]
		n.script[c.Kind] = s[1:]
	} else if n.hook != nil {
		f = n.hook(c)
	}
	if !f.valid() {
		panic(fmt.Sprintf("mocknode: fault hook returned invalid fault %d for %s", int(f), c.Kind))
	}
	return f
}

// FaultsFired lists every fault kind (None excepted) in Fault order with how
// often it actually fired on calls to this node, zeros included, so a fault
// that never fired shows.
func (n *Node) FaultsFired() []FaultCount {
	n.net.advance()
	return faultCounts(n.fired)
}

// FaultsFired is Node.FaultsFired summed over every node.
func (net *Network) FaultsFired() []FaultCount {
	net.advance()
	var sum [faultEnd]int
	for _, n := range net.nodes {
		for f := range sum {
			sum[f] += n.fired[f]
		}
	}
	return faultCounts(sum)
}

// FaultKinds lists every fault (None excepted) in Fault order: the kinds
// FaultsFired reports, for a reader of its counts that must tell a kind
// the node has from a name it does not.
func FaultKinds() []Fault {
	out := make([]Fault, 0, int(faultEnd)-1)
	for f := None + 1; f < faultEnd; f++ {
		out = append(out, f)
	}
	return out
}

// EventKinds lists every event in Event order: the kinds Events reports.
func EventKinds() []Event {
	out := make([]Event, 0, int(eventEnd)-1)
	for e := MissedSlot; e < eventEnd; e++ {
		out = append(out, e)
	}
	return out
}

func faultCounts(fired [faultEnd]int) []FaultCount {
	out := make([]FaultCount, 0, int(faultEnd)-1)
	for f := None + 1; f < faultEnd; f++ {
		out = append(out, FaultCount{Fault: f, Count: fired[f]})
	}
	return out
}

// Events lists every event kind in Event order with how often it happened.
// Events are the network's (a chain has one history): every node of a
// network answers the same.
func (n *Node) Events() []EventCount { return n.net.Events() }

// Events lists every event kind in Event order with how often it happened
// anywhere in the network.
func (net *Network) Events() []EventCount {
	net.advance()
	out := make([]EventCount, 0, int(eventEnd)-1)
	for e := MissedSlot; e < eventEnd; e++ {
		out = append(out, EventCount{Event: e, Count: net.events[e]})
	}
	return out
}
