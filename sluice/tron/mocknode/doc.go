// Package mocknode is a TRON full node with a USDT ledger that lies on
// schedule, and, opt in, a network of such nodes whose chain reorganises and
// whose token does not always do what was asked. It keeps every property
// sluice's safety argument rests on (design/TRON.md) and fails only in ways
// a real node or network can.
//
// # What it models
//
//   - Blocks in 3 s slots with slot-aligned, strictly increasing times,
//     produced on demand: every method first produces each block whose slot
//     time is at or before the clock. SkipSlots makes slots pass empty. The
//     solid head is SolidLag (default 19) blocks behind the head.
//   - A block first drops pool entries at least PoolTTL old, then takes
//     pending transactions in arrival order, up to BlockCapacity, whose
//     expiration is later than the parent block's time; a pending one whose
//     expiration is not is dropped, since it can never land. This is the
//     rule that makes proof of death sound.
//   - Broadcast runs java-tron's checks in their real order: pool full
//     (SERVER_BUSY), contract present, expiration (head + 3 s .. head +
//     24 h), signature (Config.Verifier), TAPoS (last 65,536 blocks), size,
//     duplicate (pool and every block), contract validation (a USDT
//     transfer), then the pool. The order is observable: an included
//     transaction re-sent after it expired gets TRANSACTION_EXPIRATION_ERROR,
//     not DUP_TRANSACTION_ERROR.
//   - Execution of USDT transfers against a ledger that starts with
//     HotBalance in HotWallet: SUCCESS moves the amount and emits the
//     Transfer log; an uncovered amount REVERTs; SetOutcome forces REVERT,
//     OUT_OF_ENERGY or another failure. A failed transaction is on chain and
//     uses up its txid.
//   - Opt in (Network.SetEnergyPrice), energy bought with TRX: a transfer
//     uses TransferEnergy at the price of its block, up to its raw data's
//     fee_limit; one whose limit cannot buy it runs OUT_OF_ENERGY and burns
//     the whole limit (Inclusion.Burnt), so a fee limit too low costs real
//     money and a raised one lands.
//   - Lookup by txid (unknown, pending, included with receipt, logs and
//     solidity), head and solid block.
//
// # What it leaves out on purpose
//
// Protobuf (raw data is serialized canonically by package tron; only the
// determinism of the txid matters), staked energy, bandwidth and its fees (so no
// BANDWITH_ERROR or CONTRACT_EXE_ERROR of its own: the BandwidthExhausted
// and ContractStateRefusal faults inject a node's refusal from its own view
// of the state, and CanRefuseForBandwidth says where a node's checks would
// reach it), TRX, and tokens other than USDT
// (another contract appears only as a log, see Execution.Extra). Peers,
// reorgs and odd token behaviour are there but opt in: a world that does not
// ask for them gets the single node sluice has always been tested against,
// answer for answer (TestSingleNodeGolden holds it to a transcript written
// before they existed).
//
// # Driving it
//
// The node runs under an injected Clock and never reads the real one, starts
// no goroutine and draws no random number: the same calls at the same clock
// readings give the same results, byte for byte. Every random thing (faults,
// gossip, routing, reorg fates, executions) is decided by a hook the world
// supplies, asked at a documented moment in a deterministic order, so a
// simulator's choice tape behind the hooks stays aligned. A hook may read
// the network: it sees the state at the moment it is asked, and a block
// being built is never interrupted by the next. The clock must not run
// backwards. Context arguments are ignored (their deadlines run on the
// real clock); timeouts are faults.
//
// Workers talk to a node only through Client(worker), a tron.Node whose
// calls are recorded under the worker's name, or through a Balancer.
//
// # Injecting faults
//
// Every Client call asks for a Fault once, before the node acts: first from
// the per-kind script fed by Next(kind, fault), first in first out; if that
// is empty, from the hook installed by SetFaults (the simulator plugs its
// choice tape in there); otherwise None. A fault that does not apply to the
// call (a query fault on a broadcast, a broadcast fault on a query, a relay
// failure on a broadcast that was not a SUCCESS, an expiration lie about a
// transaction the node does not have) is ignored and recorded as not fired.
// In a network each node has its own script and hook.
//
// Chain and pool events are methods: Restart (pending pool lost), Evict (one
// pending transaction dropped), SetOutcome (a failure receipt on inclusion),
// SkipSlots (missed slots), and, on a Network, Reorg.
//
// # A network of nodes
//
// New(clock, cfg) is a Network of one node; a single-node world reaches
// Reorg and SetExecution through node.Network(). NewNetwork(clock, cfg, n) makes n
// full nodes over one chain of truth: one slot schedule, one ledger, one list
// of inclusions. Node 0 produces every block from its own pending pool; the
// others hold pools of their own and learn of transactions only by gossip.
// A world typically does:
//
//	net := mocknode.NewNetwork(clock, cfg, 3)
//	net.SetGossip(func(h mocknode.Hop) mocknode.Gossip { ... }) // loss and delay per hop
//	for _, n := range net.Nodes() {
//		n.SetFaults(w.nodeFault) // Call.Node says which node asks
//	}
//	node := net.Balancer("w1", w.route) // what a worker gets, a tron.Node
//	net.Node(2).SetLag(4)               // answers from 4 blocks behind
//	net.Node(1).Stall()                 // stops importing blocks until CatchUp
//	net.Node(1).Restart()               // loses node 1's pool only
//
// Gossip floods: a node that takes a transaction into its pool (a broadcast
// SUCCESS, or a gossip delivery) tells every node that does not hold it yet,
// in node order, and the gossip hook decides each hop's loss and delay when
// it is sent (Hop.Relay marks hops from a node that got it by gossip). A
// delivery is taken as a real node takes a relayed transaction: not if the
// node already holds it, not into a full pool, not if it can no longer land
// on the node's view. A broadcast whose RelayFailAfterAccept fault fired
// gossips nothing: the node has it, its peers do not. Without a hook every
// hop arrives at once (at the next call).
//
// A node answers from its own view of the canonical chain, SetLag blocks
// behind the head (or frozen while stalled; Height says where it is). HeadBlock and SolidBlock give its own
// blocks; Lookup finds an inclusion only in a block it has, so a lagging
// node says tron.Pending for a transaction included above its height that is
// still in its pool, and tron.Unknown for one it never heard of; the
// broadcast checks (expiration window, TAPoS, duplicate) run on its view, so
// such a node accepts (SUCCESS) the bytes of a transaction already on chain
// above its height, while a node that has the transaction in its pool or on
// its view answers DUP_TRANSACTION_ERROR. The chain still holds a txid once:
// the producer never takes what is on its chain. Pools other than the
// producer's forget at each slot as the producer's does (PoolTTL, an
// expiration not later than their own head) and drop what they see
// included.
//
// # The balancer
//
// Network.Balancer(worker, route) is a tron.Node that sends each call to the
// node route picks. route sees a Route (kind, worker, txid, attempt) before
// any node does; a call that fails with an error (a timeout, a lost request)
// is offered to route again with Prev and PrevErr, and route fails over to
// another node or returns Stop to give the caller the error. Answers, even
// refusals, go to the caller at once. Sticky per worker is a route that
// looks at Route.Worker; per call, one that draws from the tape; at most
// FailoverMax attempts are made. Each attempt is an ordinary recorded call
// on its node, with that node's faults.
//
// # Reorgs
//
// Network.Reorg(depth, fate) orphans the newest depth blocks, at most down
// to the block just above the solid head (depth <= head - solid <= SolidLag;
// deeper panics: the solid block never changes), and replaces them with as
// many blocks at the same heights and slot times, with new ids. fate is asked,
// in chain order, for each orphaned inclusion: OrphanReincluded (in the
// replacement block at the same height, executed afresh),
// OrphanReturned (back at the front of the producer's pool and of every pool
// whose node had the block; the default), or OrphanVanished (no pool takes
// it back). The orphaned inclusions' movements are undone first, newest
// first, so balances are always the canonical chain's. Afterwards Lookup no
// longer finds the orphaned blocks, receipts or logs, HeadBlock answers the
// replacement head, and a pending transaction whose TAPoS reference was
// orphaned is dropped by the producer. Every node switches to the new fork
// at once, unless Network.ReorgKeeping keeps it on the old one: such a node
// stalls at its height and shows the orphaned blocks it had (their ids,
// inclusions, receipts and logs; never solid, since a reorg stays above the
// solid block) until SetLag, CatchUp or LeaveFork brings it back.
//
// # Transfers that do not do what was asked
//
// Network.SetExecution(hook) asks, for each USDT transfer about to succeed
// as asked, what it really does (an Execution): exactly that (the zero
// Execution), SUCCESS with nothing moved (NoTransfer), a fee-on-transfer
// (Fee to FeeTo out of the amount), logs from other contracts (Extra), tokens
// to another recipient or another amount (Redirect), and any of these under
// a lie (Lie, Logs: the node reports Logs instead). Every variant but Lie
// keeps the logs honest: the USDT Transfer logs describe exactly what moved.
// Lie is the one explicit variant where the node's logs and the ledger
// differ. A redirect the owner cannot pay reverts; a contradictory
// Execution panics.
//
// # Ground truth
//
// Wire, Queries, Accepted, Inclusions, Orphaned, Reorgs, Balance, Blocks,
// BlockTxids, Head, Solid, Pool, TxInfo, FaultsFired and Events tell the
// checkers what really happened: every broadcast with the answer the caller
// saw next to the node's own and the node it reached, every acceptance
// (including those hidden behind lies and lost answers), every canonical
// inclusion with its receipt, what really moved (Inclusion.Moved; Debited
// sums it per payer) and the execution chosen, every orphaned inclusion with
// its fate, and which faults and events actually fired. Inclusions, Blocks
// and Balance are the canonical chain's only. The chain's truth is one per
// network (a Node's accessors of it answer for the network); what a node saw
// and would say (Wire, Queries, Head, Solid, Pool, TxInfo, FaultsFired) is
// per node. The core never reads any of it.
package mocknode
