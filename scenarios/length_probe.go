package scenarios

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// A hostile client first sends a lie about its length: a short body under
// a Content-Length of 2^62 bytes, its connection closed after the body's
// last byte, as net/http's server hands such a request to a handler (the
// body reader ends in io.ErrUnexpectedEOF). The API must read what came,
// answer 400 naming the body, and create nothing. A handler that sizes a
// buffer from the declared length before reading is a process one request
// kills: at a terabyte the allocation is fatal (out of memory, not a
// panic); at 2^62 it is past any allocation, a panic the panic invariant
// reports (independent bug 110).
//
// The probe goes straight to the intake handler, in the client's own
// process: no server process is spawned, no tape choice drawn, and a
// request refused before its body is decoded reaches no store call, so it
// meets no yield point and no schedule moves.
const declaredLength = 1 << 62

// truncatedBody is a body whose connection closed early: its bytes, then
// io.ErrUnexpectedEOF.
type truncatedBody struct{ bytes.Reader }

func (b *truncatedBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (*truncatedBody) Close() error { return nil }

// probeLength sends the lie for the client's operation id and holds the
// answer to a 400 on the body.
func (c *postClient) probeLength() {
	w := c.w
	body := []byte(`{"operation_id":"` + c.post.id + `"`)
	var in inbound
	req := in.build(w.ctx, http.MethodPost, "/v1/withdrawals", body, "application/json")
	tb := &truncatedBody{}
	tb.Reset(body)
	req.Body, req.ContentLength = tb, declaredLength
	var rec recorder
	rec.reset()
	w.handler.ServeHTTP(&rec, req)
	if rec.code != http.StatusBadRequest || !bytes.Contains(rec.body, []byte(`"field":"body"`)) {
		panic(fmt.Sprintf("client %s: a POST of %d bytes under Content-Length %d, cut short, answered %d %.200q; want 400 naming the body (nothing read can be trusted, nothing created)",
			c.name, len(body), int64(declaredLength), rec.code, rec.body))
	}
	w.tally["client-length-lie"]++
}
