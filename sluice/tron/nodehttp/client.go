package nodehttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sluicesim/sluice/tron"
)

// DefaultTimeout bounds one node call when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Options configure a Client.
type Options struct {
	// Caller is sent as X-Node-Caller on every call (a worker id).
	Caller string
	// Timeout bounds each call, on top of the caller's context; zero is
	// DefaultTimeout.
	Timeout time.Duration
	// HTTPClient is the transport; nil is a client of its own with
	// keep-alives.
	HTTPClient *http.Client
}

// Client is a tron.Node reached over HTTP. It is safe for concurrent use.
type Client struct {
	base    string
	caller  string
	timeout time.Duration
	hc      *http.Client
}

var _ tron.Node = (*Client)(nil)

// NewClient returns a client of the node API at baseURL (http or https,
// no query or fragment).
func NewClient(baseURL string, opt Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		// url.Error quotes the whole URL, password included: keep its
		// reason only.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, fmt.Errorf("nodehttp: node url %q: %w", RedactURL(baseURL), err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("nodehttp: node url %q: want http(s)://host[:port][/path]", u.Redacted())
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), caller: opt.Caller, timeout: opt.Timeout, hc: opt.HTTPClient}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.hc == nil {
		c.hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Transport: &http.Transport{
			Proxy:               nil, // a node on loopback is never reached through a proxy
			DialContext:         (&net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return c, nil
}

// RedactURL is a node's URL as it may be shown (logs, reports, errors): a
// node behind basic auth is reached at http://user:password@host, and the
// password reads xxxxx, as url.URL.Redacted writes it, even in a URL that
// does not parse (whose error is shown to the person who typed it, and
// logged).
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if _, ok := u.User.Password(); !ok {
			return raw // nothing to hide: shown as typed
		}
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	// The userinfo ends at the last '@' before any query or fragment. A
	// password typed with a raw '/' is why this does not stop at the
	// first '/' (the URL does not parse then); a path holding an '@' is
	// hidden too, which only costs the display of a URL that is wrong.
	end := len(rest)
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	user, _, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return raw
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// Broadcast sends a signed transaction.
func (c *Client) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	var ans broadcastAnswer
	if err := c.call(ctx, PathBroadcast, broadcastRequest{Transaction: encodeTx(tx)}, &ans); err != nil {
		return tron.BroadcastResult{}, fmt.Errorf("broadcast %s: %w", tx.Txid().Short(), err)
	}
	if ans.Code == "" {
		return tron.BroadcastResult{}, fmt.Errorf("broadcast %s: nodehttp: answer without a code", tx.Txid().Short())
	}
	return tron.BroadcastResult(ans), nil
}

// Lookup asks about a txid.
func (c *Client) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	var ans txInfoJSON
	if err := c.call(ctx, PathLookup, lookupRequest{Txid: id}, &ans); err != nil {
		return tron.TxInfo{}, fmt.Errorf("lookup %s: %w", id.Short(), err)
	}
	info, err := ans.decode()
	if err != nil {
		return tron.TxInfo{}, fmt.Errorf("lookup %s: nodehttp: answer: %w", id.Short(), err)
	}
	if info.Txid != id {
		return tron.TxInfo{}, fmt.Errorf("lookup %s: nodehttp: answer is about txid %s", id.Short(), info.Txid.Short())
	}
	return info, nil
}

// HeadBlock is the newest block.
func (c *Client) HeadBlock(ctx context.Context) (tron.Block, error) {
	return c.block(ctx, PathHead, "head block")
}

// SolidBlock is the newest irreversible block.
func (c *Client) SolidBlock(ctx context.Context) (tron.Block, error) {
	return c.block(ctx, PathSolid, "solid block")
}

func (c *Client) block(ctx context.Context, path, what string) (tron.Block, error) {
	var ans blockJSON
	if err := c.call(ctx, path, struct{}{}, &ans); err != nil {
		return tron.Block{}, fmt.Errorf("%s: %w", what, err)
	}
	b, err := ans.decode()
	if err != nil {
		return tron.Block{}, fmt.Errorf("%s: nodehttp: answer: %w", what, err)
	}
	return b, nil
}

// Truth fetches the mock's ground truth (GET /mock/truth), for checkers.
func (c *Client) Truth(ctx context.Context) (Truth, error) {
	var ans truthJSON
	if err := c.do(ctx, http.MethodGet, PathTruth, nil, &ans, 64<<20); err != nil {
		return Truth{}, fmt.Errorf("truth: %w", err)
	}
	t, err := ans.decode()
	if err != nil {
		return Truth{}, fmt.Errorf("truth: nodehttp: answer: %w", err)
	}
	return t, nil
}

func (c *Client) call(ctx context.Context, path string, req, ans any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("nodehttp: encoding the request: %w", err)
	}
	return c.do(ctx, http.MethodPost, path, body, ans, bodyMax)
}

// do makes one request under the call timeout and decodes a 200 answer into
// ans. Errors say which endpoint failed and how; a timeout wraps
// tron.ErrTimeout.
func (c *Client) do(ctx context.Context, method, path string, body []byte, ans any, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("nodehttp: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.caller != "" {
		req.Header.Set(HeaderCaller, c.caller)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return transportError(ctx, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return transportError(ctx, method, path, err)
	}
	if int64(len(raw)) > limit {
		return fmt.Errorf("nodehttp: %s %s: answer exceeds %d bytes", method, path, limit)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorAnswer
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if resp.StatusCode == http.StatusGatewayTimeout {
			return fmt.Errorf("nodehttp: %s %s: %s: %s: %w", method, path, resp.Status, msg, tron.ErrTimeout)
		}
		return fmt.Errorf("nodehttp: %s %s: %s: %s", method, path, resp.Status, msg)
	}
	if err := json.Unmarshal(raw, ans); err != nil {
		return fmt.Errorf("nodehttp: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// transportError wraps a failed round trip; a deadline (ours or the
// caller's) is a timeout: the node may or may not have acted.
func transportError(ctx context.Context, method, path string, err error) error {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("nodehttp: %s %s: %v: %w", method, path, err, tron.ErrTimeout)
	}
	return fmt.Errorf("nodehttp: %s %s: %w", method, path, err)
}
