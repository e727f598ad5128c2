// Package mockwallet holds the mock chain's hot wallet and the key that
// signs for it: fixtures of the mock node `sluice serve` runs, not secrets.
// They live here, not in cmd/sluice, because the live check needs the key
// too: it plays a second system on the same wallet (a leaked key), paying
// from it outside sluice so that the audit has a stray to find.
package mockwallet
