package postgres

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// lossyProxy is a TCP proxy between pgx and PostgreSQL that can lose the
// answer to one statement after the server has run it: the server commits,
// and the client hears its connection drop instead of the answer. That is
// the ambiguous commit a real network or a crashed pooler produces, and the
// one failure a store cannot report truthfully (its caller cannot tell it
// from a failure before the commit).
//
// It reads just enough of the protocol (version 3.0, in the clear: the
// pool's DSN must not ask for TLS) on the client's side to know which SQL
// each message runs: a simple Query ('Q') carries its text, and a Bind ('B')
// names a statement whose text an earlier Parse ('P') on the same
// connection carried (pgx prepares and caches statements, so a repeated
// statement travels as a Bind alone). pgx's tx.Commit is a simple Query
// "commit"; a statement outside a transaction (Claim) commits at its Sync.
//
// Every Sync, simple Query and the startup message is answered by exactly
// one ReadyForQuery ('Z'), so the answer to the k-th of them is everything
// the server sends after the (k-1)-th ReadyForQuery up to the k-th. When the
// armed statement goes through, the proxy swallows exactly that answer; at
// its ReadyForQuery the statement (and its commit) is done on the server,
// and only then does the proxy close both connections. So by the time the
// caller sees its error the effect is already durable: no sleep and no race
// decides the outcome.
type lossyProxy struct {
	ln     net.Listener
	dial   func() (net.Conn, error)
	wg     sync.WaitGroup
	mu     sync.Mutex
	armed  *answerTrap
	lost   []string // the SQL of each statement whose answer was lost, in order
	conns  []net.Conn
	failed error // a protocol the proxy cannot read: the test is void
}

// answerTrap is an armed proxy: the answer to the nth statement from now
// whose SQL matches is lost.
type answerTrap struct {
	match func(sql string) bool
	nth   int
}

// startLossyProxy listens on a free loopback port and forwards every
// connection to the PostgreSQL server at host:port (host may be a unix
// socket directory, as in a libpq DSN).
func startLossyProxy(t *testing.T, host string, port uint16) *lossyProxy {
	t.Helper()
	network, addr := "tcp", net.JoinHostPort(host, strconv.Itoa(int(port)))
	if strings.HasPrefix(host, "/") {
		network, addr = "unix", filepath.Join(host, ".s.PGSQL."+strconv.Itoa(int(port)))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: listen: %v", err)
	}
	p := &lossyProxy{ln: ln, dial: func() (net.Conn, error) { return net.Dial(network, addr) }}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		if err := p.err(); err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	return p
}

// lossyPool returns a pool like direct's (same database, same search_path)
// whose connections all go through a new lossyProxy.
func lossyPool(t *testing.T, direct *pgxpool.Pool) (*pgxpool.Pool, *lossyProxy) {
	t.Helper()
	cfg := direct.Config()
	p := startLossyProxy(t, cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	addr := p.ln.Addr().(*net.TCPAddr)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = addr.IP.String(), uint16(addr.Port)
	// sslmode=disable: the proxy reads the protocol, so it must be in the
	// clear; and no fallback may bypass the proxy.
	cfg.ConnConfig.TLSConfig, cfg.ConnConfig.Fallbacks = nil, nil
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("proxy: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool, p
}

// loseAnswer arms the proxy: the answer to the nth statement from now
// (counting from 1, on any connection) whose SQL match accepts is lost.
// Earlier matching statements go through untouched.
func (p *lossyProxy) loseAnswer(match func(sql string) bool, nth int) {
	if nth < 1 {
		panic(fmt.Sprintf("loseAnswer: nth %d, want 1 or more", nth))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = &answerTrap{match: match, nth: nth}
}

// lostAnswers is the SQL of every statement whose answer was lost so far.
// A lost answer is recorded before its caller's connection is closed, so a
// caller that has seen its error finds it here.
func (p *lossyProxy) lostAnswers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lost...)
}

func (p *lossyProxy) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// fire reports whether sql, about to be sent, is the statement whose answer
// the armed trap loses (and disarms it if so).
func (p *lossyProxy) fire(sql string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed == nil || !p.armed.match(sql) {
		return false
	}
	p.armed.nth--
	if p.armed.nth > 0 {
		return false
	}
	p.armed = nil
	return true
}

func (p *lossyProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // the listener is closed: the test is over
		}
		server, err := p.dial()
		if err != nil {
			p.fail(fmt.Errorf("dial PostgreSQL: %w", err))
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		c := &proxyConn{p: p, client: client, server: server}
		p.wg.Go(func() {
			if err := c.fromClient(); err != nil {
				p.fail(err)
			}
			c.closeBoth()
		})
		p.wg.Go(func() {
			c.fromServer()
			c.closeBoth()
		})
	}
}

