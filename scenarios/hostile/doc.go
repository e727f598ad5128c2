// Package hostile generates the requests a careless or hostile client
// sends to the intake API: operation ids in other letter cases or wrapped
// in whitespace, addresses of every prefix byte and length with good and
// bad checksums, amounts with signs, exponents and too many decimals,
// customer ids missing, too long, of the wrong type or with bytes outside
// their alphabet (and another funded customer under a used id), bodies
// around the size limit, JSON with unknown or duplicate keys, wrong media
// types. Each request starts from a valid submission and spoils (or merely
// re-spells, or re-addresses) it one way.
//
// The generator does not say which requests are valid: the model's
// reference reading decides that (model.ReadPost, model.ReadIntent), so a
// generator that mislabelled a case could not hide an intake bug. It
// imports nothing from the intake it attacks.
//
// The worlds' clients draw from it (Config.HostileEvery); the fuzz target
// model.FuzzPostAgainstReference starts from its Corpus; the README lists
// its Categories.
package hostile
