// Package nodehttp carries the tron.Node interface over HTTP: a Server that
// exposes any tron.Node (in practice the mock node of package mocknode, in
// one process) and a Client that implements tron.Node against it, so that
// several worker processes can share one chain over loopback.
//
// # Endpoints
//
// Every call is a POST with a JSON body (possibly empty) and a JSON answer,
// modelled on java-tron's HTTP API:
//
//	POST /wallet/broadcasttransaction         {"transaction"}         -> {"code", "message"}
//	POST /wallet/gettransactioninfobyid       {"txid"}                -> TxInfo
//	POST /wallet/getnowblock                                          -> Block (head)
//	POST /walletsolidity/getnowblock                                  -> Block (solid head)
//	GET  /mock/truth                                                  -> Truth (only with Server.Truth)
//	GET  /healthz
//
// The bodies' fields, their units and encodings are the contract in the
// README's table ("The mock node's API"); the simulator's wire world reads
// every body with a reader of its own against it, since this package's
// client and server would agree on any encoding they share. Within this
// package, TestBodiesByTheBytes pins one body of each kind in
// testdata/bodies.txt, read against that table, and holds the client to
// reading each pinned answer back.
//
// The header X-Node-Caller names the caller (a worker id); the server hands
// it to Server.Node so that the node can record calls under that name.
//
// # Errors
//
// A request that gets no answer in time (the client's per-call Timeout, or
// the caller's context deadline), and a 504 from the server, come back as
// errors wrapping tron.ErrTimeout. Any other transport failure, a non-200
// status or an undecodable answer is a plain error naming the endpoint. As
// tron.Node says, no error is proof of anything: a broadcast whose answer
// was lost may still have reached the node.
//
// # What it is not
//
// The server injects no faults and adds no state of its own; the mock's
// fault injection stays in mocknode and is not reachable over HTTP. The
// ground-truth endpoint (/mock/truth) exists only when Server.Truth is set:
// it is for the live checker, never for workers, and it reveals everything
// the node knows, so the server should listen on loopback only.
//
// Handlers are safe for concurrent use exactly as far as the tron.Node
// values Server.Node returns are: wrap a single-threaded node in a lock.
package nodehttp