func (p *lossyProxy) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		p.failed = err
	}
}

// proxyConn is one client connection and its server connection.
type proxyConn struct {
	p              *lossyProxy
	client, server net.Conn

	mu      sync.Mutex
	loseAt  int64  // the answer (counted by ReadyForQuery, from 1) to swallow; 0: none
	loseSQL string // the statement it answers
}

func (c *proxyConn) closeBoth() {
	c.client.Close()
	c.server.Close()
}

// Codes in a startup message's first field: protocol version 3.0, and a
// CancelRequest. An SSLRequest or GSSENCRequest carries another code there.
const (
	protocol30    = 3 << 16
	cancelRequest = 1234<<16 | 5678
)

// fromClient forwards the client's messages, noting which SQL each runs and
// arming the loss of the answer to the statement that fires the trap. The
// loss is armed before the message is forwarded, so the server cannot
// answer first. It returns an error only for a protocol it cannot read; a
// closed connection is the normal end.
func (c *proxyConn) fromClient() error {
	r := bufio.NewReader(c.client)
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 8 || n > 1<<16 {
		return fmt.Errorf("startup message of %d bytes", n)
	}
	startup := make([]byte, n)
	copy(startup, hdr[:])
	if _, err := io.ReadFull(r, startup[4:]); err != nil {
		return nil
	}
	switch code := binary.BigEndian.Uint32(startup[4:8]); code {
	case protocol30:
	case cancelRequest:
		// pgx cancels whatever a connection it gave up on was doing (here:
		// the one whose answer was lost, whose backend is gone). Nothing
		// follows on this connection and the server answers nothing.
		c.server.Write(startup)
		return nil
	default:
		return fmt.Errorf("startup code %d is not protocol 3.0: an SSL or GSS request? the proxied DSN must say sslmode=disable", code)
	}
	if _, err := c.server.Write(startup); err != nil {
		return nil
	}
	syncs := int64(1)               // answers asked for: the startup's is the first
	stmts := map[string]string{}    // prepared statement name -> SQL, this connection's
	lose := func(sql string) bool { // arms the loss of the answer to the next sync point
		if !c.p.fire(sql) {
			return false
		}
		c.mu.Lock()
		c.loseAt, c.loseSQL = syncs+1, sql
		c.mu.Unlock()
		return true
	}
	for {
		typ, msg, err := readMessage(r)
		if err != nil {
			return nil
		}
		switch typ {
		case 'P': // Parse: statement name, SQL, ...
			name, rest := cstring(msg[5:])
			sql, _ := cstring(rest)
			stmts[name] = sql
		case 'B': // Bind: portal name, statement name, ...; runs at Execute, commits (outside a transaction) at Sync
			_, rest := cstring(msg[5:])
			name, _ := cstring(rest)
			lose(stmts[name])
		case 'Q': // simple Query: SQL; answered by its own ReadyForQuery
			sql, _ := cstring(msg[5:])
			lose(sql)
			syncs++
		case 'S': // Sync
			syncs++
		}
		if _, err := c.server.Write(msg); err != nil {
			return nil
		}
	}
}

// fromServer forwards the server's messages, except the answer armed to be
// lost: that one it swallows to its ReadyForQuery, by which time the server
// has finished the statement, and then it records the loss and closes both
// connections.
func (c *proxyConn) fromServer() {
	r := bufio.NewReader(c.server)
	answer := int64(1)
	for {
		typ, msg, err := readMessage(r)
		if err != nil {
			return
		}
		c.mu.Lock()
		losing, sql := c.loseAt == answer, c.loseSQL
		c.mu.Unlock()
		if losing {
			if typ == 'Z' {
				c.p.mu.Lock()
				c.p.lost = append(c.p.lost, sql)
				c.p.mu.Unlock()
				return // the caller closes both: the client hears EOF
			}
			continue
		}
		if _, err := c.client.Write(msg); err != nil {
			return
		}
		if typ == 'Z' {
			answer++
		}
	}
}

// readMessage reads one typed message: its type and all of its bytes.
func readMessage(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > 1<<30 {
		return 0, nil, fmt.Errorf("message %q of length %d", hdr[0], n)
	}
	msg := make([]byte, 1+n)
	copy(msg, hdr[:])
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return 0, nil, err
	}
	return hdr[0], msg, nil
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (string, []byte) {
	i := 0
	for i < len(b) && b[i] != 0 {
		i++
	}
	if i == len(b) {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

// isCommit matches the statement pgx's tx.Commit sends.
func isCommit(sql string) bool { return strings.EqualFold(strings.TrimSpace(sql), "commit") }
