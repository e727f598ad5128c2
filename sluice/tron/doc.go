// Package tron is what sluice knows of the TRON chain: base58check
// addresses, USDT-TRC20 transfer transactions and their txids, the signer
// boundary (a key never leaves it), and the Node interface a worker talks to
// (broadcast, lookup by txid, head and solid blocks) with the answer codes
// a real node gives. mocknode implements Node for the simulator; nodehttp
// talks to a real node's HTTP API.
package tron
