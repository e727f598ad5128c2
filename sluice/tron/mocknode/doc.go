// Package mocknode is a TRON full node with a USDT ledger that lies on
// schedule. It keeps every property sluice's safety argument rests on
// (design/TRON.md) and fails only in ways a real node or network can.
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
//   - Lookup by txid (unknown, pending, included with receipt, logs and
//     solidity), head and solid block.
//
// # What it leaves out on purpose
//
// Protobuf (raw data is serialized canonically by package tron; only the
// determinism of the txid matters), energy, bandwidth and fees (so no
// BANDWITH_ERROR or CONTRACT_EXE_ERROR), peers and relaying (their failure is
// a fault), TRX, tokens other than USDT, and reorgs: blocks never change
// once produced. A reorg would only put unsolid transactions back into the
// pool; sluice never treats an unsolid block as final, which the solid lag
// already exercises.
//
// # Driving it
//
// The node runs under an injected Clock and never reads the real one, starts
// no goroutine and draws no random number: the same calls at the same clock
// readings give the same results, byte for byte. The clock must not run
// backwards. Context arguments are ignored (their deadlines run on the real
// clock); timeouts are faults.
//
// Workers talk to the node only through Client(worker), a tron.Node whose
// calls are recorded under the worker's name.
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
//
// Chain and pool events are methods: Restart (pending pool lost), Evict (one
// pending transaction dropped), SetOutcome (a failure receipt on inclusion),
// SkipSlots (missed slots).
//
// # Ground truth
//
// Wire, Queries, Accepted, Inclusions, Balance, Blocks, BlockTxids, Head,
// Solid, Pool, TxInfo, FaultsFired and Events tell the checkers what really
// happened: every broadcast with the answer the caller saw next to the node's
// own, every acceptance (including those hidden behind lies and lost
// answers), every inclusion with its receipt and decoded Transfer log, and
// which faults and events actually fired. The core never reads them.
package mocknode
