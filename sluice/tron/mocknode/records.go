package mocknode

import "fmt"

// chunked is a list kept in chunks of per entries. The network's records
// (calls, blocks, inclusions) only grow, by one entry per call or block,
// for the whole run; a plain slice copies everything it holds at each
// doubling, which made the query record alone a tenth of a world's
// allocated bytes. A chunked list never moves what it holds.
//
// Invariant: every chunk but the last is full, and n counts the entries.
type chunked[T any] struct {
	per    int // entries per chunk; set once, before the first push
	chunks [][]T
	n      int
}

// newChunked returns an empty list of chunks of per entries. Callers pick
// per for chunks of some 8 to 16 KiB: small enough that a short run does not
// pay for a long one, big enough that the list of chunks stays short.
func newChunked[T any](per int) chunked[T] {
	if per < 1 {
		panic(fmt.Sprintf("mocknode: chunked list of %d entries per chunk", per))
	}
	return chunked[T]{per: per}
}

func (c *chunked[T]) len() int { return c.n }

// at is entry i, which must exist; the pointer stays valid until the entry
// is truncated away.
func (c *chunked[T]) at(i int) *T { return &c.chunks[i/c.per][i%c.per] }

// last is the newest entry; the list must not be empty.
func (c *chunked[T]) last() *T { return c.at(c.n - 1) }

func (c *chunked[T]) push(v T) {
	if c.n%c.per == 0 {
		if k := c.n / c.per; k < len(c.chunks) {
			// A chunk a truncate emptied: reuse it.
			c.chunks[k] = c.chunks[k][:0]
		} else {
			c.chunks = append(c.chunks, make([]T, 0, c.per))
		}
	}
	k := c.n / c.per
	c.chunks[k] = append(c.chunks[k], v)
	c.n++
}

// truncate drops every entry from n on. The dropped entries are zeroed, so
// the list holds on to nothing they referenced.
func (c *chunked[T]) truncate(n int) {
	for c.n > n {
		k := (c.n - 1) / c.per
		from := max(n, k*c.per) - k*c.per
		clear(c.chunks[k][from:])
		c.chunks[k] = c.chunks[k][:from]
		c.n = k*c.per + from
	}
}

// appendTo appends entries [from, len) to out, in order.
func (c *chunked[T]) appendTo(out []T, from int) []T {
	for i := from; i < c.n; {
		k, off := i/c.per, i%c.per
		out = append(out, c.chunks[k][off:]...)
		i = (k + 1) * c.per
	}
	return out
}

// chunksOf returns an empty list of chunks of per entries on the chunks in
// *from (taking them: *from is left nil), if they are chunks of per.
func chunksOf[T any](per int, from *[][]T) chunked[T] {
	c := newChunked[T](per)
	if held := *from; len(held) > 0 && cap(held[0]) == per {
		// Every chunk is empty (giveChunks truncated them), so push
		// takes them in order, as after a truncate.
		c.chunks = held
	}
	*from = nil
	return c
}

// giveChunks empties c, zeroing its entries so that the chunks hold on to
// nothing they referenced, and moves its chunks to *to.
func giveChunks[T any](c *chunked[T], to *[][]T) {
	c.truncate(0)
	*to, c.chunks = c.chunks, nil
}
