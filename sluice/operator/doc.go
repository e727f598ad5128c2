// Package operator is what a person running sluice does by hand: read the
// queue (operations in review, and parked ones), retry one, cancel one,
// resolve a review as paid, credit a customer's deposit and read an
// account.
//
// # Driving it
//
// Service is the Go API; the simulator's operator process and the HTTP
// handler (NewHandler) both call it. It is sequential and deterministic:
// the store, the TRON node, the hot wallet, a clock and the pipeline's
// configuration are injected, and it starts no goroutine and reads no real
// time. Every action lands as one sluice.Resolution event naming the
// operator and why (a credit, which has no operation, is idempotent by its
// ref instead). An action the chain or the row does not allow is refused
// with a *Refusal (errors.Is ErrRefused) saying why, and changes nothing.
//
// # The rules an operator cannot break
//
//   - Cancel releases the customer's hold, so it needs the same proof of
//     death as the pipeline's rebuild: the solid block is fetched BEFORE the
//     current txid is looked up (the order is the proof, see
//     sluice.Pipeline's observe), and the resulting sluice.Evidence, with the
//     configured safety margin, must Prove. Only an operation that never had
//     an envelope (requested, validated) needs none. A txid the chain shows
//     included with a SUCCESS receipt can never be cancelled: tokens may have
//     moved.
//   - A non-terminal operation with an envelope is cancelled only while it
//     is parked (no worker holds it, none may claim it before its backoff
//     ends), and only if its row is unchanged (state, fencing token, txid)
//     between the first read and the last. A worker that rebuilt it in
//     between would have made the proof stale. The write itself names the
//     txid proven dead (Resolution.Txid), and the stores refuse a
//     resolution whose txid is not the row's current one, so a rebuild
//     after the last read is refused in the write's own atomic step.
//   - Resolve-as-paid settles a review with the txid that paid: the
//     operation's own current txid (a retired one is refused with the
//     reason: it was proven dead when it was retired; any other txid,
//     even one that paid the same amount to the same recipient for another
//     withdrawal, is not this operation's), included in a solid block with
//     a SUCCESS receipt and exactly the Transfer log the request asked for
//     (sluice.TransferMismatch).
//   - Retry hands a non-terminal operation back to the workers now (its
//     park ended, the current lease fenced). Review is final for the
//     automation: it is cancelled or resolved, never retried.
package operator
