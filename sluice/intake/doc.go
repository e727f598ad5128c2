// Package intake is gate 1 against double spending: it turns a client's
// withdrawal request into exactly one operation row, however often and
// however concurrently the request arrives.
//
// # Client-minted ids
//
// The client chooses the operation id (a UUID) before its first attempt and
// sends the same id on every retry. The id is the primary key, so the
// store's atomic Insert collapses any number of identical submissions, even
// simultaneous ones, into one row, and exactly one caller is told it created
// it. A server-minted id could not do this: a client whose POST timed out
// would not know whether an id had been minted, and its retry would create a
// second withdrawal.
//
// # Semantic request hash
//
// A retry must be told apart from a client bug that reuses an id for a
// different withdrawal. Each row stores a hash of its normalized request
// (id, customer, base58 address, amount in base units, asset); a
// submission under a used id with an equal hash is a replay (200,
// X-Idempotent-Replay: true, the row's current state), with a different
// hash a conflict (409, sluice.ErrPayloadMismatch, the original
// untouched): the same id sent for another customer is a conflict too. The hash is over the
// normalized values, not the bytes sent, so "1.5" and "1.50", key order and
// whitespace do not turn an honest retry through a re-serializing client
// library into a spurious 409. See RequestHash.
//
// # Whose money
//
// Every withdrawal names the customer whose balance pays for it (the
// required field "customer", a sluice.CustomerID). The store's Insert moves
// the amount from that balance to a hold in the same atomic step as it
// creates the row; a balance that falls short creates nothing and is
// answered 402 with code "insufficient_funds", after which the same
// request (same operation id) may be sent again once the customer is
// funded.
//
// # Refusing at the door
//
// Normalize validates everything before the store is touched: a refused
// request leaves no row. Amounts must be JSON strings parsed exactly by
// package money; a JSON number is refused outright, because it may already
// have been rounded through a float on the client's side.
//
// # Driving it
//
// Service is the transport-free core (Submit, Lookup) and is what the
// simulator calls. NewHandler wraps it in the HTTP API; it is the package's
// only contact with real concurrency (net/http's goroutines). The package
// starts no goroutines, reads no clock and draws no randomness: timestamps
// come from the store.
package intake
